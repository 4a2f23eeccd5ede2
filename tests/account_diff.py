"""`claimcheck account --json` against what transformers and peft build (issue 12).

Every shipped config (reference/data/configs, tests/data/configs) and a few random valid configs per family (fixed
seed) are built with transformers on PyTorch's meta device (no memory), LoRA is placed with peft's get_peft_model,
and these are compared with account's figures:
  params            sum of the model's parameters
  params_active     the same less the experts a token is not routed to (MoE: (E - top_k) experts per sparse layer)
  lora.trainable    peft's trainable parameters for the r and target_modules given to both
  kv bytes/token    2 x layers x k_proj.out_features x 2 bytes (bf16), from the built attention
Exit 0 when all agree, 1 with each mismatching config printed, 77 (with the reason) where transformers or peft
is not importable.
"""
import argparse
import concurrent.futures
import copy
import glob
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import warnings

p = argparse.ArgumentParser()
p.add_argument("--claimcheck", required=True)
p.add_argument("--root", required=True)
p.add_argument("--random", type=int, default=6, help="random configs per family (default 6)")
p.add_argument("--seed", type=int, default=20260929)
a = p.parse_args()
t0 = time.time()

try:
    import torch
    import transformers
    import peft
    from transformers import AutoConfig, AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model
except Exception as e:  # noqa: BLE001 - any import failure means: cannot compare here
    print(f"SKIP: transformers and peft are not importable by {sys.executable} ({type(e).__name__}: {e}); "
          "ci/setup-python.sh installs them beside the pinned torch")
    sys.exit(77)
warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

FAMILIES = ["llama", "mistral", "qwen2", "qwen3", "gemma", "mixtral", "qwen2_moe"]
# num_key_value_heads when the key is absent (transformers' class defaults; None -> num_attention_heads)
KV_ABSENT = {"llama": None, "mistral": 8, "qwen2": 32, "qwen3": 32, "gemma": 16, "mixtral": 8, "qwen2_moe": 16}
DENSE_NAMES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "self_attn.q_proj",
               "mlp.down_proj", "lm_head", "embed_tokens", "layers.0.self_attn.v_proj"]
MOE_NAMES = {"mixtral": ["q_proj", "k_proj", "v_proj", "o_proj", "gate", "self_attn.o_proj", "lm_head",
                         "embed_tokens", "layers.0.self_attn.k_proj"],
             "qwen2_moe": ["q_proj", "k_proj", "v_proj", "o_proj", "gate", "shared_expert_gate", "gate_proj",
                           "shared_expert.up_proj", "down_proj", "lm_head", "layers.1.self_attn.q_proj"]}


def random_config(rng, fam):
    heads = rng.choice([1, 2, 4, 8, 16, 32])
    head_dim = rng.choice([4, 8, 16])
    d = {"model_type": fam, "vocab_size": rng.randint(50, 700), "num_hidden_layers": rng.randint(1, 3),
         "num_attention_heads": heads, "intermediate_size": rng.randint(4, 96)}
    # hidden: heads x head_dim, or (not for Llama, which refuses it) anything with an explicit head_dim
    if fam != "llama" and rng.random() < 0.3:
        d["hidden_size"] = rng.randint(heads, 200)
        d["head_dim"] = head_dim
    else:
        d["hidden_size"] = heads * head_dim
        if rng.random() < 0.5:
            d["head_dim"] = rng.choice([head_dim, 2 * head_dim])
    if fam == "qwen3" and "head_dim" not in d and rng.random() < 0.7:
        d["head_dim"] = head_dim  # absent means 128 there: kept sometimes, small mostly
    if fam == "gemma" and "head_dim" not in d and rng.random() < 0.7:
        d["head_dim"] = head_dim
    divisors = [k for k in range(1, heads + 1) if heads % k == 0]
    absent = KV_ABSENT[fam]
    if rng.random() < 0.7 or (absent is not None and heads % absent != 0):
        d["num_key_value_heads"] = rng.choice(divisors)
    for key in ("attention_bias", "mlp_bias", "tie_word_embeddings", "qkv_bias"):
        if rng.random() < 0.4:
            d[key] = rng.random() < 0.5
    if rng.random() < 0.3:
        d["hidden_act"] = rng.choice(["silu", "gelu", "relu", "gelu_pytorch_tanh"])
    for key, v in (("rope_theta", 10000.0), ("rms_norm_eps", 1e-6), ("torch_dtype", "bfloat16"), ("sliding_window", 64)):
        if rng.random() < 0.3:
            d[key] = v
    if fam == "mixtral":
        d["num_local_experts"] = rng.randint(1, 6)
        d["num_experts_per_tok"] = rng.randint(1, d["num_local_experts"])
    if fam == "qwen2_moe":
        d["num_experts"] = rng.randint(1, 6)
        d["num_experts_per_tok"] = rng.randint(1, d["num_experts"])
        d["moe_intermediate_size"] = rng.randint(4, 48)
        d["shared_expert_intermediate_size"] = rng.randint(0, 48)
        if rng.random() < 0.5:
            d["decoder_sparse_step"] = rng.randint(1, 2)
        if rng.random() < 0.5:
            d["mlp_only_layers"] = rng.sample(range(d["num_hidden_layers"]), rng.randint(0, d["num_hidden_layers"]))
    return d


def random_targets(rng, fam):
    x = rng.random()
    if x < 0.25:
        return "all-linear"
    if x < 0.35:
        return r".*\.(q|v)_proj"
    names = MOE_NAMES.get(fam, DENSE_NAMES)
    picked = rng.sample(names, rng.randint(1, 4))
    if rng.random() < 0.3:
        picked.append(picked[0])  # a duplicate counts once
    return ",".join(picked)


def peft_targets(spelling):
    if spelling == "all-linear" or any(ch in spelling for ch in "*+?()[]{}|^$\\"):
        return spelling
    return spelling.split(",")


def transformers_figures(d, r, spelling):
    kw = {k: v for k, v in d.items() if k != "model_type" and not k.startswith("_")}
    cfg = AutoConfig.for_model(d["model_type"], **kw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    params = sum(x.numel() for x in model.parameters())
    inactive = 0
    for layer in model.model.layers:
        experts = getattr(layer.mlp, "experts", None)
        if experts is not None:
            e = cfg.num_local_experts if hasattr(cfg, "num_local_experts") else cfg.num_experts
            inactive += sum(x.numel() for x in experts.parameters()) // e * (e - cfg.num_experts_per_tok)
    layers = model.model.layers
    kv = sum(2 * l.self_attn.k_proj.out_features * 2 for l in layers)
    with torch.device("meta"):  # the adapters on the meta device too: no memory, no initialisation time
        pm = get_peft_model(model, LoraConfig(r=r, target_modules=peft_targets(spelling)), low_cpu_mem_usage=True)
    lora = sum(x.numel() for x in pm.parameters() if x.requires_grad)
    return {"params": params, "params_active": params - inactive, "lora": lora, "kv": kv}


def account(path, r, spelling):
    res = subprocess.run([a.claimcheck, "account", "--config", path, "--json", "--lora-r", str(r),
                          "--lora-targets", spelling, "--root", a.root], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        return {"error": res.stderr.strip()}
    j = json.loads(res.stdout)
    return {"params": j["params"], "params_active": j["params_active"], "lora": j["lora"]["trainable"],
            "kv": j["kv_cache_bytes_per_token"]}


rng = random.Random(a.seed)
cases = []  # (label, config dict, path, r, targets)
for path in sorted(glob.glob(os.path.join(a.root, "reference", "data", "configs", "*.json")) +
                   glob.glob(os.path.join(a.root, "tests", "data", "configs", "*.json"))):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    for r, spelling in ((16, "all-linear"), (rng.choice([1, 4, 8, 64]), random_targets(rng, d["model_type"]))):
        cases.append((os.path.relpath(path, a.root), d, path, r, spelling))
tmp = tempfile.mkdtemp(prefix="cc_account_diff_")
for fam in FAMILIES:
    for i in range(a.random):
        d = random_config(rng, fam)
        path = os.path.join(tmp, f"{fam}-{i}.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(d, f)
        cases.append((f"random {fam} #{i}", d, path, rng.choice([1, 2, 8, 16]), random_targets(rng, fam)))

mismatches = []
with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
    ours = [pool.submit(account, path, r, spelling) for _, _, path, r, spelling in cases]
    for (label, d, path, r, spelling), fut in zip(cases, ours):
        try:
            theirs = transformers_figures(d, r, spelling)
        except Exception as e:  # noqa: BLE001 - a config transformers refuses must be refused by account too
            theirs = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"}
        mine = fut.result()
        if ("error" in theirs) != ("error" in mine) or ("error" not in mine and mine != theirs):
            mismatches.append((label, d, r, spelling, mine, theirs))

for label, d, r, spelling, mine, theirs in sorted(mismatches, key=lambda m: len(json.dumps(m[1]))):
    print(f"MISMATCH {label}: r={r} targets={spelling}\n  account:      {mine}\n  transformers: {theirs}\n"
          f"  config: {json.dumps({k: v for k, v in d.items() if not k.startswith('_')}, sort_keys=True)}")
print(f"transformers {transformers.__version__}, peft {peft.__version__}, torch {torch.__version__}: "
      f"{len(cases)} configs in {time.time() - t0:.1f} s")
print(f"{len(cases) - len(mismatches)} passed, {len(mismatches)} failed")
sys.exit(1 if mismatches else 0)
