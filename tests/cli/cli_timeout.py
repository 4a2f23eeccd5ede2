"""claimcheck run --timeout (issue 26): a check that runs past it is given up on. The run says so in one line on
stderr, prints the claim as ERROR, stops the check's children (a Python driver, here), writes the report of the
claims before it with this one as an error, and exits 2; nothing of the driver is left running.

usage: cli_timeout.py CLAIMCHECK ROOT
"""
import json
import os
import subprocess
import sys
import tempfile
import time

claimcheck, root = sys.argv[1], sys.argv[2]
failures = []


def expect(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def drivers():
    """Processes running one of the project's Python drivers (ch01's, started by the check)."""
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if os.path.join(root, "checks") in l or "processes_speedup" in l]


with tempfile.TemporaryDirectory() as tmp:
    before = drivers()
    t0 = time.monotonic()
    # ch01.pool_rules (0.1 s) runs, then ch01.processes_speedup, a Python driver with a process pool for about
    # 3 s, is given up on at 1.5 s; ch02.ci95_80 never runs.
    r = subprocess.run([claimcheck, "run", "--claim", "ch02.ci95_80", "--claim", "ch01.processes_speedup",
                        "--claim", "ch01.pool_rules", "--report", tmp, "--timeout", "1.5", "--root", root],
                       capture_output=True, text=True, timeout=120)
    took = time.monotonic() - t0
    expect(r.returncode == 2, f"exit 2 (got {r.returncode})")
    expect("ERROR ch01.processes_speedup  did not end within --timeout 1.5 s" in r.stdout, f"the ERROR line: {r.stdout!r}")
    expect("ch01.processes_speedup did not end within --timeout 1.5 s: stopped" in r.stderr, f"stderr says so: {r.stderr!r}")
    expect(took < 20, f"it gave up at once ({took:.1f} s)")
    doc = json.load(open(os.path.join(tmp, "report.json")))
    got = [(c["id"], c["status"]) for c in doc["claims"]]
    expect(got == [("ch01.pool_rules", "pass"), ("ch01.processes_speedup", "error")],
           f"the report holds the claim before it and the error ({got})")
    time.sleep(0.5)
    left = [l for l in drivers() if l not in before]
    expect(not left, f"no driver left running ({left})")

if failures:
    sys.exit(f"{len(failures)} check(s) failed")
