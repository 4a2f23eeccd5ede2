"""claimcheck compare OLD NEW on synthetic report pairs: a regression (a claim's status, a figure's comparison, a
benchmark slower by a Mann-Whitney U test of its repetitions) exits 1 and is named; no regression exits 0; a claim
in one report only, or judged on other statements (a partial run), is listed and not judged unless --all; bad input
exits 2 with one line naming the file and the field, and writes nothing."""
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
    "benchmarks": [],
}


def samples(ratio, jitter, n=9):
    """n repetitions around ratio: the median is ratio, the others spread by +-jitter (relative), deterministic."""
    return [ratio * (1 + jitter * (k - n // 2) / (n // 2)) for k in range(n)]


BASE["benchmarks"] = [
    {"name": "causal attention fp32 v3_register vs PyTorch SDPA, T=1024", "ratio": 2.0, "samples": samples(2.0, 0.01)},
    {"name": "NF4 decode chain time / bf16 decode chain time", "ratio": 0.6, "samples": samples(0.6, 0.01)},
    {"name": "bf16 decode chain bytes/s as a share of the read bandwidth", "ratio": 0.8, "samples": samples(0.8, 0.1)},
]


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
# A claim in one report only: listed, not judged by default (a partial run); --all judges it.
compare(variant(lambda d: d["claims"].pop(0)), what="a claim disappears (not judged)", code=0,
        needles=["`ch04.full_finetune_gb` | pass | absent | not compared | only in OLD"], absent=["REGRESSION"])
compare(variant(lambda d: d["claims"].pop(0)), "--all", what="a claim disappears (--all)", code=1,
        needles=["`ch04.full_finetune_gb` | pass | absent | **regression**"])
compare(variant(lambda d: d["claims"].append(claim("ch05.new_claim", "error", 1.0, reason="threw"))), "--all",
        what="a new claim errs (--all)", code=1, needles=["`ch05.new_claim` | absent | error | **regression**"])
compare(variant(lambda d: d["claims"].append(claim("ch05.new_claim", "error", 1.0, reason="threw"))),
        what="a new claim errs (not judged)", code=0, needles=["`ch05.new_claim` | absent | error | not compared"])
compare(variant(lambda d: d["claims"].append(claim("ch05.new_claim", "pass", 1.0))), "--all",
        what="a new claim passes", code=0, needles=["`ch05.new_claim` | absent | pass | added"])


# A partial run: NEW judged ch06.decode_ms on its headline only (an analytic-only run), which passed; OLD judged its
# parts too and failed. Not an improvement unless --all says so.
def partial(d):
    c = find(d, "ch06.decode_ms")
    c["status"], c["details"]["measurements"][0]["ok"] = "pass", True
    c["details"]["measurements"] = c["details"]["measurements"][:1]


compare(variant(partial), what="a partial run", code=0,
        needles=["`ch06.decode_ms` | fail | pass | not compared | the reports judged different statements (2 in OLD, 1 in NEW"],
        absent=["improvement |"])
compare(variant(partial), "--all", what="a partial run (--all)", code=0, needles=["`ch06.decode_ms` | fail | pass | improvement"])


def to_pass(d):
    c = find(d, "ch06.decode_ms")
    c["status"], c["details"]["measurements"][0]["ok"] = "pass", True


compare(variant(to_pass), what="fail -> pass", code=0, needles=["`ch06.decode_ms` | fail | pass | improvement",
                                                                "moved back within its tolerance"])


# Hatches (issue 32): a claim that passed and is now an expected failure, a statement judged by another variant or
# moved onto an expected failure, a statement left pending in a full run: each a regression, named.
def to_xfail(d):
    c = find(d, "ch04.full_finetune_gb")
    c["status"], c["reason"] = "xfail", "expected failure of value: refuted here"
    c["details"]["measurements"][0].update({"ok": False, "expected_failure": "refuted here"})


compare(variant(to_xfail), what="pass -> xfail", code=1, needles=["`ch04.full_finetune_gb` | pass | xfail | **regression**"])


def with_variant(when):
    def edit(d):
        find(d, "ch04.full_finetune_gb")["details"]["measurements"][1]["variant"] = {"when": when, "because": "b"}
    return edit


BASE_V = variant(with_variant("default"))
OLD_V = write("old_v", BASE_V)


def compare_v(new, what, needles):
    r = run(cc, "compare", OLD_V, write("new_v", new))
    t.check(r.returncode == 1 and all(n in r.stdout for n in needles), f"{what}: exit {r.returncode}\n{r.stdout}")


switched = copy.deepcopy(BASE_V)
with_variant("isa:avx512_bf16")(switched)
compare_v(switched, "a variant switch", ["`ch04.full_finetune_gb` | pass | pass | **regression**",
                                         "params is judged by another variant ('default' then 'isa:avx512\\_bf16')"])
onto_xfail = copy.deepcopy(BASE_V)
find(onto_xfail, "ch04.full_finetune_gb")["details"]["measurements"][1]["expected_failure"] = "refuted"
compare_v(onto_xfail, "a statement onto an expected failure", ["params became an expected failure"])
now_pending = copy.deepcopy(BASE_V)
c = find(now_pending, "ch04.full_finetune_gb")
c["details"]["measurements"][1]["compared"] = False
c["details"]["pending"] = ["the measured part: its module did not load"]
compare_v(now_pending, "a statement now pending", ["params was judged and is now pending"])
partial_status = copy.deepcopy(now_pending)
find(partial_status, "ch04.full_finetune_gb")["status"] = "partial"
r = run(cc, "compare", OLD_V, write("new_v", partial_status), "--all")
t.check(r.returncode == 1 and "`ch04.full_finetune_gb` | pass | partial | **regression**" in r.stdout,
        f"pass -> partial (--all): exit {r.returncode}\n{r.stdout}")
# The same without --all: NEW judged fewer statements, but a partial run hides improvements, never a regression.
r = run(cc, "compare", OLD_V, write("new_v", partial_status))
t.check(r.returncode == 1 and "`ch04.full_finetune_gb` | pass | partial | **regression**" in r.stdout,
        f"pass -> partial: exit {r.returncode}\n{r.stdout}")


def to_error_unjudged(d):
    c = find(d, "ch04.full_finetune_gb")
    c["status"], c["reason"] = "error", "the check threw: probe refused"
    for m in c["details"]["measurements"]:
        m["compared"] = False


compare(variant(to_error_unjudged), what="pass -> error, nothing judged", code=1,
        needles=["`ch04.full_finetune_gb` | pass | error | **regression**"])


# pass -> partial where NEW's run asked for analytic work only (every measured part pending by selection): not judged.
analytic_only = copy.deepcopy(partial_status)
analytic_only["records"]["config"] = {"labels": ["analytic"]}
r = run(cc, "compare", OLD_V, write("new_v", analytic_only))
t.check(r.returncode == 0 and "`ch04.full_finetune_gb` | pass | partial | not compared" in r.stdout,
        f"pass -> partial in an analytic-only run: exit {r.returncode}\n{r.stdout}")


def to_skip(d):
    c = find(d, "ch04.full_finetune_gb")
    c["status"], c["reason"], c["details"] = "skip", "LibTorch not found", {}


compare(variant(to_skip), what="pass -> skip in a run that selected it", code=1,
        needles=["`ch04.full_finetune_gb` | pass | skip | **regression**"])


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


# Benchmarks: each row's 9 repetitions against OLD's in a U test. A speed-up that fell, a time ratio that grew, one
# that fell, a move inside the repetitions' spread, a steady move under the margin, too few repetitions, none.
def bench(i, ratio, jitter=0.01, n=9, **kw):
    def edit(d):
        d["benchmarks"][i]["ratio"] = ratio
        d["benchmarks"][i]["samples"] = samples(ratio, jitter, n)
        d["benchmarks"][i].update(kw)
    return variant(edit)


compare(bench(0, 1.6), what="speed-up slower", code=1, needles=["-20 %", "**slower (regression)**", "9 / 9"])
compare(bench(1, 0.75), what="time ratio slower", code=1, needles=["+25 %", "**slower (regression)**"])
compare(bench(1, 0.45), what="time ratio faster", code=0, needles=["-25 %", "| faster |"])
compare(bench(2, 0.78, jitter=0.1), what="within the repetitions' spread", code=0, needles=["-2.5 %", "| within noise |"],
        absent=["REGRESSION"])
compare(bench(0, 1.94), what="a steady move under the margin", code=0, needles=["-3 %", "| within margin |"],
        absent=["REGRESSION"])
compare(bench(0, 1.6, n=3), what="3 repetitions", code=0,
        needles=["inconclusive: 9 and 3 repetitions: the U test needs 9 on each side"], absent=["REGRESSION"])
compare(variant(lambda d: d["benchmarks"][0].pop("samples")), what="no repetitions recorded", code=0,
        needles=["inconclusive: 9 and 0 repetitions"])

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
expect_error(variant(lambda d: d["benchmarks"][0].update(samples=[1, "2"])), "benchmarks[0].samples[1]",
             "a non-numeric repetition")
expect_error(variant(lambda d: d.update(benchmarks={})), "benchmarks", "benchmarks not an array")
# The OLD report is checked as closely as NEW, and named when it is the bad one.
expect_error(BASE, "claims[0].measured.value", "bad OLD",
             old=write("badold", variant(lambda d: d["claims"][0]["measured"].update(value={"v": 1}))))
r = run(cc, "compare", OLD)
t.check(r.returncode == 2 and r.stderr.count("\n") == 1, f"one report only: {r.returncode} {r.stderr!r}")

shutil.rmtree(tmp)
t.finish()
