"""claimcheck compare OLD NEW on synthetic report pairs: a regression (a claim's status, a figure's comparison, a
benchmark slower beyond its noise) exits 1 and is named; no regression exits 0; bad input exits 2 with one line
naming the file and the field, and writes nothing."""
import copy
import json
import os
import shutil
import tempfile

from clitest import Tally, args, load, run, save

a = args()
t = Tally()
cc = a.claimcheck
tmp = tempfile.mkdtemp(prefix="cc_compare_")


def claim(cid, status, value, unit="GB", parts=(), ok=True, reason="as stated"):
    ms = [{"name": "value", "value": value, "unit": unit, "compared": True, "ok": ok, "verdict": reason,
           "stated": value, "why": "stated digits"}]
    ms += [dict(p) for p in parts]
    return {"id": cid, "chapter": cid[:4], "kind": ["analytic"], "status": status, "reason": reason,
            "not_implemented": False, "stated": {"value": value, "unit": unit},
            "measured": {"value": value, "unit": unit}, "details": {"measurements": ms}}


BASE = {
    "schema": "claimcheck.report/1", "generated_at": "2026-01-01T00:00:00Z",
    "records": {"commit": {"sha": "0123456789abcdef", "dirty": False}}, "summary": {},
    "claims": [
        claim("ch04.full_finetune_gb", "pass", 128.5,
              parts=[{"name": "params", "value": 8.03, "unit": "B params", "compared": True, "ok": True}]),
        claim("ch04.activations_gib", "xfail", 24.0, unit="GiB", ok=False, reason="expected failure: 48.1 h"),
        claim("ch06.decode_ms", "fail", 50.0, unit="ms", ok=False, reason="50 ms outside the band",
              parts=[{"name": "bandwidth", "value": 20.0, "unit": "GB/s", "compared": True, "ok": True},
                     {"name": "bytes", "value": 872.0, "unit": "MB", "compared": False}]),
        {"id": "ch06.gpu_only", "chapter": "ch06", "kind": ["measured"], "status": "skip", "reason": "no GPU",
         "not_implemented": False, "stated": {"value": 1, "unit": "x"}, "measured": None, "details": {}},
    ],
    "benchmarks": [
        {"name": "causal attention fp32 v3_register vs PyTorch SDPA, T=1024", "ratio": 2.0, "spread": 0.01},
        {"name": "NF4 decode chain time / bf16 decode chain time", "ratio": 0.6, "spread": 0.01},
        {"name": "bf16 decode chain bytes/s as a share of the read bandwidth", "ratio": 0.8, "spread": 0.1},
    ],
}


def find(report, cid):
    return next(c for c in report["claims"] if c["id"] == cid)


def write(name, report):
    p = os.path.join(tmp, name, "report.json")
    os.makedirs(os.path.dirname(p), exist_ok=True)
    save(p, report)
    return p


OLD = write("old", BASE)


def compare(new, *extra, what, code, needles=(), absent=()):
    """Runs compare OLD NEW (a report object, or a path); checks the exit status and what stdout names."""
    path = new if isinstance(new, str) else write("new", new)
    r = run(cc, "compare", OLD, path, *extra)
    ok = r.returncode == code and all(n in r.stdout for n in needles) and not any(n in r.stdout for n in absent)
    t.check(ok, f"{what}: exit {r.returncode} (want {code}), stderr {r.stderr.strip()!r}, stdout\n{r.stdout}")
    return r


def variant(edit):
    d = copy.deepcopy(BASE)
    edit(d)
    return d


# Identical reports: exit 0, every claim listed as unchanged, every benchmark unchanged.
compare(BASE, what="unchanged", code=0, needles=["No regression", "Unchanged (4)", "`ch04.full_finetune_gb` (pass)"],
        absent=["REGRESSION"])


def to_fail(d):
    c = find(d, "ch04.full_finetune_gb")
    c["status"], c["reason"] = "fail", "128.9 GB does not round to 128.5"
    c["measured"]["value"] = c["details"]["measurements"][0]["value"] = 128.9
    c["details"]["measurements"][0]["ok"] = False


compare(variant(to_fail), what="pass -> fail", code=1,
        needles=["REGRESSION", "`ch04.full_finetune_gb` | pass | fail | **regression**", "does not round",
                 "moved out of its tolerance", "+0.3 %"])


def to_xpass(d):
    c = find(d, "ch04.activations_gib")
    c["status"], c["details"]["measurements"][0]["ok"] = "xpass", True


compare(variant(to_xpass), what="xfail -> xpass", code=1, needles=["`ch04.activations_gib` | xfail | xpass | **regression**"])
compare(variant(lambda d: d["claims"].pop(0)), what="a claim disappears", code=1,
        needles=["`ch04.full_finetune_gb` | pass | absent | **regression**"])
compare(variant(lambda d: d["claims"].append(claim("ch05.new_claim", "error", 1.0, reason="threw"))),
        what="a new claim errs", code=1, needles=["`ch05.new_claim` | absent | error | **regression**"])
compare(variant(lambda d: d["claims"].append(claim("ch05.new_claim", "pass", 1.0))),
        what="a new claim passes", code=0, needles=["`ch05.new_claim` | absent | pass | added"])


def to_pass(d):
    c = find(d, "ch06.decode_ms")
    c["status"], c["details"]["measurements"][0]["ok"] = "pass", True


compare(variant(to_pass), what="fail -> pass", code=0, needles=["`ch06.decode_ms` | fail | pass | improvement",
                                                                "moved back within its tolerance"])


# A part breaks inside a claim that was already failing: the status stays, the figure is the regression.
def part_breaks(d):
    ms = find(d, "ch06.decode_ms")["details"]["measurements"]
    ms[1]["value"], ms[1]["ok"] = 12.0, False


compare(variant(part_breaks), what="a part moves out of its tolerance", code=1,
        needles=["| `ch06.decode_ms` | bandwidth | 20 GB/s | 12 GB/s | -40 % | **moved out of its tolerance** |"])


# A figure no comparison judged: the move is shown, with no tolerance invented for it.
def uncompared_moves(d):
    find(d, "ch06.decode_ms")["details"]["measurements"][2]["value"] = 900.0


compare(variant(uncompared_moves), what="an uncompared figure moves", code=0,
        needles=["| `ch06.decode_ms` | bytes | 872 MB | 900 MB | +3.2 % | no tolerance recorded |"])


# Benchmarks: a speed-up that fell beyond 2 x its noise, a time ratio that grew, a move within the noise, and a row
# whose noise exceeds the margin.
def bench(i, ratio, **kw):
    def edit(d):
        d["benchmarks"][i]["ratio"] = ratio
        d["benchmarks"][i].update(kw)
    return variant(edit)


compare(bench(0, 1.6), what="speed-up slower beyond noise", code=1, needles=["-20 %", "**slower (regression)**"])
compare(bench(1, 0.75), what="time ratio slower beyond noise", code=1, needles=["+25 %", "**slower (regression)**"])
compare(bench(1, 0.45), what="time ratio faster", code=0, needles=["-25 %", "| faster |"])
compare(bench(0, 1.98), what="within noise", code=0, needles=["-1 %", "| within noise |"], absent=["REGRESSION"])
compare(bench(2, 0.72), what="noise exceeds the margin", code=0,
        needles=["-10 %", "inconclusive: 2 x the noise (28.3 %) exceeds the margin (5 %)"], absent=["REGRESSION"])
compare(bench(2, 0.4), what="a slowdown beyond even a large noise", code=1, needles=["-50 %", "**slower (regression)**"])
compare(bench(0, 1.6, cv=0.2), what="the CV taken over the spread", code=0, needles=["inconclusive"])
compare(bench(0, 1.6, spread=None), what="no noise recorded", code=0, needles=["inconclusive: no noise measured"])
compare(bench(0, 1.6, spread=0.0), what="a spread of 0 (one repetition)", code=0,
        needles=["inconclusive: no noise measured"])

# --json and --markdown: files written, the JSON lists the changes; nothing on stdout with --markdown.
jf, mf = os.path.join(tmp, "out", "compare.json"), os.path.join(tmp, "out", "compare.md")
r = compare(variant(to_fail), "--json", jf, "--markdown", mf, what="--json and --markdown", code=1)
t.check(r.stdout == "", f"--markdown FILE keeps stdout empty: {r.stdout!r}")
try:
    j = load(jf)
    regs = [c["id"] for c in j["claims"] if c["change"] == "regression"]
    t.check(j["schema"] == "claimcheck.compare/1" and j["regression"] is True and regs == ["ch04.full_finetune_gb"]
            and j["claims"][0]["old"] == "pass" and j["claims"][0]["new"] == "fail"
            and any(f["figure"] == "value" and f["beyond_tolerance"] for f in j["figures"])
            and len(j["benchmarks"]) == 3 and j["summary"]["claims"]["unchanged"] == 3,
            f"JSON lists the changes: {json.dumps(j)[:600]}")
    t.check("`ch04.full_finetune_gb` | pass | fail" in open(mf, encoding="utf-8").read(), "Markdown file written")
except (OSError, ValueError, KeyError, IndexError, StopIteration) as e:
    t.check(False, f"--json / --markdown output: {e!r}")
t.check(not [f for f in os.listdir(os.path.dirname(jf)) if f.endswith(".tmp")], "no .tmp file left")


# Bad input: exit 2, one line naming the file and the field, nothing written.
def expect_error(new, field, what, old=None):
    path = new if isinstance(new, str) else write("bad", new)
    out = os.path.join(tmp, "never", "compare.json")
    r = run(cc, "compare", old or OLD, path, "--json", out, "--markdown", out + ".md")
    err = r.stderr.strip()
    named = old or path  # where OLD is given, it is the bad one
    ok = (r.returncode == 2 and err.count("\n") == 0 and named in err and f"field '{field}'" in err
          and r.stdout == "" and not os.path.exists(os.path.dirname(out)))
    t.check(ok, f"{what}: exit {r.returncode}, stderr {err!r}, stdout {r.stdout[:200]!r}")


def text_file(name, text):
    p = os.path.join(tmp, name)
    open(p, "w", encoding="utf-8").write(text)
    return p


expect_error(text_file("malformed.json", '{"schema": "claimcheck.report/1", "claims": [ {"id": '), "(json)", "malformed JSON")
expect_error(text_file("empty.json", ""), "(json)", "empty file")
expect_error("/nonexistent/report.json", "(file)", "missing NEW")
expect_error(BASE, "(file)", "missing OLD", old="/nonexistent/report.json")
expect_error(variant(lambda d: d.update(schema="claimcheck.report/0")), "schema", "wrong schema")
expect_error(variant(lambda d: d.pop("schema")), "schema", "no schema")
expect_error(text_file("list.json", "[1, 2]"), "(json)", "not an object")
expect_error(variant(lambda d: d.update(claims={"a": 1})), "claims", "claims not an array")
expect_error(variant(lambda d: d["claims"][1].pop("id")), "claims[1].id", "a claim without id")
expect_error(variant(lambda d: d["claims"].append(copy.deepcopy(d["claims"][0]))), "claims[4].id", "duplicate id")
expect_error(variant(lambda d: d["claims"][0].update(status="passed")), "claims[0].status", "unknown status")
expect_error(variant(lambda d: d["claims"][0]["measured"].update(value="128.5")), "claims[0].measured.value",
             "a non-numeric value")
expect_error(variant(lambda d: d["claims"][2]["details"]["measurements"][1].update(value=[20])),
             "claims[2].details.measurements[1].value", "a non-numeric part")
expect_error(variant(lambda d: d["benchmarks"][1].update(ratio="0.6")), "benchmarks[1].ratio", "a non-numeric ratio")
expect_error(variant(lambda d: d["benchmarks"][0].update(spread="1%")), "benchmarks[0].spread", "a non-numeric spread")
expect_error(variant(lambda d: d.update(benchmarks={})), "benchmarks", "benchmarks not an array")
# The OLD report is checked as closely as NEW, and named when it is the bad one.
expect_error(BASE, "claims[0].measured.value", "bad OLD",
             old=write("badold", variant(lambda d: d["claims"][0]["measured"].update(value={"v": 1}))))
r = run(cc, "compare", OLD)
t.check(r.returncode == 2 and r.stderr.count("\n") == 1, f"one report only: {r.returncode} {r.stderr!r}")

shutil.rmtree(tmp)
t.finish()
