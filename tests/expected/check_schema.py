#!/usr/bin/env python3
"""expected/schema.json and the loader (harness/src/expected.cpp) say the same: every expected file validates
against the schema, and each planted mistake below (an unknown key at each level, a retired spelling, a `why` of
two lines or too long, a malformed feature expression) is refused by both: by the schema, and by `claimcheck list
--expected` with exit 2 and one line naming the file and the key.

usage: check_schema.py --claimcheck EXE --root DIR"""
import argparse
import copy
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

p = argparse.ArgumentParser()
p.add_argument("--claimcheck", required=True)
p.add_argument("--root", required=True)
a = p.parse_args()

try:
    import jsonschema
    schema = json.load(open(os.path.join(a.root, "expected", "schema.json")))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
except ImportError:
    validator = None

failures = []
files = sorted(glob.glob(os.path.join(a.root, "expected", "ch0*", "*.json")))
if validator:
    for f in files:
        for e in validator.iter_errors(json.load(open(f))):
            failures.append(f"{os.path.relpath(f, a.root)}: the schema refuses it at {'/'.join(map(str, e.path))}: {e.message[:200]}")


def load(rel):
    return json.load(open(os.path.join(a.root, "expected", rel)))


def statement_with_variants(d):
    return next(s for s in [d, *d.get("also", {}).values()] if "variants" in s)


# (what, expected file, mutation, the field the loader's error names)
def unknown_top(d): d["alsoo"] = d.pop("also")
def unknown_also(d): d["also"]["tokens_per_s"]["vaue"] = 1
def unknown_compare(d): d["compare"]["tol"] = 0.1
def unknown_variant(d): statement_with_variants(d)["variants"][0]["whenn"] = "gpu"
def unknown_part(d): d["parts"]["measured"]["needs"] = ["libtorch"]
def old_band(d): d["compare"]["lo"] = 0.5
def two_lines(d): d["compare"]["why"] = "one line\nand another"
def long_why(d): d["compare"]["why"] = "x" * 201
def bad_when(d): statement_with_variants(d)["variants"][0]["when"] = "isa:avx512_bf16|isa:amx_bf16"
def unknown_need(d): d["requires"] = ["cuda"]
def fault_name(d): d["faults"] = {"Bad-Name": ["value"]}
def fault_not_list(d): d["faults"] = {"ledger_gib_for_gb": "value"}

cases = [
    ("an unknown top-level key", "ch06/decode_ms.json", unknown_top, "alsoo"),
    ("an unknown key in a statement", "ch06/decode_ms.json", unknown_also, "also.tokens_per_s.vaue"),
    ("an unknown key in a comparison", "ch06/decode_ms.json", unknown_compare, "compare.tol"),
    ("an unknown key in a variant", "ch03/cpu_bf16_autocast.json", unknown_variant, "variants[0].whenn"),
    ("an unknown key in a part", "ch06/kv_cache.json", unknown_part, "parts.measured.needs"),
    ("a retired spelling of a range (lo)", "ch06/decode_measured.json", old_band, "compare.lo"),
    ("a why of two lines", "ch06/decode_ms.json", two_lines, "compare.why"),
    ("a why of 201 characters", "ch06/decode_ms.json", long_why, "compare.why"),
    ("a condition in the retired syntax", "ch03/cpu_bf16_autocast.json", bad_when, "variants[0].when"),
    ("an unknown requirement", "ch06/decode_ms.json", unknown_need, "requires"),
    ("a fault's name out of [a-z0-9_]", "ch06/decode_ms.json", fault_name, "faults.Bad-Name"),
    ("a fault's statements not a list", "ch06/decode_ms.json", fault_not_list, "faults.ledger_gib_for_gb"),
]
for what, rel, mutate, field in cases:
    d = load(rel)
    try:
        mutate(d)
    except KeyError as e:  # the planted file changed shape: say so rather than test nothing
        failures.append(f"{what}: {rel} has no {e} to plant it in")
        continue
    if validator and validator.is_valid(d):
        failures.append(f"{what}: the schema accepts it")
    tmp = tempfile.mkdtemp(prefix="cc_schema_")
    try:
        shutil.copytree(os.path.join(a.root, "expected"), os.path.join(tmp, "expected"))
        path = os.path.join(tmp, "expected", rel)
        json.dump(d, open(path, "w"), indent=2, ensure_ascii=False)
        r = subprocess.run([a.claimcheck, "list", "--expected", os.path.join(tmp, "expected"), "--root", a.root],
                           capture_output=True, text=True, timeout=120)
        err = r.stderr.strip()
        if r.returncode != 2 or len(err.splitlines()) != 1 or path not in err or f"field '{field}'" not in err:
            failures.append(f"{what}: claimcheck exit {r.returncode}, stderr {err[:300]!r} (wanted exit 2, one line "
                            f"naming {path} and field '{field}')")
    finally:
        shutil.rmtree(tmp)

# The same verdict from both on inputs at the edge of the grammar: each `when` below, and the other fields'
# corners (characters, not bytes; a trailing newline; an empty parts; 1.0 for 1; a kind twice).
def agree(what, rel, mutate):
    d = load(rel)
    mutate(d)
    tmp = tempfile.mkdtemp(prefix="cc_schema_")
    try:
        shutil.copytree(os.path.join(a.root, "expected"), os.path.join(tmp, "expected"))
        json.dump(d, open(os.path.join(tmp, "expected", rel), "w"), indent=2, ensure_ascii=False)
        r = subprocess.run([a.claimcheck, "list", "--expected", os.path.join(tmp, "expected"), "--root", a.root],
                           capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(tmp)
    loader = r.returncode == 0
    if r.returncode not in (0, 2):
        failures.append(f"{what}: claimcheck exit {r.returncode}: {r.stderr.strip()[:200]}")
    if validator and validator.is_valid(d) != loader:
        failures.append(f"{what}: the schema {'accepts' if validator.is_valid(d) else 'refuses'} it, the loader "
                        f"{'accepts' if loader else 'refuses'} it ({r.stderr.strip()[:200]})")


def set_when(w):
    return lambda d: statement_with_variants(d)["variants"][0].__setitem__("when", w)


WHEN = ["isa:avx512_bf16 || isa:amx_bf16", "!gpu && derived:x<1e-3", "libtorch && python || numpy", "gpu",
        "derived:r>-2.5", "default", "gpu||numpy", "! gpu", "gpu  && numpy", " gpu", "gpu &&", "no-gpu",
        "(gpu)", "isa:AVX2", "derived:x>>1", "!!gpu", "default && gpu", "isa:avx2|gpu",
        # a flag the probe does not record (a typo of avx512_bf16) would read false everywhere: both refuse it
        "!isa:avx512bf16", "gpu || isa:avx3"]
# every flag the probe records, accepted by both (the schema's list and harness/src/probe.cpp's agree)
WHEN += ["isa:" + f for f in ["sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq",
                              "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8",
                              "asimd", "asimddp", "sve", "sve2", "bf16", "i8mm"]]
for w in WHEN:
    agree(f"when {w!r}", "ch03/cpu_bf16_autocast.json", set_when(w))
agree("a why of 150 two-byte characters", "ch06/decode_ms.json", lambda d: d["compare"].__setitem__("why", "α" * 150))
agree("a why of 201 two-byte characters", "ch06/decode_ms.json", lambda d: d["compare"].__setitem__("why", "α" * 201))
agree("a why ending in a newline", "ch06/decode_ms.json", lambda d: d["compare"].__setitem__("why", "w\n"))
agree("an empty parts", "ch06/kv_cache.json", lambda d: d.__setitem__("parts", {}))
agree("schema 1.0", "ch06/decode_ms.json", lambda d: d.__setitem__("schema", 1.0))
agree("an empty establishes", "ch06/decode_ms.json", lambda d: d.__setitem__("establishes", ""))
agree("a kind twice", "ch06/decode_ms.json", lambda d: d.__setitem__("kind", ["analytic", "analytic"]))
agree("a fault's statement twice", "ch06/decode_ms.json",
      lambda d: d.__setitem__("faults", {"ledger_gib_for_gb": ["weight_bytes", "weight_bytes"]}))

# What the schema cannot see: a fault naming a statement its file does not state (a typo would run no statement).
d = load("ch06/decode_ms.json")
d["faults"] = {"ledger_gib_for_gb": ["weight_byte"]}
tmp = tempfile.mkdtemp(prefix="cc_schema_")
try:
    shutil.copytree(os.path.join(a.root, "expected"), os.path.join(tmp, "expected"))
    path = os.path.join(tmp, "expected", "ch06", "decode_ms.json")
    json.dump(d, open(path, "w"), indent=2, ensure_ascii=False)
    r = subprocess.run([a.claimcheck, "list", "--expected", os.path.join(tmp, "expected"), "--root", a.root],
                       capture_output=True, text=True, timeout=120)
    err = r.stderr.strip()
    if r.returncode != 2 or "field 'faults.ledger_gib_for_gb'" not in err or "weight_byte" not in err:
        failures.append(f"a fault naming no statement: claimcheck exit {r.returncode}, stderr {err[:300]!r}")
finally:
    shutil.rmtree(tmp)

for f in failures:
    print("FAIL:", f)
print(f"{len(files)} expected files{' validated against the schema' if validator else ''}; "
      f"{len(cases)} planted mistakes; {len(WHEN) + 8} edge cases held to both; {len(failures)} failures")
if failures:
    sys.exit(1)
if not validator:
    print("skip: the schema half needs Python's jsonschema (Debian: python3-jsonschema); the loader half passed")
    sys.exit(77)
