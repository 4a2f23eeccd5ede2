"""Shared helpers for the CLI tests (run by ctest with --claimcheck BIN --root DIR)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile


def args():
    p = argparse.ArgumentParser()
    p.add_argument("--claimcheck", required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--part", default="all", help="a test's part, where it has parts (cli_faults: timed, untimed)")
    return p.parse_args()


def run(binary, *argv, env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([binary, *argv], capture_output=True, text=True, env=e, timeout=600)


def copy_expected(root):
    tmp = tempfile.mkdtemp(prefix="cc_expected_")
    dst = os.path.join(tmp, "expected")
    shutil.copytree(os.path.join(root, "expected"), dst)
    return tmp, dst


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def save(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False, indent=2)


def shrink_ch06(exp):
    """Chapter 6's measured checks on smaller work in the expected copy `exp` (a planted fault moves each figure by
    2x or more; the report test is about the report): each claim's full figure is its own ctest."""
    for rel, changes in (("ch06/ridge_measured.json", {"batches": [1, 8, 64]}), ("ch06/decode_measured.json", {"layers": 1}),
                         ("ch06/decode_4bit.json", {"layers": 1, "steps": 3}), ("ch06/mfu.json", {"repeats": 1})):
        d = load(os.path.join(exp, rel))
        d["inputs"].update(changes)
        save(os.path.join(exp, rel), d)


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = []

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed.append(what)
            print("FAILED:", what, file=sys.stderr)

    def finish(self):
        print(f"{self.passed} passed, {len(self.failed)} failed")
        sys.exit(1 if self.failed else 0)
