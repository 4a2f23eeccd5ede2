"""Bad input gets one line on stderr naming the file and the field, and exit status 2."""
import os
import shutil
import tempfile

from clitest import Tally, args, copy_expected, load, run, save

a = args()
t = Tally()
cc = a.claimcheck
bad = os.path.join(a.root, "tests", "data", "bad")


def expect_error(argv, *needles, what):
    r = run(cc, *argv)
    err = r.stderr.strip()
    ok = r.returncode == 2 and err.count("\n") == 0 and all(n in err for n in needles)
    t.check(ok, f"{what}: exit {r.returncode}, stderr {err!r}")


# The CLI itself.
expect_error(["run", "--claim", "ch04.no_such_claim"], "--claim", "ch04.no_such_claim", what="unknown id")
expect_error(["run", "--label", "tpu"], "--label", "tpu", what="unknown label")
expect_error(["run", "--chapter", "ch09"], "--chapter", what="unknown chapter")
expect_error(["run", "--frobnicate"], "--frobnicate", what="unknown option")
expect_error(["explode"], "explode", what="unknown command")
# "did you mean" where a known word is a typo or a chapter away, and nothing where none is close.
expect_error(["rn"], "unknown command 'rn'; did you mean 'run'?", what="a mistyped command")
expect_error(["run", "--claim", "decode_measured"], "did you mean 'ch06.decode_measured'?", what="an id without its chapter")
expect_error(["run", "--claim", "ch04.lora_bg"], "did you mean 'ch04.lora_gb'?", what="a mistyped id")
expect_error(["run", "--label", "mesured"], "did you mean 'measured'?", what="a mistyped label")
expect_error(["run", "--chapter", "ch6"], "did you mean 'ch06'?", what="a chapter without its zero")
exp_typo = os.path.join(tempfile.mkdtemp(prefix="cc_typo_"), "expected")
shutil.copytree(os.path.join(a.root, "expected"), exp_typo)
typo = os.path.join(exp_typo, "ch06", "decode_ms.json")
text = open(typo, encoding="utf-8").read().replace('"also":', '"alsoo":')
open(typo, "w", encoding="utf-8").write(text)
expect_error(["run", "--claim", "ch06.decode_ms", "--expected", exp_typo], typo, "field 'alsoo'",
             "did you mean 'also'?", what="a mistyped key in an expected file")
shutil.rmtree(os.path.dirname(exp_typo))
r = run(cc, "run", "--claim", "zzz")
t.check(r.returncode == 2 and "did you mean" not in r.stderr, f"no suggestion where none is close: {r.stderr!r}")
expect_error(["run", "--seed", "x1"], "--seed", what="bad seed")
# A run judged on some statements (a planted-fault test's): of one claim, each a statement it states; never a pass.
expect_error(["run", "--claim", "ch06.decode_ms", "--statement", "weight_byte"], "decode_ms.json", "weight_byte",
             "did you mean 'weight_bytes'?", what="a statement the claim does not state")
expect_error(["run", "--claim", "ch04.*", "--statement", "value"], "--statement", "one claim",
             what="--statement over several claims")
r = run(cc, "run", "--claim", "ch06.decode_ms", "--statement", "weight_bytes")
t.check(r.returncode == 0 and r.stdout.startswith("PARTIAL") and "only these statements were judged" in r.stdout,
        f"a run judged on one statement reads partial: exit {r.returncode} {r.stdout.strip()[:300]}")
expect_error(["run", "--expected", "/nonexistent/dir"], "/nonexistent/dir", what="missing expected dir")

# account: configs that are not (supported) decoder configs, or are broken.
for f, field in [("bert-base.json", "model_type"), ("negative-hidden.json", "hidden_size"),
                 ("string-layers.json", "num_hidden_layers"), ("missing-vocab.json", "vocab_size"),
                 ("truncated.json", "(json)"), ("bad-kv-heads.json", "num_key_value_heads"),
                 ("huge-layers.json", "num_hidden_layers"), ("huge-model.json", "num_hidden_layers")]:
    p = os.path.join(bad, f)
    expect_error(["account", "--config", p], p, f"field '{field}'", what=f"account {f}")
hw = os.path.join(a.root, "reference", "data", "hardware", "h100-sxm.json")
expect_error(["account", "--config", hw], hw, "field 'model_type'", what="a file that is not a config")
expect_error(["account", "--config", "/nonexistent.json"], "/nonexistent.json", what="missing config")
cfg = os.path.join(a.root, "reference", "data", "configs", "llama-3-8b.json")
expect_error(["account", "--config", cfg, "--lora-r", "-3"], "--lora-r", what="negative rank")
expect_error(["account", "--config", cfg, "--hardware", cfg], cfg, "field 'name'", what="config as hardware")
expect_error(["account"], "--config", what="no config")

# Careless values: a JSON nested 100,000 deep (its error message's dump crashed), a unit typed as a plain number,
# a misspelt key of a format (read as its default), a sequence of 2^63 tokens, an empty or NaN option value.
scratch = tempfile.mkdtemp(prefix="cc_careless_")
deep = os.path.join(scratch, "deep.json")
open(deep, "w").write('{"hidden_size": ' + "[" * 100000 + "]" * 100000 + "}")
expect_error(["account", "--config", deep], deep, "field '(json)'", "nested deeper", what="a config nested 1e5 deep")
hw_tb = os.path.join(scratch, "tb.json")
save(hw_tb, dict(load(hw), hbm_bandwidth_bytes_per_s=3.35))
expect_error(["account", "--config", cfg, "--hardware", hw_tb], hw_tb, "field 'hbm_bandwidth_bytes_per_s'",
             what="a bandwidth typed in TB/s")
quant = os.path.join(scratch, "q.json")
qd = load(os.path.join(a.root, "reference", "data", "quant", "nf4-bnb-default.json"))
qd["keep_bf_16"] = qd.pop("keep_bf16")
save(quant, qd)
expect_error(["account", "--config", cfg, "--quant", quant], quant, "field 'keep_bf_16'", what="a misspelt format key")
expect_error(["account", "--config", cfg, "--tokens", str(2**63 - 1)], "--tokens", what="2^63 tokens")
expect_error(["run", "--claim", "ch06.ridge", "--report", ""], "--report", "empty", what="an empty --report")
expect_error(["run", "--claim", "ch06.ridge", "--timeout", "nan"], "--timeout", what="a NaN timeout")
# What a run writes at its end is tried before its claims run; compare never writes over what it compares.
bench = os.path.join(scratch, "bench.json")
save(bench, [{"name": "x", "ratio": "fast", "higher_is_better": True}])
expect_error(["run", "--claim", "ch06.ridge", "--benchmarks", bench, "--report", os.path.join(scratch, "r")], bench,
             "field 'rows[0].ratio'", what="a benchmark ratio that is not a number")
afile = os.path.join(scratch, "afile")
open(afile, "w").write("x")
expect_error(["run", "--claim", "ch06.ridge", "--report", afile], afile, "field '--report'", what="--report a file")
rep = os.path.join(scratch, "rep")
r = run(cc, "run", "--claim", "ch06.ridge", "--report", rep, "--quiet")
t.check(r.returncode == 0, f"a report to compare: {r.returncode} {r.stderr.strip()}")
before = open(os.path.join(rep, "report.json"), "rb").read()
expect_error(["compare", os.path.join(rep, "report.json"), os.path.join(rep, "report.json"), "--json",
              os.path.join(rep, "report.json")], "field '--json'", what="compare's output over its input")
out = os.path.join(scratch, "out")
expect_error(["compare", os.path.join(rep, "report.json"), os.path.join(rep, "report.json"), "--json", out,
              "--markdown", out], out, "named twice", what="compare's two outputs one file")
t.check(open(os.path.join(rep, "report.json"), "rb").read() == before and not os.path.exists(out)
        and not os.path.exists(out + ".tmp"), "compare wrote nothing")
broken = os.path.join(scratch, "dirty.json")
rd = load(os.path.join(rep, "report.json"))
rd["records"]["commit"]["dirty"] = "yes"
save(broken, rd)
expect_error(["matrix", broken, "--out", os.path.join(scratch, "m")], broken, what="a report field of the wrong type")
shutil.rmtree(scratch)

# Expected files: malformed, truncated, missing unit, NaN-like value, missing why.
tmp, exp = copy_expected(a.root)
target = os.path.join(exp, "ch04", "full_finetune_gb.json")
original = open(target, encoding="utf-8").read()


def with_file(text, field, what):
    open(target, "w", encoding="utf-8").write(text)
    expect_error(["run", "--claim", "ch06.ridge", "--expected", exp], target, f"field '{field}'", what=what)
    open(target, "w", encoding="utf-8").write(original)


with_file(original[: len(original) // 2], "(json)", "truncated expected file")
with_file("{ not json", "(json)", "malformed expected file")
d = load(target); del d["unit"]
with_file(__import__("json").dumps(d), "unit", "missing unit")
d = load(target); d["value"] = "NaN"
with_file(__import__("json").dumps(d), "value", "NaN value")
d = load(target); del d["compare"]["why"]
with_file(__import__("json").dumps(d), "compare.why", "tolerance without why")
d = load(target); d["also"]["params"]["compare"]["step"] = -1
with_file(__import__("json").dumps(d), "also.params.compare.step", "negative step")
# A typo in a key: the statements under it must not be dropped with a PASS (issue 26's `alsoo`), nor a key at the
# wrong level (evidence beside compare, not in it), nor a key its rule does not read (min under close).
d = load(target); d["alsoo"] = d.pop("also")
with_file(__import__("json").dumps(d), "alsoo", "a misspelt also")
d = load(target); d["also"]["params"]["evidence"] = "measured somewhere"
with_file(__import__("json").dumps(d), "also.params.evidence", "evidence beside compare")
d = load(target); d["compare"] = {"rule": "close", "rtol": 0.1, "min": 3, "why": "x"}
with_file(__import__("json").dumps(d), "compare.min", "a key the rule does not read")
d = load(target); d["compare"]["basis"] = "obvious"
with_file(__import__("json").dumps(d), "compare.basis", "an unknown basis")
d = load(target); d["inputs"]["config"] = "reference/data/configs/none.json"
open(target, "w", encoding="utf-8").write(__import__("json").dumps(d))
r = run(cc, "run", "--claim", "ch04.full_finetune_gb", "--expected", exp)
t.check(r.returncode == 2 and "inputs.config" in r.stdout and "ERROR" in r.stdout,
        f"missing input file is an error naming the field: {r.returncode} {r.stdout!r}")
open(target, "w", encoding="utf-8").write(original)

# A check whose expected file is missing, and an expected file without a check.
os.remove(target)
expect_error(["run", "--claim", "ch06.ridge", "--expected", exp], "ch04.full_finetune_gb", "no expected file",
             what="check without expected file")
open(target, "w", encoding="utf-8").write(original)
shutil.rmtree(tmp)
t.finish()
