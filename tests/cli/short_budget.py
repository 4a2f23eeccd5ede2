"""The claims whose full run is long (clitest.py's SHORT_BUDGET: chapter 3's minute of training) on the short budget
their planted faults run on, healthy: every statement but those only the whole budget can judge passes (exit 0, no
FAIL or ERROR). The whole budget is the claim's own ctest, in the full stage, and `make report`."""
import os
import shutil

from clitest import SHORT_BUDGET, Tally, args, copy_expected, load, run, save, statements

a = args()
t = Tally()
tmp, exp = copy_expected(a.root)
for claim, budget in SHORT_BUDGET.items():
    path = os.path.join(exp, claim.split(".")[0], claim.split(".")[1] + ".json")
    d = load(path)
    d["inputs"]["steps"] = budget["steps"]
    save(path, d)
    names = [n for n, s in statements(d) if ("compare" in s or "variants" in s) and n not in budget["statements"]]
    only = [x for n in names for x in ("--statement", n)]
    r = run(a.claimcheck, "run", "--claim", claim, *only, "--expected", exp, "--quiet")
    t.check(r.returncode == 0 and not r.stdout.startswith(("FAIL", "ERROR")),
            f"{claim} on {budget['steps']} steps, {len(names)} statements: exit {r.returncode} {r.stdout.strip()[:400]}")
shutil.rmtree(tmp)
t.finish()
