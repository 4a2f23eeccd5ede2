#include <gtest/gtest.h>

#include "errors.h"
#include "outcome.h"
#include "runner.h"

using namespace claimcheck;

namespace {
ClaimResult with(std::vector<bool> oks) {
  ClaimResult r;
  r.id = "ch04.x";
  for (std::size_t i = 0; i < oks.size(); ++i) {
    Measurement m;
    m.name = i == 0 ? "value" : "m" + std::to_string(i);
    m.compared = true;
    m.ok = oks[i];
    m.verdict = oks[i] ? "fine" : "broken";
    r.measurements.push_back(m);
  }
  return r;
}
ClaimResult status(Status s, bool not_impl = false) {
  ClaimResult r;
  r.status = s;
  r.not_implemented = not_impl;
  return r;
}
}  // namespace

TEST(Outcome, AllComparisonsMustHold) {
  auto r = with({true, true});
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::pass);
  r = with({true, false});
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("m1: broken"), std::string::npos);
}

TEST(Outcome, StatementLevelExpectedFailure) {
  auto r = with({true, false});
  r.measurements[1].expected_failure = true;
  r.measurements[1].xfail_reason = "measured: eager code saves more";
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::xfail);
  EXPECT_NE(r.reason.find("measured: eager code saves more"), std::string::npos);
  r = with({true, true});  // the refuted part held after all: an xpass, a failure
  r.measurements[1].expected_failure = true;
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::xpass);
  r = with({false, false});  // an unmarked comparison failing is a failure, whatever the marked one does
  r.measurements[1].expected_failure = true;
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::fail);
}

TEST(Outcome, ExpectedFailureAndUnexpectedPass) {
  auto r = with({false});  // a claim whose stated value is refuted: its primary statement carries the expectation
  r.measurements[0].expected_failure = true;
  r.measurements[0].xfail_reason = "the series rounds twice";
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::xfail);
  EXPECT_NE(r.reason.find("the series rounds twice"), std::string::npos);
  r = with({true});
  r.measurements[0].expected_failure = true;
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::xpass);
  r = with({false, false});  // a refuted primary never hides another statement's failure
  r.measurements[0].expected_failure = true;
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::fail);
  EXPECT_NE(r.reason.find("m1: broken"), std::string::npos);
}

TEST(Outcome, NothingComparedIsAnError) {
  ClaimResult r;
  Measurement m;
  m.name = "value";
  r.measurements.push_back(m);
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::error);
}

TEST(Outcome, ExitStatusFolding) {
  EXPECT_EQ(exit_status({status(Status::pass), status(Status::xfail)}), 0);
  EXPECT_EQ(exit_status({status(Status::pass), status(Status::skip)}), 0);
  EXPECT_EQ(exit_status({status(Status::pass), status(Status::fail)}), 1);
  EXPECT_EQ(exit_status({status(Status::pass), status(Status::xpass)}), 1);
  EXPECT_EQ(exit_status({status(Status::fail), status(Status::error)}), 2);
  EXPECT_EQ(exit_status({status(Status::skip), status(Status::skip, true)}), 77);
  EXPECT_EQ(exit_status({status(Status::xfail)}), 0);
}

TEST(Outcome, SummaryCountsNotImplementedApartFromRealSkips) {
  auto a = status(Status::skip, true);
  auto b = status(Status::skip);
  auto c = status(Status::pass);
  c.pending_parts = {"measured part"};
  Summary s = summarize({a, b, c});
  EXPECT_EQ(s[Status::skip], 2);
  EXPECT_EQ(s.not_implemented, 1);
  EXPECT_EQ(s.pending_parts, 1);
  EXPECT_EQ(s[Status::pass], 1);
  EXPECT_EQ(s.total, 3);
}

// A variant keyed to what the check measured: derived values compared with a threshold, conjunctions, alternatives.
TEST(Outcome, VariantsFollowWhatWasMeasured) {
  HardwareInfo hw;
  hw.isa = {"avx2", "fma"};
  const std::map<std::string, double> d = {{"ratio", 0.4}};
  const auto holds = [&](const std::string& w, const HardwareInfo* h, const std::map<std::string, double>& dd) {
    return variant_matches(parse_feature_expr(w), h, dd);
  };
  EXPECT_TRUE(holds("derived:ratio>0.325", &hw, d));
  EXPECT_FALSE(holds("derived:ratio<0.325", &hw, d));
  EXPECT_FALSE(holds("derived:other>0", &hw, d));  // not derived here
  EXPECT_TRUE(holds("isa:avx2 && derived:ratio>0.3", &hw, d));
  EXPECT_FALSE(holds("isa:avx512f && derived:ratio>0.3", &hw, d));
  EXPECT_TRUE(holds("isa:avx512f || derived:ratio>0.3", &hw, d));
  EXPECT_TRUE(holds("isa:avx512f || isa:avx2 && !gpu", &hw, d));  // && binds tighter
  EXPECT_FALSE(holds("isa:avx2 && !derived:ratio>0.3", &hw, d));
  EXPECT_TRUE(holds("!gpu", &hw, d));
  EXPECT_FALSE(holds("gpu", &hw, d));
  EXPECT_TRUE(holds("default", nullptr, {}));
  // A term that cannot be told (not derived; no hardware record) is false, negated or not.
  EXPECT_FALSE(holds("!derived:other>0", &hw, d));
  EXPECT_FALSE(holds("!gpu", nullptr, d));
  for (const char* bad :
       {"", "isa:avx2 &&", "no-gpu", "isa:avx2 & gpu", "isa:avx2 | gpu", "(gpu)", "!!gpu", "default && gpu"})
    EXPECT_THROW(parse_feature_expr(bad), std::invalid_argument) << bad;
}

// A reason's figures come from the run: "{name}" is the derived value or the measurement, 3 significant digits.
TEST(Outcome, ReasonsCarryThisRunsFigures) {
  Measurement m;
  m.name = "gb_s";
  m.value = 28.4567;
  EXPECT_EQ(with_figures("reads {gb_s} GB/s, predicted {ratio}", {{"ratio", 0.40123}}, {m}, "f.json", "why"),
            "reads 28.5 GB/s, predicted 0.401");
  EXPECT_EQ(with_figures("no figures; an unmatched { stays", {}, {}, "f.json", "why"),
            "no figures; an unmatched { stays");
  try {
    with_figures("{missing}", {}, {m}, "f.json", "also.x.xfail_reason");
    FAIL() << "a reason naming a figure the check did not give was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("also.x.xfail_reason"), std::string::npos) << e.what();
  }
}

TEST(Outcome, TheClaimsFigureIsTheOneNamedValue) {
  // A check may measure other statements before its own figure: the reasons name every statement but "value".
  auto r = with({true, true, false});
  std::swap(r.measurements[0], r.measurements[1]);  // m1 measured first
  r.measurements[2].expected_failure = true;
  r.measurements[2].xfail_reason = "refuted";
  fold_outcome(r);
  EXPECT_EQ(r.status, Status::xfail);
  EXPECT_NE(r.reason.find("held: fine; m1: fine"), std::string::npos) << r.reason;
  r = with({true, true});
  std::swap(r.measurements[0], r.measurements[1]);
  r.measurements[1].verdict = "the value's verdict";
  fold_outcome(r);
  EXPECT_EQ(r.reason, "the value's verdict");
}

// The interference watch reads the CPUs this process may run on (issue 32): a neighbour pegging one of them is 50%
// of a 2-CPU mask however many CPUs the host has, and one on CPUs outside the mask is nothing.
TEST(Outcome, TheLoadWatchReadsThisProcesssCpus) {
  const std::string before =
      "cpu  1000 0 0 9000 0 0 0 0 0 0\ncpu0 100 0 0 900 0 0 0 0 0 0\ncpu1 100 0 0 900 0 0 0 0 0 0\n"
      "cpu2 400 0 0 600 0 0 0 0 0 0\ncpu17 400 0 0 600 0 0 0 0 0 0\nintr 1 2 3\n";
  const std::string after =  // 10 s at 100 Hz: cpu1 fully busy (1000 jiffies), cpu2 too, cpu0 idle; steal on cpu0
      "cpu  3000 0 0 9000 0 0 0 0 0 0\ncpu0 100 0 0 1800 0 0 0 100 0 0\ncpu1 1100 0 0 900 0 0 0 0 0 0\n"
      "cpu2 1400 0 0 600 0 0 0 0 0 0\ncpu17 400 0 0 1600 0 0 0 0 0 0\n";
  const CpuJiffies a = parse_proc_stat(before, {0, 1}), b = parse_proc_stat(after, {0, 1});
  EXPECT_DOUBLE_EQ(a.busy, 200);
  EXPECT_DOUBLE_EQ(b.busy, 1200);
  EXPECT_DOUBLE_EQ(b.steal, 100);
  MachineLoad l = load_between(a, b, /*own=*/0, /*wall=*/10, /*cpus=*/2, /*hz=*/100);
  EXPECT_DOUBLE_EQ(l.others, 0.5);  // cpu1 taken by another process: half of this run's two CPUs
  EXPECT_DOUBLE_EQ(l.steal, 0.05);
  l = load_between(a, b, /*own=*/1000, 10, 2, 100);  // ... or by this process itself: nobody else
  EXPECT_DOUBLE_EQ(l.others, 0);
  // CPUs outside the mask (cpu2, cpu17: above, their 1,300 busy jiffies are not in {0, 1}'s 1,200) count nothing;
  // the aggregate line where no mask is known.
  EXPECT_DOUBLE_EQ(parse_proc_stat(after, {17}).busy, 400);
  EXPECT_EQ(parse_proc_stat(after, {17}).cpus, 1);
  EXPECT_DOUBLE_EQ(parse_proc_stat(after, {}).busy, 3000);
}

// A container whose /proc/stat numbers its CPUs apart from the host ids sched_getaffinity gives (LXCFS): none of the
// mask's CPUs has a line, and the aggregate line, all of which is the container's, is read instead of nothing.
TEST(Outcome, TheLoadWatchFallsBackToTheAggregateLine) {
  const std::string stat = "cpu  300 0 0 100 0 0 0 0 0 0\ncpu0 150 0 0 50 0 0 0 0 0 0\ncpu1 150 0 0 50 0 0 0 0 0 0\n";
  const CpuJiffies j = parse_proc_stat(stat, {16, 17});
  EXPECT_DOUBLE_EQ(j.busy, 300);
  EXPECT_EQ(j.cpus, 0);
  EXPECT_EQ(parse_proc_stat(stat, {1}).cpus, 1);
}
