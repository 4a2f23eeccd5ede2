"""Every stated figure (a claim's `value` and each `also`) that runs here has been turned by something: a fault planted
in the code under test or in the ledger (cli_faults.py), or its stated value moved (cli_mutation.py). An expected
failure (the statement, or the variant of it that applies on this machine) counts only when a planted fault turned
its claim FAIL, not XFAIL (issue 32): moved onto the measured value it shows the comparison can hold, not that broken
code fails. The runs of those tests are recorded in --flips DIR; this test lists the
figures none of them turned and fails when the list is not empty. A figure whose claim cannot run on this machine
(it needs a GPU, or is not implemented) is listed apart, with the reason, and does not count."""
import glob
import json
import os
import sys

from clitest import SHORT_BUDGET, args, hardware, load, run, statements

a = args()
if not a.flips or not glob.glob(os.path.join(a.flips, "*.jsonl")):
    print(f"no record in {a.flips}: run the planted-fault and mutation tests first (ctest runs them as this test's "
          "fixture)")
    sys.exit(1)

turned = {}  # (claim, statement) -> what turned it
xfail_here = set()  # (claim, statement) judged as an expected failure on this machine
proven = {}  # (claim, statement) -> the planted fault that turned its claim FAIL while it was an expected failure
for path in sorted(glob.glob(os.path.join(a.flips, "*.jsonl"))):
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            for name in rec["turned"]:
                turned.setdefault((rec["claim"], name), rec["origin"])
            for name in rec.get("xfail", []):
                xfail_here.add((rec["claim"], name))
                if rec["status"] == "fail" and rec["origin"].startswith("fault"):
                    proven.setdefault((rec["claim"], name), rec["origin"])
for key in xfail_here:  # an expected failure is turned by a fault that fails its claim, and by nothing else
    if key in proven:
        turned[key] = proven[key]
    else:
        turned.pop(key, None)

def applies_here(expr):
    """A statement's `applies` on this machine (the grammar of expected/schema.json: atoms gpu, libtorch, python,
    numpy, isa:FLAG, each with an optional !, joined by ' && ' within ' || '); the software atoms are the claim's
    runnable status's, held true here."""
    def atom(t):
        neg, t = t.startswith("!"), t.lstrip("!")
        hw = hardware(a.claimcheck)
        v = (t[4:] in hw["isa"]) if t.startswith("isa:") else bool(hw.get("gpu")) if t == "gpu" else True
        return v != neg
    return any(all(atom(t) for t in alt.split(" && ")) for alt in expr.split(" || "))


listing = json.loads(run(a.claimcheck, "list", "--json", "--root", a.root).stdout)
runnable = {c["id"]: c["runnable"] for c in listing}

figures, apart = [], []
exp = os.path.join(a.root, "expected")
for path in sorted(glob.glob(os.path.join(exp, "ch0*", "*.json"))):
    d = load(path)
    if "pending" in d:
        apart.append(f"{d['id']}: not implemented ({d['pending']})")
        continue
    for name, s in statements(d):
        if "compare" not in s and "variants" not in s:
            continue
        if runnable.get(d["id"], "yes") != "yes":
            apart.append(f"{d['id']}.{name}: {runnable[d['id']]}")
        elif "applies" in s and not applies_here(s["applies"]):
            apart.append(f"{d['id']}.{name}: not judged on this machine (applies: {s['applies']})")
        else:
            figures.append((d["id"], name))

# A figure the planted faults' short budget cannot judge is turned by a whole-budget run in the full stage: listed
# apart where that run has not been recorded (make test), required where it has.
ran_whole = bool(glob.glob(os.path.join(a.flips, "*-whole.jsonl")))
whole = [f for f in figures if f not in turned and not ran_whole and
         f[1] in SHORT_BUDGET.get(f[0], {}).get("statements", ())]
figures = [f for f in figures if f not in whole]
apart += [f"{c}.{n}: judged on the claim's whole budget, by {SHORT_BUDGET[c]['whole']} (ctest -L full)"
          for c, n in whole]
never = [f for f in figures if f not in turned]
print(f"{len(figures)} stated figures run here; {len(figures) - len(never)} turned by a fault or a move; "
      f"{len(apart)} apart")
for claim, name in never:
    why = " (an expected failure here: no planted fault turned its claim FAIL)" if (claim, name) in xfail_here else ""
    print(f"NEVER TURNED: {claim}.{name}{why}")
for line in apart:
    print(f"apart: {line}")
sys.exit(1 if never else 0)
