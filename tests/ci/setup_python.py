#!/usr/bin/env python3
"""ci/setup-python.sh on bad input: an interpreter that does not exist, one without torch, one whose torch is older
than 2.4, and no network for the shared environment. Each gets one line on stderr naming the interpreter and what
it has (or what failed) and how to point the build elsewhere, exit status 2, and nothing half-installed left behind.
A good interpreter is printed as it is, and so is a complete shared environment of a pin ($CLAIMCHECK_TORCH_PIN).

usage: setup_python.py --root DIR --python GOOD_PYTHON"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli"))  # clitest
from clitest import Tally  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--root", required=True)
ap.add_argument("--python", required=True)
a = ap.parse_args()
t = Tally()
script = os.path.join(a.root, "ci", "setup-python.sh")
tmp = tempfile.mkdtemp(prefix="cc_setup_")
bare = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else None


def setup(**env):
    e = {k: v for k, v in os.environ.items() if k not in ("CLAIMCHECK_PYTHON", "CLAIMCHECK_VENV")}
    e.update(env)
    return subprocess.run(["bash", script], capture_output=True, text=True, env=e, timeout=300)


def refused(r, *needles, what):
    # The one progress notice ("creating ... once per machine") is not part of the error.
    err = "\n".join(l for l in r.stderr.strip().splitlines() if not l.startswith("claimcheck: creating "))
    ok = r.returncode == 2 and r.stdout == "" and err.count("\n") == 0 and all(n in err for n in needles)
    t.check(ok and "CLAIMCHECK_PYTHON" in err, f"{what}: exit {r.returncode}, stdout {r.stdout!r}, stderr {err!r}")


refused(setup(CLAIMCHECK_PYTHON="/nonexistent/python3"), "/nonexistent/python3", what="no such interpreter")

# A fake torch 2.3.1 (and numpy) in front of a plain Python.
fake = os.path.join(tmp, "fake")
os.makedirs(os.path.join(fake, "torch"))
open(os.path.join(fake, "torch", "__init__.py"), "w").write('__version__ = "2.3.1+cpu"\n')
wrapper = os.path.join(tmp, "python-old-torch")
open(wrapper, "w").write(f'#!/bin/sh\nPYTHONPATH={fake} exec {bare or sys.executable} "$@"\n')
os.chmod(wrapper, 0o755)
refused(setup(CLAIMCHECK_PYTHON=wrapper), wrapper, "2.3.1", "older than 2.4", what="torch older than 2.4")

if bare:
    r = subprocess.run([bare, "-c", "import torch"], capture_output=True)
    if r.returncode != 0:
        refused(setup(CLAIMCHECK_PYTHON=bare), bare, "without torch", what="no torch")
        # The shared environment with no network: pip fails at once; no environment is left as if it were whole.
        venv = os.path.join(tmp, "venv")
        r = setup(PATH="/usr/bin:/bin", CLAIMCHECK_VENV=venv, PIP_CONFIG_FILE="/dev/null",
                  PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_TIMEOUT="2")
        refused(r, venv, "could not install torch", what="no network")
        t.check(not os.path.exists(venv), f"no half-installed environment at {venv}")

r = setup(CLAIMCHECK_PYTHON=a.python)
t.check(r.returncode == 0 and r.stdout.strip() == a.python, f"a good interpreter: {r.returncode} {r.stdout!r} {r.stderr!r}")

# A pin (CLAIMCHECK_TORCH_PIN, as ci/torch-oldest.sh asks for torch 2.4.1) names its shared environment: a complete
# one is reused as it is (nothing installed into it), whatever CLAIMCHECK_PYTHON says.
pinned = os.path.join(tmp, "pinned")
os.makedirs(os.path.join(pinned, "bin"))
open(os.path.join(pinned, ".claimcheck-complete"), "w").close()
pinned_py = os.path.join(pinned, "bin", "python")
open(pinned_py, "w").write(f'#!/bin/sh\nexec {a.python} "$@"\n')
os.chmod(pinned_py, 0o755)
r = setup(CLAIMCHECK_TORCH_PIN="9.9.9", CLAIMCHECK_VENV=pinned, CLAIMCHECK_PYTHON="/nonexistent/python3")
t.check(r.returncode == 0 and r.stdout.strip() == pinned_py and sorted(os.listdir(pinned)) == [".claimcheck-complete", "bin"],
        f"a pinned shared environment: {r.returncode} {r.stdout!r} {r.stderr!r} {sorted(os.listdir(pinned))}")
subprocess.run(["rm", "-rf", tmp])
t.finish()
