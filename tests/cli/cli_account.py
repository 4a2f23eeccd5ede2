"""`claimcheck account --config FILE --json` gives the published parameter counts and the ledger keys."""
import glob
import json
import os

from clitest import Tally, args, load, run

a = args()
t = Tally()
configs = sorted(glob.glob(os.path.join(a.root, "tests", "data", "configs", "*.json")))
t.check(len(configs) >= 6, "test configs present")
for path in configs:
    r = run(a.claimcheck, "account", "--config", path, "--json")
    if r.returncode != 0:
        t.check(False, f"{path}: exit {r.returncode} {r.stderr}")
        continue
    j = json.loads(r.stdout)
    t.check(j["params"] == load(path)["_published_params"], f"{os.path.basename(path)}: params {j['params']}")
    t.check(isinstance(j["lora"]["trainable"], int) and j["lora"]["trainable"] > 0, "lora.trainable is an integer")
    t.check(isinstance(j["kv_cache_bytes_per_token"], int), "kv_cache_bytes_per_token is an integer")

ref = os.path.join(a.root, "reference", "data", "configs")
j = json.loads(run(a.claimcheck, "account", "--config", os.path.join(ref, "qwen2.5-0.5b.json"), "--json").stdout)
t.check(j["params"] == 494032768 and j["lora"]["trainable"] == 8798208, "qwen2.5-0.5b ledger")
j = json.loads(run(a.claimcheck, "account", "--config", os.path.join(ref, "llama-3-8b.json"), "--json",
                   "--lora-r", "8", "--lora-targets", "q_proj,v_proj").stdout)
t.check(j["params"] == 8030261248 and j["lora"]["trainable"] == 3407872 and j["kv_cache_bytes_per_token"] == 131072,
        "llama-3-8b ledger with PEFT's default targets")
h200 = os.path.join(a.root, "reference", "data", "hardware", "h200.json")
j2 = json.loads(run(a.claimcheck, "account", "--config", os.path.join(ref, "llama-3-8b.json"), "--json",
                    "--hardware", h200).stdout)
t.check(j2["decode"]["ms_per_token"] < j["decode"]["ms_per_token"], "more bandwidth, faster decode")
r = run(a.claimcheck, "account", "--config", os.path.join(ref, "llama-3-8b.json"))
t.check(r.returncode == 0 and "parameters" in r.stdout and "8030261248" in r.stdout, "text output")

# Issue 12: mixture of experts (total and active), peft's spellings, the keys reported.
j = json.loads(run(a.claimcheck, "account", "--config", os.path.join(ref, "mixtral-8x7b.json"), "--json").stdout)
t.check(j["params"] == 46702792704 and j["params_active"] == 12879925248, "mixtral-8x7b: 46.7B total, 12.9B active")
t.check(j["moe"]["experts"] == 8 and j["moe"]["experts_per_token"] == 2, "mixtral-8x7b: 8 experts, top 2")
t.check(j["decode"]["bytes_per_token"] == 2 * 12879925248, "mixtral decode reads the active weights")
j = json.loads(run(a.claimcheck, "account", "--config", os.path.join(ref, "qwen1.5-moe-a2.7b.json"), "--json").stdout)
t.check(j["params"] == 14315784192 and j["params_active"] == 2689173504, "qwen1.5-moe-a2.7b: 14.3B total, 2.7B active")
j = json.loads(run(a.claimcheck, "account", "--config", os.path.join(ref, "gemma-2b.json"), "--json").stdout)
t.check(j["params"] == 2506172416 and j["params_breakdown"]["tied_embeddings"], "gemma-2b: 2,506,172,416, tied")
ignored = {k["key"]: k["known"] for k in j["config_keys"]["ignored"]}
t.check(ignored.get("rope_theta") is True and ignored.get("hidden_activation") is False, "gemma-2b: ignored keys sorted")
l8 = os.path.join(ref, "llama-3-8b.json")
for spelling in ("q_proj,v_proj,q_proj", "self_attn.q_proj,v_proj", r".*\.(q|v)_proj"):
    j = json.loads(run(a.claimcheck, "account", "--config", l8, "--json", "--lora-r", "8", "--lora-targets", spelling).stdout)
    t.check(j["lora"]["trainable"] == 3407872, f"--lora-targets {spelling}: PEFT's count for q and v")
j_all = json.loads(run(a.claimcheck, "account", "--config", l8, "--json", "--lora-targets", "all-linear").stdout)
j_def = json.loads(run(a.claimcheck, "account", "--config", l8, "--json").stdout)
t.check(j_all["lora"]["trainable"] == j_def["lora"]["trainable"], "default targets are all-linear")
j = json.loads(run(a.claimcheck, "account", "--config", l8, "--json", "--lora-r", "8", "--lora-targets", "q_proj,v_proj,nope").stdout)
t.check(j["lora"]["trainable"] == 3407872 and j["lora"]["unmatched_targets"] == ["nope"],
        "a name matching nothing is skipped and listed while others match (as peft does)")
for spelling, what in (("mlp", "a block"), ("nope,nada", "no such module"), ("q_proj,all-linear", "all-linear in a list")):
    r = run(a.claimcheck, "account", "--config", l8, "--lora-targets", spelling)
    t.check(r.returncode == 2 and "target_modules" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
            f"--lora-targets {spelling} ({what}): one line naming target_modules")
r = run(a.claimcheck, "account", "--config", os.path.join(ref, "mixtral-8x7b.json"))
t.check(r.returncode == 0 and "active per token" in r.stdout and "ignored, harmless" in r.stdout, "MoE text output")
t.finish()
