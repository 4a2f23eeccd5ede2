"""`claimcheck account --json` against what transformers and peft build (issue 12).

Every shipped config (reference/data/configs, tests/data/configs) and 200 random configs per family (fixed seed;
valid but for about one in twenty, invalid on purpose: a null, a wrong type, a padding index past the vocabulary) are
built with transformers on PyTorch's meta device (no memory), LoRA is placed with peft's get_peft_model, and these
are compared with account's figures:
  params            sum of the model's parameters
  params_active     the same less the experts a token is not routed to (MoE: (E - top_k) experts per sparse layer)
  lora.trainable    peft's trainable parameters for the r and target_modules given to both
  kv bytes/token    2 x layers x (key width: k_proj.out_features, or Phi-3's share of qkv_proj) x 2 bytes (bf16)
A config transformers or peft refuses must be refused by account (one line, non-zero exit), and the reverse.
Exit 0 when all agree, 1 with each mismatch printed, and for each kind of mismatch (family, figures that differ)
the smallest config that still shows it (shrunk for 60 s at most: fewer layers, heads, experts, smaller dimensions,
fewer targets, keys dropped), 77 (with the reason) where transformers or peft is not importable. The configs are
spread over --jobs processes (default: the CPUs): about 120 s of CPU time in all, about 65 s on two idle cores.
"""
import argparse
import atexit
import concurrent.futures
import glob
import json
import multiprocessing
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "reference", "python"))
from hf_reference import routed_away_params  # noqa: E402  (the answer key's count of experts a token skips)

p = argparse.ArgumentParser()
p.add_argument("--claimcheck", required=True)
p.add_argument("--root", required=True)
p.add_argument("--random", type=int, default=200, help="random configs per family (default 200; make test's sample: 10)")
p.add_argument("--seed", type=int, default=20260929)
p.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else
               os.cpu_count() or 1, help="worker processes (default: the CPUs this process may use)")
a = p.parse_args()
t0 = time.time()

torch = transformers = peft = AutoConfig = AutoModelForCausalLM = LoraConfig = get_peft_model = None


def import_hf():
    """Imports torch, transformers and peft (about ten seconds); exits 77 where they are not importable."""
    global torch, transformers, peft, AutoConfig, AutoModelForCausalLM, LoraConfig, get_peft_model
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
    torch.set_num_threads(1)  # one per worker: the models live on the meta device, nothing is computed

FAMILIES = ["llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "phi3", "olmo", "starcoder2", "mixtral",
            "qwen2_moe"]
# num_key_value_heads when the key is absent (transformers' class defaults; None -> num_attention_heads)
KV_ABSENT = {"llama": None, "mistral": 8, "qwen2": 32, "qwen3": 32, "gemma": 16, "gemma2": 4, "phi3": None,
             "olmo": None, "starcoder2": 2, "mixtral": 8, "qwen2_moe": 16}
# head_dim when absent, where it is not hidden_size // num_attention_heads
HEAD_DIM_ABSENT = {"qwen3": 128, "gemma": 256, "gemma2": 256}
# The config classes that refuse hidden_size % num_attention_heads != 0 (validate_architecture).
HIDDEN_DIVISIBLE = {"llama", "gemma2"}
DENSE_NAMES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "self_attn.q_proj",
               "mlp.down_proj", "lm_head", "embed_tokens", "layers.0.self_attn.v_proj"]
# The Llama-style MLP names and Mixtral's old w1 / w2 / w3 are among them: in transformers 5 the experts are fused
# tensors, not Linear modules, so peft adapts only what the names find besides (issue 24).
NAMES = {"mixtral": ["q_proj", "k_proj", "v_proj", "o_proj", "gate", "self_attn.o_proj", "lm_head",
                     "embed_tokens", "layers.0.self_attn.k_proj", "gate_proj", "up_proj", "down_proj", "w1", "w2",
                     "w3"],
         "qwen2_moe": ["q_proj", "k_proj", "v_proj", "o_proj", "gate", "shared_expert_gate", "gate_proj",
                       "shared_expert.up_proj", "down_proj", "lm_head", "layers.1.self_attn.q_proj", "up_proj",
                       "experts.0.gate_proj"],
         # Phi-3's fused modules; q_proj matches nothing there (peft skips it beside a name that matches)
         "phi3": ["qkv_proj", "o_proj", "gate_up_proj", "down_proj", "self_attn.qkv_proj", "mlp.gate_up_proj",
                  "q_proj", "lm_head", "embed_tokens", "layers.0.self_attn.qkv_proj", "layers.1.mlp.down_proj"],
         "starcoder2": ["q_proj", "k_proj", "v_proj", "o_proj", "c_fc", "c_proj", "mlp.c_fc", "self_attn.o_proj",
                        "lm_head", "embed_tokens", "layers.0.mlp.c_proj", "gate_proj", "up_proj", "down_proj"]}
# Modules peft refuses by name (norms): picked now and then, both sides must refuse.
NORMS = {"gemma2": ["pre_feedforward_layernorm", "post_feedforward_layernorm"], "starcoder2": ["input_layernorm"],
         "olmo": ["post_attention_layernorm"], "phi3": ["input_layernorm"]}
REGEXES = [r".*\.(q|v)_proj", r".*\.(qkv_proj|c_fc|gate_up_proj|down_proj)"]


def random_config(rng, fam):
    heads = rng.choice([1, 2, 4, 8, 16, 32])
    # now and then an odd head: transformers 5 refuses a fully rotated one wider than 4 (validate_rope)
    head_dim = rng.choice([4, 8, 16]) if rng.random() < 0.85 else rng.choice([3, 5, 7])
    d = {"model_type": fam, "vocab_size": rng.randint(50, 700), "num_hidden_layers": rng.randint(1, 3),
         "num_attention_heads": heads, "intermediate_size": rng.randint(4, 96)}
    # hidden: heads x head_dim, or (not for Llama and Gemma2, which refuse it) anything with an explicit head_dim
    if fam not in HIDDEN_DIVISIBLE and rng.random() < 0.3:
        d["hidden_size"] = rng.randint(heads, 200)
        d["head_dim"] = head_dim
    else:
        d["hidden_size"] = heads * head_dim
        if rng.random() < 0.5:
            d["head_dim"] = rng.choice([head_dim, 2 * head_dim])
    if fam in HEAD_DIM_ABSENT and "head_dim" not in d and rng.random() < 0.7:
        d["head_dim"] = head_dim  # absent means 128 or 256 there: kept sometimes, small mostly
    divisors = [k for k in range(1, heads + 1) if heads % k == 0]
    absent = KV_ABSENT[fam]
    if rng.random() < 0.7 or (absent is not None and heads % absent != 0):
        d["num_key_value_heads"] = rng.choice(divisors)
    for key in ("attention_bias", "mlp_bias", "tie_word_embeddings", "qkv_bias", "use_bias"):
        if rng.random() < 0.4:
            d[key] = rng.random() < 0.5
    acts = ["silu", "gelu", "relu", "gelu_pytorch_tanh"]
    if rng.random() < 0.3:
        d["hidden_act"] = rng.choice(acts)
    if rng.random() < 0.1:  # a partly rotated head: an odd one is taken then
        d["partial_rotary_factor"] = rng.choice([0.5, 1.0])
    for key, v in (("rope_theta", 10000.0), ("rms_norm_eps", 1e-6), ("torch_dtype", "bfloat16"), ("sliding_window", 64)):
        if rng.random() < 0.3:
            d[key] = v
    # nn.Embedding's padding_idx: Phi-3's default (32000) lies past these vocabularies, so it is mostly given there
    if rng.random() < (0.9 if fam == "phi3" else 0.1):
        d["pad_token_id"] = rng.randint(-d["vocab_size"], d["vocab_size"] - 1)
    if fam == "gemma2":
        if rng.random() < 0.4:
            d["hidden_activation"] = rng.choice(acts)
        for key in ("final_logit_softcapping", "attn_logit_softcapping"):
            if rng.random() < 0.3:
                d[key] = rng.choice([30.0, 50.0, None])
        if rng.random() < 0.3:
            d["query_pre_attn_scalar"] = rng.choice([16, 256])
    if fam == "phi3":
        for key, v in (("resid_pdrop", 0.0), ("embd_pdrop", 0.1), ("original_max_position_embeddings", 4096)):
            if rng.random() < 0.3:
                d[key] = v
    if fam == "olmo" and rng.random() < 0.4:
        d["clip_qkv"] = rng.choice([8.0, 0.5, None])
    if fam == "starcoder2":
        for key, v in (("norm_epsilon", 1e-5), ("residual_dropout", 0.1), ("embedding_dropout", 0.0),
                       ("norm_type", "layer_norm"), ("mlp_type", "default")):
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
    # Now and then a value transformers refuses (or, for some families, takes as its default): both must agree.
    x = rng.random()
    if x < 0.03:
        d[rng.choice(["head_dim", "num_key_value_heads", "tie_word_embeddings", "hidden_act", "attention_bias",
                      "use_bias", "pad_token_id", "hidden_activation"])] = None
    elif x < 0.04:
        d["pad_token_id"] = d["vocab_size"] + rng.randint(0, 3)
    elif x < 0.05:
        bad = {"gemma2": ("final_logit_softcapping", 30), "olmo": ("clip_qkv", 8), "starcoder2": ("use_bias", 1),
               "phi3": ("original_max_position_embeddings", 4096.0)}.get(fam, ("pad_token_id", 1.0))
        d[bad[0]] = bad[1]
    return d


def random_targets(rng, fam):
    x = rng.random()
    if x < 0.25:
        return "all-linear"
    if x < 0.35:
        return rng.choice(REGEXES)
    names = NAMES.get(fam, DENSE_NAMES)
    picked = rng.sample(names, rng.randint(1, 4))
    if fam in NORMS and rng.random() < 0.05:
        picked.append(rng.choice(NORMS[fam]))  # peft refuses a norm
    if rng.random() < 0.3:
        picked.append(picked[0])  # a duplicate counts once
    return ",".join(picked)


def peft_targets(spelling):
    if spelling == "all-linear" or any(ch in spelling for ch in "*+?()[]{}|^$\\"):
        return spelling
    return spelling.split(",")


def key_width(attn):
    if hasattr(attn, "k_proj"):
        return attn.k_proj.out_features
    return (attn.qkv_proj.out_features - attn.o_proj.in_features) // 2  # Phi-3: q, then k and v of equal width


def transformers_figures(d, r, spelling):
    kw = {k: v for k, v in d.items() if k != "model_type" and not k.startswith("_")}
    cfg = AutoConfig.for_model(d["model_type"], **kw)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    params = sum(x.numel() for x in model.parameters())
    inactive = routed_away_params(model, cfg)
    kv = sum(2 * key_width(l.self_attn) * 2 for l in model.model.layers)
    with torch.device("meta"):  # the adapters on the meta device too: no memory, no initialisation time
        pm = get_peft_model(model, LoraConfig(r=r, target_modules=peft_targets(spelling)), low_cpu_mem_usage=True)
    lora = sum(x.numel() for x in pm.parameters() if x.requires_grad)
    return {"params": params, "params_active": params - inactive, "lora": lora, "kv": kv}


def account(path, r, spelling):
    res = subprocess.run([a.claimcheck, "account", "--config", path, "--json", "--lora-r", str(r),
                          "--lora-targets", spelling, "--root", a.root], capture_output=True, text=True, timeout=120)
    if res.returncode != 0:
        lines = res.stderr.strip().splitlines()
        if len(lines) != 1:  # a refusal is one line
            return {"error": f"exit {res.returncode} with {len(lines)} lines on stderr: {res.stderr.strip()[:300]}",
                    "not_one_line": True}
        return {"error": lines[0]}
    j = json.loads(res.stdout)
    return {"params": j["params"], "params_active": j["params_active"], "lora": j["lora"]["trainable"],
            "kv": j["kv_cache_bytes_per_token"]}


def theirs_of(d, r, spelling):
    try:
        return transformers_figures(d, r, spelling)
    except Exception as e:  # noqa: BLE001 - a config transformers refuses must be refused by account too
        return {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"}


def signature(mine, theirs):
    """None when account and transformers agree, else what differs."""
    if "error" in mine or "error" in theirs:
        if "error" in mine and "error" in theirs and not mine.get("not_one_line"):
            return None
        return ("refused", "error" in mine, "error" in theirs)
    diff = tuple(sorted(k for k in theirs if mine[k] != theirs[k]))
    return diff if diff else None


def compare(d, path, r, spelling):
    mine, theirs = account(path, r, spelling), theirs_of(d, r, spelling)
    return mine, theirs, signature(mine, theirs)


# ---- shrinking a config that shows a mismatch ------------------------------------------------------------------
REQUIRED = {"model_type", "vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"}


def candidates(d, r, spelling):
    """Smaller variants of (d, r, spelling), the likeliest first."""
    def v(**changes):
        e = dict(d)
        for k, x in changes.items():
            if x is ...:
                e.pop(k, None)
            else:
                e[k] = x
        return e, r, spelling
    n = d.get("num_hidden_layers", 1)
    if isinstance(n, int) and n > 1:
        yield v(num_hidden_layers=1, mlp_only_layers=[i for i in d.get("mlp_only_layers") or [] if i < 1]
                if "mlp_only_layers" in d else ...)
        yield v(num_hidden_layers=n - 1, mlp_only_layers=[i for i in d.get("mlp_only_layers") or [] if i < n - 1]
                if "mlp_only_layers" in d else ...)
    if r > 1:
        yield d, 1, spelling
    if "," in spelling:
        names = spelling.split(",")
        for i in range(len(names)):
            yield d, r, ",".join(names[:i] + names[i + 1:])
    for k in sorted(d):
        if k not in REQUIRED:
            yield v(**{k: ...})
    for k in ("num_local_experts", "num_experts"):
        if isinstance(d.get(k), int) and d[k] > 1:
            e = d[k] - 1
            yield v(**{k: e, "num_experts_per_tok": min(d.get("num_experts_per_tok", 1), e)})
    h, heads = d.get("hidden_size"), d.get("num_attention_heads")
    if isinstance(heads, int) and heads > 1 and isinstance(h, int):
        hd = d.get("head_dim") if isinstance(d.get("head_dim"), int) else max(1, h // heads)
        yield v(num_attention_heads=1, num_key_value_heads=1, hidden_size=hd if "head_dim" not in d else h)
        yield v(num_attention_heads=heads // 2, num_key_value_heads=max(1, min(d.get("num_key_value_heads") or 1,
                                                                                 heads // 2)),
                hidden_size=h // 2 if "head_dim" not in d else h)
    for k in ("vocab_size", "intermediate_size", "hidden_size", "head_dim", "moe_intermediate_size",
              "shared_expert_intermediate_size", "num_experts_per_tok", "num_key_value_heads"):
        x = d.get(k)
        if isinstance(x, int) and not isinstance(x, bool) and x > 1:
            yield v(**{k: x // 2})
            yield v(**{k: x - 1})


def shrink(d, r, spelling, signature, tmp, deadline, budget=300):
    best = (d, r, spelling)
    path = os.path.join(tmp, f"shrink-{os.getpid()}.json")
    tries = 0
    improved = True
    while improved and tries < budget:
        improved = False
        for cd, cr, cs in candidates(*best):
            if tries >= budget or time.time() > deadline:
                break
            tries += 1
            with open(path, "w", encoding="utf-8") as f:
                json.dump(cd, f)
            _, _, sig = compare(cd, path, cr, cs)
            if sig == signature:
                best = (cd, cr, cs)
                improved = True
                break
    return best, tries


def transformers_case(case):
    _, d, _, r, spelling, _ = case
    return theirs_of(d, r, spelling)


def explain(case, mine, theirs, sig, shrink_it, deadline):
    """The mismatch, with the smallest config that still shows it (shrink_it: or the config itself)."""
    label, d, path, r, spelling, tmp = case
    (sd, sr, ss), tries = shrink(d, r, spelling, sig, tmp, deadline) if shrink_it else ((d, r, spelling), 0)
    smine, stheirs = mine, theirs
    if tries:
        spath = os.path.join(tmp, f"smallest-{os.getpid()}.json")
        with open(spath, "w", encoding="utf-8") as f:
            json.dump(sd, f)
        smine, stheirs, _ = compare(sd, spath, sr, ss)
    return {"label": label, "config": d, "r": r, "targets": spelling, "mine": mine, "theirs": theirs,
            "smallest": sd, "smallest_r": sr, "smallest_targets": ss, "smallest_mine": smine,
            "smallest_theirs": stheirs, "tries": tries}


def main():
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="cc_account_diff_")
    atexit.register(shutil.rmtree, tmp, True)  # (also where the run skips, 77)
    cases = []  # (label, config dict, path, r, targets, tmp)
    for path in sorted(glob.glob(os.path.join(a.root, "reference", "data", "configs", "*.json")) +
                       glob.glob(os.path.join(a.root, "tests", "data", "configs", "*.json"))):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        # all-linear; the Llama-style names every family is tried with (MoE experts and StarCoder2's c_fc / c_proj
        # are not among what they find); names of the family's own, drawn
        for r, spelling in ((16, "all-linear"), (16, "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"),
                            (rng.choice([1, 4, 8, 64]), random_targets(rng, d["model_type"]))):
            cases.append((os.path.relpath(path, a.root), d, path, r, spelling, tmp))
    shipped = len(cases)
    for fam in FAMILIES:
        for i in range(a.random):
            d = random_config(rng, fam)
            path = os.path.join(tmp, f"{fam}-{i}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(d, f)
            cases.append((f"random {fam} #{i}", d, path, rng.choice([1, 2, 8, 16]), random_targets(rng, fam), tmp))

    # account's side first, in threads (each a process of about 10 ms), while this one imports torch, transformers
    # and peft; then transformers' side in forked workers, which inherit the imports (ten seconds each to redo).
    # The shipped configs (full-size models: about a second each) go first, the small random ones fill in after.
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as threads:
        ours = [threads.submit(account, path, r, spelling) for _, _, path, r, spelling, _ in cases]
        try:
            import_hf()
        except SystemExit:
            threads.shutdown(wait=True, cancel_futures=True)  # skipped: no need to finish account's side
            raise
        mine = [f.result() for f in ours]
    t_import = time.time() - t0
    if a.jobs > 1:
        with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
            theirs = list(pool.imap(transformers_case, cases[:shipped], chunksize=1)) + \
                     list(pool.imap(transformers_case, cases[shipped:], chunksize=8))
    else:
        theirs = [transformers_case(c) for c in cases]
    t_compare = time.time() - t0 - t_import
    # Each kind of mismatch (family, what differs) is shrunk once, for 60 s in all: a broken ledger fails thousands.
    mismatches, refused, shrunk, deadline = [], 0, set(), time.time() + 60
    for case, m, t in zip(cases, mine, theirs):
        sig = signature(m, t)
        if sig is not None:
            kind = (case[1].get("model_type"), sig)
            mismatches.append(explain(case, m, t, sig, kind not in shrunk and time.time() < deadline, deadline))
            shrunk.add(kind)
        elif "error" in m:
            refused += 1

    def brief(x):
        return json.dumps({k: v for k, v in x.items() if not k.startswith("_")}, sort_keys=True)
    for m in sorted(mismatches, key=lambda m: (m["tries"] == 0, len(brief(m["smallest"])))):
        print(f"MISMATCH {m['label']}: r={m['r']} targets={m['targets']}\n"
              f"  account:      {m['mine']}\n  transformers: {m['theirs']}\n  config: {brief(m['config'])}")
        if m["tries"]:
            print(f"  smallest config that shows it ({m['tries']} tries): r={m['smallest_r']} "
                  f"targets={m['smallest_targets']}\n    {brief(m['smallest'])}\n"
                  f"    account:      {m['smallest_mine']}\n    transformers: {m['smallest_theirs']}")
    print(f"transformers {transformers.__version__}, peft {peft.__version__}, torch {torch.__version__}: "
          f"{len(cases)} configs ({shipped} shipped, {a.random} random per family x {len(FAMILIES)}) "
          f"in {time.time() - t0:.1f} s on {a.jobs} processes (account and the imports {t_import:.1f} s, transformers "
          f"and peft {t_compare:.1f} s)")
    print(f"{len(cases) - len(mismatches)} passed ({refused} of them refused by both), {len(mismatches)} failed")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
