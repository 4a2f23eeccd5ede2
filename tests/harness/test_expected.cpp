#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "claimcheck/probe.h"
#include "errors.h"
#include "expected.h"
#include "outcome.h"
#include "runner.h"

using namespace claimcheck;
namespace fs = std::filesystem;

namespace {
// This process's scratch folder, <tmp>/cc_expected_<pid>, removed when the process exits (each test of the binary
// runs in a process of its own under ctest).
struct Scratch {
  fs::path root = fs::temp_directory_path() / ("cc_expected_" + std::to_string(::getpid()));
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

// Writes text to <tmp>/ch04/<name>.json and returns the path.
fs::path write(const std::string& name, const std::string& text) {
  static Scratch scratch;
  fs::path dir = scratch.root / "ch04";
  fs::create_directories(dir);
  fs::path p = dir / (name + ".json");
  std::ofstream(p) << text;
  return p;
}

std::string valid(const std::string& name, const std::string& tweak = "") {
  return R"({"schema": 1, "id": "ch04.)" + name + R"(", "title": "t", "source": "s", "kind": ["analytic"],
  "requires": [], "value": 128.5, "unit": "GB", "compare": {"rule": "rounded", "step": 0.1, "why": "w"})" +
         tweak + "}";
}

// The error message names the file and the field.
void expect_error(const std::string& name, const std::string& text, const std::string& field) {
  const fs::path p = write(name, text);
  try {
    load_expected_file(p);
    FAIL() << "no error for " << name;
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(p.string()), std::string::npos) << m;
    EXPECT_NE(m.find("field '" + field + "'"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  }
}
}  // namespace

TEST(Expected, ParsesAValidFile) {
  Expected e = load_expected_file(write("ok", valid("ok", R"(, "also": {"params": {"value": 8.03, "unit": "B params",
    "compare": {"rule": "close", "rtol": 0.01, "why": "w"}}}, "inputs": {"config": "x.json"})")));
  EXPECT_EQ(e.id, "ch04.ok");
  EXPECT_EQ(e.chapter, "ch04");
  ASSERT_EQ(e.statements.size(), 2u);
  EXPECT_EQ(e.statements[0].name, "value");
  EXPECT_EQ(e.statements[1].name, "params");
  ASSERT_TRUE(std::holds_alternative<rule::Close>(e.statements[1].compare.rule));
  EXPECT_EQ(std::get<rule::Close>(e.statements[1].compare.rule).rtol, 0.01);
  EXPECT_EQ(e.inputs["config"], "x.json");
}

// A claim-level expected failure is the stated value's: the other statements must still hold.
TEST(Expected, ClaimLevelXfailIsTheStatedValues) {
  Expected e = load_expected_file(write("xfv", valid("xfv", R"(, "expect": "xfail", "xfail_reason": "r",
    "also": {"law": {"value": true, "unit": "bool", "compare": {"rule": "equal", "why": "w"}}})")));
  ASSERT_EQ(e.statements.size(), 2u);
  EXPECT_TRUE(e.statements[0].xfail);
  EXPECT_EQ(e.statements[0].xfail_reason, "r");
  EXPECT_FALSE(e.statements[1].xfail);
  // The interval rule names the two derived values it reads.
  Expected i =
      load_expected_file(write("iv", valid("iv").replace(valid("iv").find(R"("rule": "rounded", "step": 0.1)"), 30,
                                                         R"("rule": "interval", "min_from": "a", "max_from": "b")")));
  const auto* iv = std::get_if<rule::Interval>(&i.statements[0].compare.rule);
  ASSERT_NE(iv, nullptr);
  EXPECT_EQ(iv->min_from, "a");
  EXPECT_EQ(iv->max_from, "b");
  expect_error("ivm",
               valid("ivm").replace(valid("ivm").find(R"("rule": "rounded", "step": 0.1)"), 30,
                                    R"("rule": "interval", "min_from": "a")"),
               "compare.max_from");
  // One spelling for a range's ends: the old ones are unknown keys.
  expect_error("ivo",
               valid("ivo").replace(valid("ivo").find(R"("rule": "rounded", "step": 0.1)"), 30,
                                    R"("rule": "interval", "lo_from": "a")"),
               "compare.lo_from");
}

TEST(Expected, BadInputNamesFileAndField) {
  expect_error("trunc", valid("trunc").substr(0, 40), "(json)");
  expect_error("nounit", R"({"schema": 1, "id": "ch04.nounit", "title": "t", "source": "s", "kind": ["analytic"],
    "requires": [], "value": 1, "compare": {"rule": "equal", "why": "w"}})",
               "unit");
  expect_error("badunit", valid("badunit").replace(valid("badunit").find("\"GB\""), 4, "\"gigs\""), "unit");
  expect_error("nowhy", R"({"schema": 1, "id": "ch04.nowhy", "title": "t", "source": "s", "kind": ["analytic"],
    "requires": [], "value": 1, "unit": "GB", "compare": {"rule": "rounded", "step": 0.1}})",
               "compare.why");
  expect_error("strval", R"({"schema": 1, "id": "ch04.strval", "title": "t", "source": "s", "kind": ["analytic"],
    "requires": [], "value": "NaN", "unit": "GB", "compare": {"rule": "equal", "why": "w"}})",
               "value");
  expect_error("negtol", R"({"schema": 1, "id": "ch04.negtol", "title": "t", "source": "s", "kind": ["analytic"],
    "requires": [], "value": 1, "unit": "GB", "compare": {"rule": "close", "rtol": -0.1, "why": "w"}})",
               "compare.rtol");
  expect_error("rule", R"({"schema": 1, "id": "ch04.rule", "title": "t", "source": "s", "kind": ["analytic"],
    "requires": [], "value": 1, "unit": "GB", "compare": {"rule": "approx", "why": "w"}})",
               "compare.rule");
  expect_error("schema", valid("schema").replace(11, 1, "2"), "schema");
  expect_error("wrongid", valid("other"), "id");
  expect_error("kind", valid("kind").replace(valid("kind").find("analytic"), 8, "vibes"), "kind");
  expect_error("req", valid("req").replace(valid("req").find("[]"), 2, "[\"tpu\"]"), "requires");
  expect_error("xf", valid("xf", R"(, "expect": "xfail")"), "xfail_reason");
  expect_error("alsounit",
               valid("alsounit", R"(, "also": {"p": {"value": 1, "compare": {"rule": "equal", "why": "w"}}})"),
               "also.p.unit");
  expect_error("boolrule", R"({"schema": 1, "id": "ch04.boolrule", "title": "t", "source": "s", "kind": ["phenomenon"],
    "requires": [], "value": true, "unit": "bool", "compare": {"rule": "close", "rtol": 0.1, "why": "w"}})",
               "compare.rule");
}

// A statement written twice: nlohmann (and Python's json) keep the last of two equal keys, and `also.value` would
// overwrite the claim's own statement's verdict. Each refused, naming the place.
TEST(Expected, AKeyTwiceOrASecondValueStatementIsRefused) {
  const std::string st = R"({"value": 1, "unit": "GB", "compare": {"rule": "equal", "why": "w"}})";
  expect_error("alsovalue", valid("alsovalue", R"(, "also": {"value": )" + st + "}"), "also.value");
  expect_error("twice", valid("twice", R"(, "also": {"p": )" + st + R"(, "p": )" + st + "}"), "also.p");
  expect_error("twicetop", valid("twicetop", R"(, "unit": "GB")"), "unit");
  expect_error("twicedeep",
               valid("twicedeep").replace(valid("twicedeep").find(R"("step": 0.1)"), 11, R"("step": 0.1, "step": 100)"),
               "compare.step");
  expect_error("twicevariant", valid("twicevariant", R"(, "variants": [{"when": "gpu", "because": "b", "because": "c",
                 "compare": {"rule": "equal", "why": "w"}}])"),
               "variants[0].because");
  // Equal keys in two objects are no repeat.
  EXPECT_NO_THROW(load_expected_file(
      write("twoobjects", valid("twoobjects", R"(, "also": {"p": )" + st + R"(, "q": )" + st + "}"))));
}

// An isa: atom names a flag the probe records: a typo (avx512bf16) would read false on every machine.
TEST(Expected, AnIsaFlagTheProbeDoesNotRecordIsRefused) {
  EXPECT_THROW(parse_feature_expr("!isa:avx512bf16"), std::invalid_argument);
  EXPECT_THROW(parse_feature_expr("gpu || isa:avx3"), std::invalid_argument);
  for (const auto& f : probed_isa_flags()) EXPECT_NO_THROW(parse_feature_expr("isa:" + f)) << f;
  // expected/schema.json's `when` pattern lists the same flags.
  std::ifstream in(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected/schema.json");
  const std::string schema((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string list;
  for (const auto& f : probed_isa_flags()) list += (list.empty() ? "" : "|") + f;
  EXPECT_NE(schema.find("isa:(" + list + ")"), std::string::npos) << "schema.json's isa flags differ from the probe's";
}

// A driver (the check is a Python script): its arguments a literal, {seed} or an input that exists, its derived values'
// sources one of three; each mistake one error naming the field.
TEST(Expected, ADriverIsRefusedWhereItsArgumentsOrSourcesAreWrong) {
  const auto with = [](const std::string& name, const std::string& driver) {
    return R"({"schema": 1, "id": "ch04.)" + name + R"(", "title": "t", "source": "s", "kind": ["phenomenon"],
    "requires": ["python"], "value": true, "unit": "bool", "compare": {"rule": "equal", "why": "w"},
    "inputs": {"n": 3, "o": {"a": 1}}, "driver": )" +
           driver + "}";
  };
  const Expected ok = load_expected_file(
      write("drv", with("drv", R"({"script": "checks/ch04/drv.py", "args": ["x", "{seed}", "{inputs.n}"],
      "derives": {"r": "probe"}})")));
  ASSERT_TRUE(ok.driver.has_value());
  EXPECT_EQ(ok.driver->args.size(), 3u);
  EXPECT_EQ(ok.driver->derives.at("r"), Source::probe);
  expect_error("drv1", with("drv1", R"({"script": "/abs/drv.py"})"), "driver.script");
  expect_error("drv2", with("drv2", R"({"script": "checks/ch04/drv2.sh"})"), "driver.script");
  expect_error("drv3", with("drv3", R"({"script": "c.py", "args": ["{inputs.missing}"]})"), "driver.args[0]");
  expect_error("drv4", with("drv4", R"({"script": "c.py", "args": ["x", "{inputs.o}"]})"), "driver.args[1]");
  expect_error("drv5", with("drv5", R"({"script": "c.py", "args": ["{sed}"]})"), "driver.args[0]");
  expect_error("drv6", with("drv6", R"({"script": "c.py", "derives": {"r": "measured"}})"), "driver.derives.r");
  expect_error("drv7", with("drv7", R"({"script": "c.py", "argv": []})"), "driver.argv");
}

TEST(Expected, TheShippedCatalogueLoads) {
  auto cat = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  EXPECT_EQ(cat.size(), 57u);
  for (const auto& [id, e] : cat)
    for (const auto& s : e.statements) EXPECT_FALSE(s.compare.why.empty()) << id << " " << s.name;
}

// An expected failure on the machines of one variant (an ISA, a GPU): read with the variant, refused without its
// reason or with another word than xfail / pass.
TEST(Expected, VariantXfailIsThatVariants) {
  auto variants = [](const std::string& name) {
    return R"({"schema": 1, "id": "ch04.)" + name + R"(", "title": "t", "source": "s", "kind": ["measured"],
  "requires": [], "value": 30, "unit": "x", "variants": [
    {"when": "isa:avx512_bf16", "compare": {"rule": "bound", "max": 3, "why": "w"}},
    {"when": "default", "compare": {"rule": "close", "rtol": 0.1, "why": "w"}, "expect": "xfail", "xfail_reason": "r"}]})";
  };
  const Expected e = load_expected_file(write("vx", variants("vx")));
  ASSERT_EQ(e.statements[0].variants.size(), 2u);
  EXPECT_FALSE(e.statements[0].variants[0].xfail);
  EXPECT_TRUE(e.statements[0].variants[1].xfail);
  EXPECT_EQ(e.statements[0].variants[1].xfail_reason, "r");
  EXPECT_FALSE(e.statements[0].xfail);
  std::string no_reason = variants("vx2");
  no_reason.erase(no_reason.find(R"(, "xfail_reason": "r")"), 21);
  expect_error("vx2", no_reason, "variants[1].xfail_reason");
  std::string other = variants("vx3");
  other.replace(other.find(R"("expect": "xfail")"), 17, R"("expect": "maybe")");
  expect_error("vx3", other, "variants[1].expect");
  // Conditions: well-formed ones load, a typo is an error naming the variant's field.
  for (const char* ok : {"isa:avx512_bf16 || isa:amx_bf16", "derived:nf4_predicted_time_over_bytes>1.25",
                         "!gpu && derived:x<1e-3", "gpu || derived:y>-2", "libtorch && !isa:amx_bf16"}) {
    std::string t = variants("vw");
    t.replace(t.find("isa:avx512_bf16"), 15, ok);
    EXPECT_NO_THROW(load_expected_file(write("vw", t))) << ok;
  }
  for (const char* bad : {"isa:AVX512", "derived:x>>1", "derived:x=1", "gpu||", "cuda", "isa:avx2&&", "",
                          "isa:avx2|gpu", "no-gpu", "(gpu)", "gpu||derived:y>-2", "! gpu", "gpu  && numpy", " gpu"}) {
    std::string t = variants("vwb");
    t.replace(t.find("isa:avx512_bf16"), 15, bad);
    expect_error("vwb", t, "variants[0].when");
  }
}

// "untimed" marks a timed claim's statement about what its run computed: a failure of it stands on a busy machine
// (runner.h interference_may_explain), where a time's failure is run again.
TEST(Expected, AnUntimedStatementFailsWhateverTheMachinesLoad) {
  const std::string also = R"(, "timed": true, "also": {"out": {"value": 0, "unit": "ratio", "untimed": true,
    "compare": {"rule": "bound", "max": 0.001, "why": "w"}}})";
  Expected e = load_expected_file(write("untimed", valid("untimed", also)));
  ASSERT_EQ(e.statements.size(), 2u);
  EXPECT_FALSE(e.statements[0].untimed);
  EXPECT_TRUE(e.statements[1].untimed);
  ClaimResult r;
  r.status = Status::fail;
  Measurement value{"value", 1.0, "GB"}, out{"out", 0.5, "ratio"};
  value.compared = out.compared = true;
  value.ok = false;
  out.ok = true;
  r.measurements = {value, out};
  EXPECT_TRUE(interference_may_explain(e, r));  // only the time failed
  r.measurements[1].ok = false;
  EXPECT_FALSE(interference_may_explain(e, r));  // the output is wrong: no neighbour explains that
  r.measurements[0].ok = true;
  EXPECT_FALSE(interference_may_explain(e, r));
  r.status = Status::error;
  EXPECT_TRUE(interference_may_explain(e, r));
  r.status = Status::pass;
  EXPECT_FALSE(interference_may_explain(e, r));
  // Only a timed claim's statement is untimed; a boolean.
  expect_error("untimed_claim",
               valid("untimed_claim", R"(, "also": {"out": {"value": 0, "unit": "ratio", "untimed": true,
    "compare": {"rule": "bound", "max": 0.001, "why": "w"}}})"),
               "also.out.untimed");
  expect_error("untimed_str", valid("untimed_str", R"(, "timed": true, "also": {"out": {"value": 0, "unit": "ratio",
    "untimed": "yes", "compare": {"rule": "bound", "max": 0.001, "why": "w"}}})"),
               "also.out.untimed");
  // The claim's own value may be untimed too (an analytic figure of a timed claim), named by its own field.
  expect_error("untimed_value", valid("untimed_value", R"(, "untimed": true)"), "untimed");
  const Expected analytic =
      load_expected_file(write("untimed_ok", valid("untimed_ok", R"(, "timed": true, "untimed": true)")));
  EXPECT_TRUE(analytic.statements.front().untimed);
  ClaimResult wrong;
  wrong.status = Status::fail;
  Measurement v{"value", 1.0, "GB"};
  v.compared = true;
  v.ok = false;
  wrong.measurements = {v};
  EXPECT_FALSE(interference_may_explain(analytic, wrong));  // an analytic figure no neighbour moves
}
