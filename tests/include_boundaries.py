#!/usr/bin/env python3
"""Who may include whom, and link whom (the design card's rule: a bug shared by the code under test and the
answer key is a bug no check can see).

  base/       includes nothing of the project's other parts
  kernels/    the code under test: never reference/ (the answer key), harness/, checks/ or bench/
  reference/  the answer key: never kernels/, harness/, checks/ or bench/
  harness/    never checks/, kernels/ or bench/ (it may use reference/'s ledger for `account`)
  checks/, bench/, tests/: anything

Every #include "..." and #include <claimcheck/...> is resolved to the file it names (the including file's folder,
then each part's include folders); target_link_libraries lines in a part's CMakeLists.txt are read too.
With --self-test it also plants one crossing of each kind in a copy of the tree and fails unless each is caught.

usage: include_boundaries.py --root DIR [--self-test]"""
import argparse
import os
import re
import shutil
import sys
import tempfile

PARTS = ["base", "kernels", "reference", "harness", "checks", "bench", "tests"]
FORBIDDEN = {
    "base": {"kernels", "reference", "harness", "checks", "bench", "tests"},
    "kernels": {"reference", "harness", "checks", "bench", "tests"},
    "reference": {"kernels", "harness", "checks", "bench", "tests"},
    "harness": {"kernels", "checks", "bench", "tests"},
}
TARGETS = {  # CMake targets and the part that owns them
    "claimcheck_base": "base", "claimcheck_kernels": "kernels", "claimcheck_train": "kernels",
    "claimcheck_cuda_kernels": "kernels", "claimcheck_reference": "reference", "claimcheck_harness": "harness",
    "claimcheck_harness_internal": "harness", "claimcheck_checks": "checks",
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SOURCE_EXT = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")


def part_of(root, path):
    rel = os.path.relpath(path, root)
    top = rel.split(os.sep)[0]
    return top if top in PARTS else None


def include_dirs(root):
    dirs = []
    for p in PARTS:
        for sub in ("include", "src"):
            d = os.path.join(root, p, sub)
            if os.path.isdir(d):
                dirs.append(d)
    return dirs


def violations(root):
    found = []
    dirs = include_dirs(root)
    for part in FORBIDDEN:
        for base, _, files in os.walk(os.path.join(root, part)):
            for name in files:
                path = os.path.join(base, name)
                if name == "CMakeLists.txt":
                    text = open(path, encoding="utf-8").read()
                    for m in re.finditer(r"target_link_libraries\s*\(([^)]*)\)", text):
                        for tok in m.group(1).split():
                            owner = TARGETS.get(tok)
                            if owner in FORBIDDEN[part]:
                                found.append(f"{os.path.relpath(path, root)}: links {tok} ({part} -> {owner})")
                    continue
                if not name.endswith(SOURCE_EXT):
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, inc = m.groups()
                        if kind == "<" and not inc.startswith("claimcheck/"):
                            continue  # system and third-party headers
                        candidates = ([os.path.join(base, inc)] if kind == '"' else []) + [os.path.join(d, inc) for d in dirs]
                        hits = [os.path.normpath(c) for c in candidates if os.path.isfile(c)]
                        if not hits:
                            continue
                        owner = part_of(root, hits[0])
                        if owner in FORBIDDEN[part]:
                            found.append(f"{os.path.relpath(path, root)}:{lineno}: includes {inc} "
                                         f"({part} -> {owner}: {os.path.relpath(hits[0], root)})")
    return found


PLANTS = [  # (file to edit, line to add): one crossing of each forbidden kind
    ("kernels/cpu/attention.cpp", '#include "claimcheck/ref/ledger.h"\n'),
    ("kernels/train/qwen.cpp", '#include "claimcheck/check.h"\n'),
    ("reference/src/ledger_memory.cpp", '#include "claimcheck/kernels/attention.h"\n'),
    ("harness/src/cli.cpp", '#include "../../checks/ch05/qwen_lora.h"\n'),
    ("kernels/CMakeLists.txt", "target_link_libraries(claimcheck_kernels PRIVATE claimcheck_reference)\n"),
]


def self_test(root):
    ok = True
    for rel, line in PLANTS:
        with tempfile.TemporaryDirectory() as tmp:
            for p in PARTS:
                if os.path.isdir(os.path.join(root, p)):
                    shutil.copytree(os.path.join(root, p), os.path.join(tmp, p), ignore=shutil.ignore_patterns("__pycache__"))
            with open(os.path.join(tmp, rel), "a", encoding="utf-8") as f:
                f.write(line)
            caught = [v for v in violations(tmp) if v.startswith(rel)]
            print(f"planted in {rel}: {line.strip()} -> {'caught: ' + caught[0] if caught else 'NOT CAUGHT'}")
            ok = ok and bool(caught)
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    found = violations(a.root)
    for v in found:
        print("crossing:", v)
    ok = not found
    if a.self_test:
        ok = self_test(a.root) and ok
    print("include boundaries:", "hold" if ok else "BROKEN")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
