"""Every implemented analytic (and phenomenon) claim FAILS when its stated value moves by 50 %
(booleans flip), read through `claimcheck run --expected DIR`. Comparisons against the value
(close, rounded, rounded_parts, truncated, equal) are moved; bounds and bands are judged by the tolerance tests, and
measured parts and measured claims by the planted-fault tests (cli_faults.py). An expected failure of an analytic
part must pass, and the run fail as an unexpected pass, once its stated value is moved onto the computed one.
With --flips DIR the figures each run turned are recorded for every_figure_can_fail.py."""
import os
import shutil

from clitest import (Flips, Tally, args, copy_expected, expected_failures, load, move_onto_measured, run, save,
                     turned)

a = args()
t = Tally()
flips = Flips(a.flips, "mutation")
tmp, exp = copy_expected(a.root)
MOVABLE = {"close", "rounded", "rounded_parts", "truncated", "equal"}


def moved(v):
    """The stated value moved by 50 % (a bool negated; a 0, which 50 % leaves where it is, a count of none, to 1)."""
    return (not v) if isinstance(v, bool) else v * 1.5 if v else 1


cases = []
for ch in sorted(d for d in os.listdir(exp) if os.path.isdir(os.path.join(exp, d))):
    for f in sorted(os.listdir(os.path.join(exp, ch))):
        path = os.path.join(exp, ch, f)
        d = load(path)
        if "pending" in d or not ({"analytic", "phenomenon"} & set(d["kind"])):
            continue
        # An expected failure stays one when moved: its evidence is judged by its reason and by XPASS.
        if "compare" in d and d["compare"]["rule"] in MOVABLE and d.get("expect") != "xfail":
            cases.append((path, d, None))
        for name, s in d.get("also", {}).items():
            # (A measured part, whose compare may come in variants by CPU, is judged by cli_faults.py.)
            if s.get("part") != "measured" and s["compare"]["rule"] in MOVABLE and s.get("expect") != "xfail":
                cases.append((path, d, name))

analytic_ids = {d["id"] for _, d, n in cases if n is None and "analytic" in d["kind"]}
t.check(len(analytic_ids) >= 20, f"at least 20 implemented analytic claims (found {len(analytic_ids)})")

skipped, unmoved = set(), set()
for path, d, name in cases:
    if d["id"] in skipped:
        continue
    # Analytic claims run their analytic part only (a measured part is judged by cli_faults.py).
    # A phenomenon's run judges the statement moved alone (its check may skip the rest: eos_in_loss trains twice).
    only = ["--label", "analytic"] if "analytic" in d["kind"] else ["--statement", name or "value"]
    # Unmoved, it passes (so the failure below is the move's doing) — or this build cannot run it. Once per claim (per
    # statement for a phenomenon): each move is put back before the next.
    key = d["id"] if "analytic" in d["kind"] else (d["id"], name)
    if key not in unmoved:
        unmoved.add(key)
        r = run(a.claimcheck, "run", "--claim", d["id"], *only, "--expected", exp, "--root", a.root)
        if r.returncode == 77:
            print(f"skipping {d['id']}: {r.stdout.strip()}")
            skipped.add(d["id"])
            continue
        has_xfail = d.get("expect") == "xfail" or any(s.get("expect") == "xfail" for s in d.get("also", {}).values())
        # An analytic-only run of a claim with a measured part reads PARTIAL (the part pending), never PASS.
        held = ("PASS", "PARTIAL") + (("XFAIL",) if has_xfail else ())
        t.check(r.returncode == 0 and r.stdout.startswith(held),
                f"{d['id']} unmoved: exit {r.returncode}, {r.stdout.strip()}")
    original = load(path)
    m = load(path)
    target = m if name is None else m["also"][name]
    target["value"] = moved(target["value"])
    save(path, m)
    r, claims = flips.run(a.claimcheck, "run", "--claim", d["id"], *only, "--expected", exp, "--root", a.root,
                          origin="stated value moved by 50%")
    what = f"{d['id']}{'' if name is None else '.' + name} moved to {target['value']}"
    t.check(r.returncode == 1 and r.stdout.startswith("FAIL") and (name or "value") in turned(claims.get(d["id"], {})),
            f"{what}: exit {r.returncode}, {r.stdout.strip()} {r.stderr.strip()}")
    save(path, original)

# The expected failures of these claims' analytic parts: moved onto the computed value, each passes unexpectedly.
for path, d, name, s in expected_failures(exp, lambda d, n, s: bool({"analytic", "phenomenon"} & set(d["kind"])) and
                                          s.get("part") != "measured" and d["id"] not in skipped):
    move_onto_measured(a, t, flips, exp, path, d, name, ["--label", "analytic"] if "analytic" in d["kind"] else [])

shutil.rmtree(tmp)
t.finish()
