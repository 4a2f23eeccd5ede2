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
t.finish()
