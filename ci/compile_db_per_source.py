#!/usr/bin/env python3
"""A compilation database with one entry per source file: CMake's unity builds list only their unity_*.cxx files,
which include the real sources; clang-tidy needs each source's own entry (ci/lint.sh).

usage: compile_db_per_source.py BUILD_DIR OUT_DIR   (writes OUT_DIR/compile_commands.json)"""
import json
import os
import re
import sys

build, out = sys.argv[1], sys.argv[2]
entries = json.load(open(os.path.join(build, "compile_commands.json")))
result = []
for e in entries:
    f = e["file"]
    if re.search(r"unity_\d+_cxx\.cxx$", f) and os.path.exists(f):
        for src in re.findall(r'#include "([^"]+\.(?:cpp|cc))"', open(f).read()):
            cmd = e.get("command", "").replace(f, src)
            result.append({"directory": e["directory"], "file": src, "command": cmd})
    else:
        result.append(e)
os.makedirs(out, exist_ok=True)
json.dump(result, open(os.path.join(out, "compile_commands.json"), "w"), indent=1)
print(f"{len(result)} entries in {out}/compile_commands.json")
