"""`claimcheck matrix` (issue 36): a cell, a "holds on k of n" row, what separates two verdicts, an expected file
changed between commits, the three files and the schema; bad input (not a report, an unknown schema version, two
reports of the same machine and commit, a report without its records) gets one line naming the file, exit 2, and
leaves the previous matrix whole. --doc: docs/matrix.md is the matrix of results/ and README.md's headline table its
summary (the build writes both)."""
import copy
import glob
import json
import os
import shutil
import tempfile

from clitest import Tally, args, load, run, save

a = args()
t = Tally()
cc = a.claimcheck
results = sorted(glob.glob(os.path.join(a.root, "results", "*", "report.json")))

if a.doc:
    with tempfile.TemporaryDirectory(prefix="cc_matrix_doc_") as d:
        r = run(cc, "matrix", *results, "--out", d, "--links-from", os.path.join(a.root, "docs"))
        t.check(r.returncode == 0, f"matrix of results/: exit {r.returncode} {r.stderr}")
        doc = os.path.join(a.root, "docs", "matrix.md")
        fresh = open(os.path.join(d, "matrix.md"), encoding="utf-8").read() if r.returncode == 0 else ""
        t.check(os.path.exists(doc) and open(doc, encoding="utf-8").read() == fresh,
                "docs/matrix.md is the matrix of results/*/report.json (stale: `make matrix` or build the project)")
        # The README's headline table: its summary, between the two markers cmake/splice_headline.cmake writes into.
        head = open(os.path.join(d, "headline.md"), encoding="utf-8").read() if r.returncode == 0 else "?"
        readme = open(os.path.join(a.root, "README.md"), encoding="utf-8").read()
        begin = "<!-- matrix headline: written by the build from results/ (claimcheck matrix); do not edit -->"
        t.check(begin + "\n" + head + "<!-- end of the matrix headline -->" in readme,
                "README.md's headline table is the summary of the matrix of results/ (stale: build the project)")
        t.check("| **all** | 57 |" in head, f"the headline counts the 57 claims: {head[-200:]}")
    t.finish()

t.check(len(results) >= 2, f"results/ holds at least two machines' reports ({len(results)})")
tmp = tempfile.mkdtemp(prefix="cc_matrix_")
# Two machines from one report: the first as measured; a second, made by hand, without bf16 instructions, on which
# the bf16 autocast claim holds (its default statement applied) and a later commit whose expected file changed.
base = load(results[0])
other = copy.deepcopy(base)
hw = other["records"]["hardware"]
hw.update(microarchitecture="Test Core", cpu_model="Test CPU", cpu_vendor="GenuineTest", logical_cpus=4)
hw["isa"] = [x for x in hw["isa"] if "bf16" not in x and "amx" not in x]
other["records"]["commit"] = {"sha": "f" * 40, "dirty": False}
AUTOCAST = "ch03.cpu_bf16_autocast"
by_id = {c["id"]: c for c in other["claims"]}
ac = by_id[AUTOCAST]
ac["status"], ac["reason"] = "pass", "hand-made: the default statements held"
ac["details"]["variant"] = {k: "default" for k in ac["details"].get("variant", {})}
for m in ac["details"].get("measurements", []):
    m.pop("expected_failure", None)
changed = other["claims"][0]["id"]
by_id[changed]["stated"] = {"value": 1234.5, "unit": by_id[changed]["stated"]["unit"]}
other["records"]["config"]["checks"].get(changed, {}).pop("expected_sha256", None)
mine = os.path.join(tmp, "base", "report.json")
os.makedirs(os.path.dirname(mine))
shutil.copy(results[0], mine)
theirs = os.path.join(tmp, "other", "report.json")
os.makedirs(os.path.dirname(theirs))
save(theirs, other)

out = os.path.join(tmp, "out")
r = run(cc, "matrix", mine, theirs, "--out", out)
t.check(r.returncode == 0, f"two machines: exit {r.returncode} {r.stderr}")
for f in ("matrix.json", "matrix.md", "matrix.html"):
    t.check(os.path.isfile(os.path.join(out, f)), f"{f} written")
m = load(os.path.join(out, "matrix.json"))
try:
    import jsonschema
    jsonschema.validate(m, load(os.path.join(a.root, "docs", "matrix.schema.json")))
    t.check(True, "schema")
except ImportError:
    print("(no jsonschema in this Python: the schema is checked by hand)")
    t.check(m["schema"] == "claimcheck.matrix/1" and len(m["machines"]) == 2, "schema")
except jsonschema.ValidationError as e:
    t.check(False, f"matrix.json against docs/matrix.schema.json: {e.message} at {list(e.absolute_path)}")
rows = {c["id"]: c for c in m["claims"]}
t.check(len(rows) == len(base["claims"]), f"a row per claim ({len(rows)})")
row = rows[AUTOCAST]
c1, c2 = row["cells"]
base_ac = {c["id"]: c for c in base["claims"]}[AUTOCAST]
t.check(c1["status"] == base_ac["status"] and c2["status"] == "pass", f"the cells' verdicts: {c1['status']}, {c2['status']}")
if base_ac["details"].get("variant", {}).get("value", "default") != "default":
    t.check(any("bf16" in w for w in c1["variant"].values()) and any(f.startswith("isa ") for f in c1["chosen_by"]),
            f"the variant that applied and the property that chose it: {c1['variant']} {c1['chosen_by']}")
    t.check(row["differ"] and "bf16" in row["separated_by"], f"what separates the verdicts: {row['separated_by']}")
    t.check(row["holds"] == 1 and row["ran"] == 2, f"holds on 1 of 2: {row['holds']} of {row['ran']}")
t.check(c1["link"].endswith("#" + AUTOCAST) and c1["link"].startswith(".."), f"a cell links to its report row: {c1['link']}")
t.check(rows[changed]["expected_changed"] != "", f"{changed}: its changed expected figures said: {rows[changed]}")
md = open(os.path.join(out, "matrix.md"), encoding="utf-8").read()
t.check("holds on" in md and "Test Core" in md and "| `" + AUTOCAST + "` |" in md, "matrix.md: the row and the columns")
html = open(os.path.join(out, "matrix.html"), encoding="utf-8").read()
t.check(f'id="{AUTOCAST}--m1"' in html and 'id="filter"' in html and "Test Core" in html,
        "matrix.html: a cell's anchor, the filter, the columns")
t.check("/work/" not in json.dumps(m) and all(not c["details"].get("check", "").startswith("/")
                                                for c in base["claims"]),
        "no absolute path of a checkout in the reports or the matrix")

# Bad input: one line naming the file, exit 2, the previous matrix untouched.
before = {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}
bad_cases = {}
arr = os.path.join(tmp, "array.json")
open(arr, "w").write("[1, 2]")
bad_cases["not a report"] = ([arr], "array.json")
v9 = os.path.join(tmp, "v9.json")
d = copy.deepcopy(base)
d["schema"] = "claimcheck.report/9"
save(v9, d)
bad_cases["an unknown schema version"] = ([v9], "schema")
bad_cases["the same machine and commit twice"] = ([mine, mine], "same machine")
norec = os.path.join(tmp, "norec.json")
d = copy.deepcopy(base)
del d["records"]["commit"]
save(norec, d)
bad_cases["no commit record"] = ([norec], "records.commit")
broken = os.path.join(tmp, "broken.json")
open(broken, "w").write('{"schema": "claimcheck.report/1", "claims": [')
bad_cases["malformed JSON"] = ([broken], "broken.json")
bad_cases["a missing file"] = ([os.path.join(tmp, "nope.json")], "nope.json")
for what, (files, needle) in bad_cases.items():
    r = run(cc, "matrix", *files, "--out", out)
    err = r.stderr.strip()
    t.check(r.returncode == 2 and len(err.splitlines()) == 1 and needle in err,
            f"{what}: exit {r.returncode}, one line naming it ({err!r})")
t.check(before == {f: open(os.path.join(out, f), "rb").read() for f in os.listdir(out)}, "the previous matrix is untouched")
shutil.rmtree(tmp)
t.finish()
