#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "claimcheck/base/sha256.h"
#include "claimcheck/check.h"
#include "errors.h"
#include "expected.h"
#include "probe.h"
#include "records.h"
#include "registry.h"
#include "runner.h"

using namespace claimcheck;
namespace fs = std::filesystem;

TEST(Probe, SeesThisMachine) {
  const HardwareInfo h = probe_hardware();
  EXPECT_GT(h.logical_cpus, 0);
  EXPECT_GT(h.usable_cpus, 0);
  EXPECT_LE(h.usable_cpus, h.logical_cpus);
  EXPECT_GT(h.memory_bytes, 1u << 30);
  EXPECT_FALSE(h.cpu_model.empty());
  if (!h.gpu) {
    EXPECT_FALSE(h.gpu_absent_reason.empty());
  }
  const auto j = to_json(h);
  EXPECT_TRUE(j.contains("isa"));
  EXPECT_TRUE(j.contains("gpu"));
}

// Emulation (issue 23, point 10): an aarch64 build under qemu-user reads the host's /proc/cpuinfo (qemu 7.2) or
// QEMU's own (8.1 on); a native one reads its kernel's.
namespace {
ref::CpuIdentity cpuinfo_of(const std::string& text) {
  std::istringstream in(text);
  return ref::parse_cpuinfo(in, "text");
}
ref::CpuIdentity recorded_machine(const std::string& name) {
  const auto path = fs::path(CLAIMCHECK_SOURCE_DIR) / "reference/data/machines" / (name + ".cpuinfo");
  std::ifstream in(path);
  return ref::parse_cpuinfo(in, path.string());
}
}  // namespace

TEST(Probe, TellsAnEmulatedCpuFromTheBuildAndCpuinfo) {
  const auto zen3 = recorded_machine("zen3"), v1 = recorded_machine("neoverse-v1");
  EXPECT_EQ(emulation_reason(zen3, "x86_64"), "");
  EXPECT_EQ(emulation_reason(v1, "aarch64"), "");
  const std::string on_x86 = emulation_reason(zen3, "aarch64");
  EXPECT_EQ(on_x86.rfind("qemu-user: an aarch64 build running on AMD", 0), 0u) << on_x86;
  EXPECT_NE(on_x86.find("no CPU implementer"), std::string::npos) << on_x86;
  EXPECT_NE(emulation_reason(v1, "x86_64").find("implementer 0x41, part 0xd40"), std::string::npos);
  // qemu-user 8.1+'s own text for its default ("max") CPU, as linux-user/arm/target_proc.h prints it
  const auto qemu_max = cpuinfo_of(
      "processor\t: 0\nmodel name\t: ARMv8 Processor rev 0 (v8l)\nBogoMIPS\t: 100.00\n"
      "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp\n"
      "CPU implementer\t: 0x00\nCPU architecture: 8\nCPU variant\t: 0x0\n"
      "CPU part\t: 0x051\nCPU revision\t: 0\n\n");
  EXPECT_NE(emulation_reason(qemu_max, "aarch64").find("QEMU's own"), std::string::npos);
  // with -cpu neoverse-v1 the MIDR is real, the model name line still gives it away
  auto qemu_v1 = qemu_max;
  qemu_v1.implementer = "0x41", qemu_v1.part = "0xd40";
  EXPECT_NE(emulation_reason(qemu_v1, "aarch64").find("model name: ARMv8 Processor rev 0 (v8l)"), std::string::npos);
  EXPECT_EQ(emulation_reason(ref::CpuIdentity{}, "aarch64"), "");  // nothing read: nothing said
  EXPECT_EQ(emulation_reason(zen3, ""), "");
  // This process: the record carries the reason exactly when the probe finds one.
  const HardwareInfo h = probe_hardware();
  EXPECT_EQ(to_json(h).contains("emulated"), !h.emulated.empty());
  EXPECT_EQ(h.emulated, emulation_reason(ref::read_cpu_identity(), build_architecture()));
}

TEST(Sha256, KnownVectors) {
  Sha256 a;
  EXPECT_EQ(a.hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 b;
  b.update("abc");
  EXPECT_EQ(b.hex(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256 c;
  c.update(std::string(1000, 'a'));
  EXPECT_EQ(c.hex(), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
}

TEST(Records, TheSevenAreBuiltAndCounted) {
  const HardwareInfo h = probe_hardware();
  RecordInputs in{CLAIMCHECK_SOURCE_DIR,  fs::path(CLAIMCHECK_SOURCE_DIR) / "expected", {{"command", "test"}}, 7, &h,
                  {{"run_log", "stdout"}}};
  nlohmann::json r = build_records(in);
  for (const auto& n : record_names()) EXPECT_TRUE(r.contains(n)) << n;
  EXPECT_EQ(r["data_revision"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(r["environment"].contains("compiler"));
  EXPECT_TRUE(r["environment"].contains("blas_loaded"));
  std::vector<std::string> missing;
  r["logs"] = nlohmann::json::object();
  EXPECT_EQ(count_complete_records(r, &missing), r["commit"].is_null() ? 5 : 6);
  EXPECT_NE(std::find(missing.begin(), missing.end(), "logs"), missing.end());
}

// ---- checks can fail: the seven-records check with a record missing, a NaN measurement ----

namespace {
const std::map<std::string, Expected>& catalogue() {
  static const auto cat = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  return cat;
}

RunContextInputs inputs_for(const HardwareInfo* h) {
  RunContextInputs in;
  in.root = CLAIMCHECK_SOURCE_DIR;
  in.seed = 1;
  in.hardware = h;
  return in;
}

void measures_nan(Context& ctx) { ctx.measure(std::nan(""), "GB"); }
void measures_without_unit(Context& ctx) { ctx.measure(1.0, ""); }
void measures_wrong_unit(Context& ctx) { ctx.measure(1.0, "ms"); }
void forgets_to_measure(Context&) {}
}  // namespace
CLAIMCHECK_REGISTER(measures_nan).claim("test.measures_nan");
CLAIMCHECK_REGISTER(measures_without_unit).claim("test.measures_without_unit");
CLAIMCHECK_REGISTER(measures_wrong_unit).claim("test.measures_wrong_unit");
CLAIMCHECK_REGISTER(forgets_to_measure).claim("test.forgets_to_measure");

TEST(Checks, SevenRecordsFailsWhenARecordIsMissing) {
  const HardwareInfo h = probe_hardware();
  Capabilities caps(&h);
  RunContextInputs in = inputs_for(&h);
  in.records = [] {
    return nlohmann::json{{"commit", {{"sha", "abc"}}},
                          {"data_revision", "x"},
                          {"config", {{"a", 1}}},
                          {"environment", {{"b", 1}}},
                          {"seed", 1},
                          {"hardware", {{"c", 1}}},
                          {"logs", nullptr}};
  };
  ClaimResult r = run_claim(catalogue().at("ch06.seven_records"), in, caps);
  EXPECT_EQ(r.status, Status::fail) << r.reason;
  in.records = [] {
    return nlohmann::json{{"commit", {{"sha", "abc"}}},
                          {"data_revision", "x"},
                          {"config", {{"a", 1}}},
                          {"environment", {{"b", 1}}},
                          {"seed", 1},
                          {"hardware", {{"c", 1}}},
                          {"logs", {{"run_log", "x"}}}};
  };
  in.statements = {"value"};  // the count alone: the seed and commit statements read these records against the run's
  r = run_claim(catalogue().at("ch06.seven_records"), in, caps);
  EXPECT_EQ(r.status, Status::partial) << r.reason;
}

TEST(Checks, BadMeasurementsAreErrorsNamingTheField) {
  const HardwareInfo h = probe_hardware();
  Capabilities caps(&h);
  RunContextInputs in = inputs_for(&h);
  Expected e = catalogue().at("ch04.full_finetune_gb");
  e.statements.resize(1);
  for (const char* id :
       {"test.measures_nan", "test.measures_without_unit", "test.measures_wrong_unit", "test.forgets_to_measure"}) {
    e.id = id;
    ClaimResult r = run_claim(e, in, caps);
    EXPECT_EQ(r.status, Status::error) << id << ": " << r.reason;
    EXPECT_EQ(r.reason.find('\n'), std::string::npos);
  }
  e.id = "test.measures_nan";
  EXPECT_NE(run_claim(e, in, caps).reason.find("NaN"), std::string::npos);
  e.id = "test.measures_wrong_unit";
  EXPECT_NE(run_claim(e, in, caps).reason.find("field 'unit'"), std::string::npos);
}

TEST(Checks, AnExpectedFailureThatPassesIsAFailure) {
  const HardwareInfo h = probe_hardware();
  Capabilities caps(&h);
  RunContextInputs in = inputs_for(&h);
  Expected e = catalogue().at("ch06.ridge");
  e.statements[0].xfail = true;
  e.statements[0].xfail_reason = "pretend the evidence refutes it";
  EXPECT_EQ(run_claim(e, in, caps).status, Status::xpass);
  e.statements[0].value = 400.0;
  EXPECT_EQ(run_claim(e, in, caps).status, Status::xfail);
}

// ---- a variant is chosen only by what the code under test cannot change (issue 32) ----
namespace {
void derives_from_its_kernel(Context& ctx) {
  ctx.derive("kernel_rate", 2.0, "ratio");
  ctx.measure(1.0, "ratio");
}
void derives_undeclared(Context& ctx) {
  ctx.derive("not_declared", 2.0, "ratio");
  ctx.measure(1.0, "ratio");
}
void derives_from_the_probe(Context& ctx) {
  ctx.derive("probe_rate", 2.0, "ratio");
  ctx.measure(1.0, "ratio");
}
void leaves_a_part_pending(Context& ctx) {
  ctx.measure(1.0, "ratio");
  ctx.pending("the measured part: not selected");
}
}  // namespace
CLAIMCHECK_REGISTER(leaves_a_part_pending).claim("test.leaves_a_part_pending");
CLAIMCHECK_REGISTER(derives_from_its_kernel)
    .claim("test.derives_from_its_kernel")
    .derives("kernel_rate", claimcheck::Source::under_test);
CLAIMCHECK_REGISTER(derives_undeclared).claim("test.derives_undeclared");
CLAIMCHECK_REGISTER(derives_from_the_probe)
    .claim("test.derives_from_the_probe")
    .derives("probe_rate", claimcheck::Source::probe);

namespace {
// These claims time nothing: the harness's choices are what is tested, so they run as on a native core even where
// the CPU is emulated (ci/aarch64.sh), where a measured claim would skip before any choice is made.
HardwareInfo native_hardware() {
  HardwareInfo h = probe_hardware();
  h.emulated.clear();
  return h;
}

Expected with_variant(const std::string& id, const std::string& when) {
  const std::string text = R"({"schema": 1, "id": "ch04.x", "title": "t", "source": "s", "kind": ["measured"],
    "requires": [], "value": 1, "unit": "ratio", "variants": [
      {"when": ")" + when + R"(", "compare": {"rule": "close", "rtol": 0.1, "why": "w"}, "expect": "xfail",
       "xfail_reason": "r"},
      {"when": "default", "compare": {"rule": "close", "rtol": 0.1, "why": "w"}}]})";
  Expected e = parse_expected_file(text, "/tmp/expected/ch04/x.json");
  e.id = id;
  return e;
}
}  // namespace

TEST(Checks, AVariantChosenByTheCodeUnderTestIsRefusedAtLoad) {
  for (const auto& [id, when] :
       {std::pair<std::string, std::string>{"test.derives_from_its_kernel", "derived:kernel_rate>1"},
        {"test.derives_from_the_probe", "isa:avx2 && derived:undeclared_here>1"}}) {
    try {
      refuse_selectors_under_test({{id, with_variant(id, when)}});
      FAIL() << "no refusal for " << id;
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("/tmp/expected/ch04/x.json"), std::string::npos) << m;
      EXPECT_NE(m.find("field 'variants[0].when'"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  // A variant chosen by the probe loads, and its choice is told with the figure that made it.
  EXPECT_NO_THROW(refuse_selectors_under_test(
      {{"test.derives_from_the_probe", with_variant("test.derives_from_the_probe", "derived:probe_rate>1")}}));
  const HardwareInfo h = native_hardware();
  Capabilities caps(&h);
  ClaimResult r = run_claim(with_variant("test.derives_from_the_probe", "derived:probe_rate>1"), inputs_for(&h), caps);
  EXPECT_EQ(r.status, Status::xpass) << r.reason;
  ASSERT_FALSE(r.measurements.empty());
  EXPECT_EQ(r.measurements[0].variant, "derived:probe_rate>1");
  EXPECT_EQ(r.measurements[0].variant_because, "probe_rate = 2 >1");
  EXPECT_EQ(r.details["derived"]["probe_rate"]["source"], "probe");
}

// An expected failure is the refutation, not any failure: a rule that needs a figure the check did not derive is an
// error naming the field, never the expected failure it would otherwise read as.
TEST(Checks, AnExpectedFailureNeedsItsRuleJudged) {
  const HardwareInfo h = native_hardware();
  Capabilities caps(&h);
  for (const std::string rule : {R"("rule": "band", "relative_to": "not_derived", "min": 0.9, "max": 1.1)",
                                 R"("rule": "interval", "min_from": "probe_rate", "max_from": "not_derived")"}) {
    Expected e = parse_expected_file(R"({"schema": 1, "id": "ch04.x", "title": "t", "source": "s",
      "kind": ["measured"], "requires": [], "value": 1, "unit": "ratio", "compare": {)" +
                                         rule + R"(, "why": "w"}, "expect": "xfail", "xfail_reason": "r"})",
                                     "/tmp/expected/ch04/x.json");
    e.id = "test.derives_from_the_probe";
    const ClaimResult r = run_claim(e, inputs_for(&h), caps);
    EXPECT_EQ(r.status, Status::error) << rule << ": " << r.reason;
    EXPECT_NE(r.reason.find("field 'compare'"), std::string::npos) << r.reason;
    EXPECT_NE(r.reason.find("not_derived"), std::string::npos) << r.reason;
  }
}

TEST(Checks, ADerivedValueWithoutADeclaredSourceIsAnError) {
  const HardwareInfo h = native_hardware();
  Capabilities caps(&h);
  ClaimResult r = run_claim(with_variant("test.derives_undeclared", "isa:avx2"), inputs_for(&h), caps);
  EXPECT_EQ(r.status, Status::error);
  EXPECT_NE(r.reason.find("without a declared source"), std::string::npos) << r.reason;
}

// A statement of a form that does not run here is not judged, and says so; a pending part makes a claim partial.
TEST(Checks, AppliesAndPartial) {
  const HardwareInfo h = native_hardware();
  Capabilities caps(&h);
  Expected e = with_variant("test.derives_from_the_probe", "gpu && !gpu");
  Statement never = e.statements[0];
  never.name = "never_here";
  never.variants.clear();
  never.applies = parse_feature_expr("gpu && !gpu");
  e.statements.push_back(never);
  ClaimResult r = run_claim(e, inputs_for(&h), caps);
  EXPECT_EQ(r.status, Status::pass) << r.reason;
  EXPECT_EQ(r.details["not_applicable"]["never_here"], "gpu && !gpu");
  EXPECT_THROW(parse_expected_file(R"({"schema": 1, "id": "ch04.x", "title": "t", "source": "s", "kind": ["measured"],
    "requires": [], "value": 1, "unit": "ratio", "compare": {"rule": "close", "rtol": 0.1, "why": "w"},
    "also": {"y": {"value": 1, "unit": "ratio", "applies": "derived:a>1",
                   "compare": {"rule": "close", "rtol": 0.1, "why": "w"}}}})",
                                   "/tmp/expected/ch04/x.json"),
               InputError);
  e.id = "test.leaves_a_part_pending";  // every judged statement held, a part was not judged: partial, not pass
  e.statements.resize(1);
  r = run_claim(e, inputs_for(&h), caps);
  EXPECT_EQ(r.status, Status::partial) << r.reason;
  EXPECT_NE(r.reason.find("pending: the measured part"), std::string::npos) << r.reason;
  EXPECT_EQ(exit_status({r}), 0);
  EXPECT_EQ(summarize({r})[Status::partial], 1);
}

// A claim's check named in its expected file (`driver`) is registered from the catalogue, once per load, and a claim
// with both a driver and a C++ check is refused naming the file and the field.
TEST(Runner, DriversAreRegisteredFromTheCatalogueAndNeverBesideACheck) {
  auto cat = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  register_drivers(cat);
  register_drivers(cat);  // a second load replaces the first's
  std::size_t n = 0;
  for (const auto& c : registry()) n += c.id == "ch01.pool_rules";
  EXPECT_EQ(n, 1u);
  ASSERT_NE(find_check("ch01.pool_rules"), nullptr);
  EXPECT_EQ(location(*find_check("ch01.pool_rules")), "checks/ch01/pool_rules.py");
  auto both = cat;
  both.at("ch02.ci95_5pt").driver = Driver{"checks/ch02/ci95_5pt.py", {}, {}};
  try {
    register_drivers(both);
    ADD_FAILURE() << "a driver beside a C++ check was accepted";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("ci95_5pt.json"), std::string::npos) << m;
    EXPECT_NE(m.find("field 'driver'"), std::string::npos) << m;
  }
  register_drivers(cat);
}
