#include <cmath>
#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "tolerance.h"

using namespace claimcheck;

namespace {
const std::map<std::string, double> kNone;
Comparison with(Rule r) {
  Comparison c;
  c.rule = std::move(r);
  c.why = "test";
  return c;
}
}  // namespace

TEST(Tolerance, CloseIsAtolPlusRtolTimesRef) {
  Comparison c = with(rule::Close{"", 0.1, 0.01});
  EXPECT_TRUE(compare_scalar(c, 10.2, 10.0, kNone, "").ok);  // allowed 0.2
  EXPECT_FALSE(compare_scalar(c, 10.21, 10.0, kNone, "").ok);
  EXPECT_NEAR(compare_scalar(c, 10.1, 10.0, kNone, "").budget_used, 0.5, 1e-9);
}

TEST(Tolerance, PerDtypeDefaultsFollowAssertClose) {
  EXPECT_DOUBLE_EQ(dtype_default("fp32").rtol, 1.3e-6);
  EXPECT_DOUBLE_EQ(dtype_default("fp32").atol, 1e-5);
  EXPECT_DOUBLE_EQ(dtype_default("bf16").rtol, 1.6e-2);
  EXPECT_DOUBLE_EQ(dtype_default("fp64").atol, 1e-7);
  EXPECT_THROW(dtype_default("int4"), std::invalid_argument);
  Comparison c = with(rule::Close{"bf16"});
  EXPECT_TRUE(compare_scalar(c, 1.015, 1.0, kNone, "").ok);
  EXPECT_FALSE(compare_scalar(c, 1.02, 1.0, kNone, "").ok);
}

TEST(Tolerance, RoundedMeansHalfAUnitOfTheLastDigit) {
  Comparison c = with(rule::Rounded{0.1});
  EXPECT_TRUE(compare_scalar(c, 128.484, 128.5, kNone, "GB").ok);
  EXPECT_TRUE(compare_scalar(c, 4.85, 4.8, kNone, "ms").ok);  // exactly half a unit: rounds to it
  EXPECT_FALSE(compare_scalar(c, 16.6477, 16.7, kNone, "GB").ok);
  EXPECT_FALSE(compare_scalar(c, 5.16, 5.1, kNone, "GB").ok);
}

TEST(Tolerance, TruncatedOnlyDownward) {
  Comparison c = with(rule::Truncated{0.1});
  EXPECT_TRUE(compare_scalar(c, 10.957, 10.9, kNone, "").ok);
  EXPECT_FALSE(compare_scalar(c, 10.957, 11.0, kNone, "").ok);
  EXPECT_FALSE(compare_scalar(c, 10.85, 10.9, kNone, "").ok);
}

TEST(Tolerance, BoundsAreInclusive) {
  Comparison c = with(rule::Bound{0.93, 0.97});
  EXPECT_TRUE(compare_scalar(c, 0.93, 0.95, kNone, "").ok);
  EXPECT_TRUE(compare_scalar(c, 0.97, 0.95, kNone, "").ok);
  EXPECT_FALSE(compare_scalar(c, 0.929, 0.95, kNone, "").ok);
  // The share of the range used: 1 at an edge, above 1 outside.
  EXPECT_NEAR(compare_scalar(c, 0.95, 0.95, kNone, "").budget_used, 0, 1e-9);
  EXPECT_NEAR(compare_scalar(c, 0.97, 0.95, kNone, "").budget_used, 1, 1e-9);
  EXPECT_GT(compare_scalar(c, 0.99, 0.95, kNone, "").budget_used, 1);
  c.rule = rule::Bound{0.93, std::nullopt};
  EXPECT_TRUE(compare_scalar(c, 5.0, 0.95, kNone, "").ok);
  EXPECT_NEAR(compare_scalar(c, 0.93, 0.95, kNone, "").budget_used, 1, 1e-9);
}

TEST(Tolerance, BandIsRelativeToAValueDerivedOnThisMachine) {
  Comparison c = with(rule::Band{"bytes_over_bandwidth", 0.8, 1.5});
  std::map<std::string, double> derived{{"bytes_over_bandwidth", 4.0}};
  EXPECT_TRUE(compare_scalar(c, 5.0, 4.8, derived, "ms").ok);
  EXPECT_FALSE(compare_scalar(c, 6.5, 4.8, derived, "ms").ok);
  EXPECT_FALSE(compare_scalar(c, 3.0, 4.8, derived, "ms").ok);
  // Not derived: never a pass.
  EXPECT_FALSE(compare_scalar(c, 4.0, 4.8, kNone, "ms").ok);
  c.rule = rule::Band{"value", 0.8, 1.5};
  EXPECT_TRUE(compare_scalar(c, 5.0, 4.8, kNone, "ms").ok);
}

// What a rule accepts, as the report draws it, is what it passes: the edges in, a hair beyond them out.
TEST(Tolerance, TheAcceptedRangeIsWhatTheRulePasses) {
  std::map<std::string, double> derived{{"first_loss", 5.0}};
  struct Case {
    Rule rule;
    double stated, lo, hi;
  };
  const Case cases[] = {{rule::Close{"", 0.1, 0.01}, 10.0, 9.8, 10.2},
                        {rule::Rounded{0.1}, 4.8, 4.75, 4.85},
                        {rule::Bound{0.93, 0.97}, 0.95, 0.93, 0.97},
                        {rule::Bound{std::nullopt, 20.0}, 9.6, -INFINITY, 20},
                        {rule::Band{"first_loss", std::nullopt, 0.6}, 1.7, -INFINITY, 3.0},
                        {rule::Band{"value", 0.8, 1.5}, 4.0, 3.2, 6.0},
                        {rule::Equal{}, 24, 24, 24}};
  for (const auto& k : cases) {
    const Verdict v = compare_scalar(with(k.rule), k.stated, k.stated, derived, "");
    for (const auto& [got, want] : {std::pair{v.accept_lo, k.lo}, std::pair{v.accept_hi, k.hi}}) {
      if (std::isinf(want)) {
        EXPECT_EQ(got, want) << rule_name(k.rule);
      } else {
        EXPECT_NEAR(got, want, 1e-12) << rule_name(k.rule);
      }
    }
    for (double edge : {k.lo, k.hi}) {
      if (!std::isfinite(edge)) continue;
      EXPECT_TRUE(compare_scalar(with(k.rule), edge, k.stated, derived, "").ok) << rule_name(k.rule) << " " << edge;
      const double out = edge == k.lo ? edge - 1e-6 : edge + 1e-6;
      EXPECT_FALSE(compare_scalar(with(k.rule), out, k.stated, derived, "").ok) << rule_name(k.rule) << " " << out;
    }
  }
  // Truncated is half-open: [stated, stated + step).
  const Verdict t = compare_scalar(with(rule::Truncated{0.1}), 4.8, 4.8, kNone, "");
  EXPECT_DOUBLE_EQ(t.accept_lo, 4.8);
  EXPECT_DOUBLE_EQ(t.accept_hi, 4.9);
  // Rules that judge something other than the measured figure's place accept no range of it.
  const std::map<std::string, double> ci{{"lo", 0.08}, {"hi", 0.13}};
  EXPECT_TRUE(std::isnan(compare_scalar(with(rule::Interval{"lo", "hi"}), 0.1, 0.14, ci, "").accept_lo));
  // A band relative to a figure the check did not derive accepts nothing.
  EXPECT_TRUE(std::isnan(compare_scalar(with(rule::Band{"missing", 0.8, 1.2}), 1, 1, kNone, "").accept_lo));
}

TEST(Tolerance, NonFiniteMeasurementNeverPasses) {
  for (const Rule& r : std::vector<Rule>{rule::Close{"", 1e300, 0}, rule::Rounded{1e300}, rule::Bound{-1e300, {}},
                                         rule::Band{"value", 0.0, {}}, rule::Equal{}, rule::Truncated{1e300}}) {
    Comparison c = with(r);
    EXPECT_FALSE(compare_scalar(c, NAN, 1.0, kNone, "").ok) << rule_name(r);
    EXPECT_FALSE(compare_scalar(c, INFINITY, 1.0, kNone, "").ok) << rule_name(r);
  }
}

TEST(Tolerance, EachRuleHasTheNameTheExpectedFilesUse) {
  EXPECT_STREQ(rule_name(rule::Close{}), "close");
  EXPECT_STREQ(rule_name(rule::RoundedParts{}), "rounded_parts");
  EXPECT_STREQ(rule_name(rule::Equal{}), "equal");
}

TEST(Tolerance, ArrayComparisonNamesTheWorstElement) {
  const float got[] = {1.0f, 2.0f, 3.5f, 4.0f};
  const double ref[] = {1.0, 2.0, 3.0, 4.0};
  ArrayVerdict v = compare_arrays(got, ref, 4, {1e-5, 1.3e-6});
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.violations, 1u);
  EXPECT_EQ(v.worst_index, 2u);
  EXPECT_DOUBLE_EQ(v.worst_got, 3.5);
  EXPECT_DOUBLE_EQ(v.worst_ref, 3.0);
  EXPECT_NEAR(v.max_abs_error, 0.5, 1e-12);
  EXPECT_GT(v.budget_used, 1.0);
  EXPECT_NE(v.text().find("1 of 4 elements"), std::string::npos);
  EXPECT_NE(v.text().find("[2]"), std::string::npos);
}

TEST(Tolerance, ArrayWithNaNFailsAndSaysSo) {
  const double got[] = {1.0, NAN};
  const double ref[] = {1.0, 2.0};
  ArrayVerdict v = compare_arrays(got, ref, 2, {1e-7, 1e-7});
  EXPECT_FALSE(v.ok);
  EXPECT_TRUE(v.nonfinite);
  EXPECT_EQ(v.worst_index, 1u);
}

TEST(Tolerance, ArrayWithinBudgetPasses) {
  const double got[] = {1.0 + 1e-9, 2.0};
  const double ref[] = {1.0, 2.0};
  ArrayVerdict v = compare_arrays(got, ref, 2, {1e-7, 1e-7});
  EXPECT_TRUE(v.ok);
  EXPECT_LT(v.budget_used, 0.1);
}

// The interval rule: the stated figure must lie in the interval the check measured (its own noise).
TEST(Tolerance, IntervalHoldsTheStatedValueInTheMeasuredInterval) {
  Comparison c = with(rule::Interval{"ci_lo", "ci_hi"});
  const std::map<std::string, double> ci = {{"ci_lo", 0.08}, {"ci_hi", 0.13}};
  EXPECT_TRUE(compare_scalar(c, 0.11, 0.12, ci, "nats").ok);
  EXPECT_TRUE(compare_scalar(c, 0.11, 0.13, ci, "nats").ok);  // inclusive
  EXPECT_FALSE(compare_scalar(c, 0.11, 0.14, ci, "nats").ok);
  EXPECT_FALSE(compare_scalar(c, 0.11, 0.05, ci, "nats").ok);
  EXPECT_NE(compare_scalar(c, 0.11, 0.14, ci, "nats").text.find("outside the measured interval"), std::string::npos);
  EXPECT_FALSE(compare_scalar(c, 0.11, 0.12, kNone, "nats").ok);  // the check derived no interval
  EXPECT_FALSE(compare_scalar(c, NAN, 0.12, ci, "nats").ok);
  const std::map<std::string, double> bad = {{"ci_lo", NAN}, {"ci_hi", 0.13}};
  EXPECT_FALSE(compare_scalar(c, 0.11, 0.12, bad, "nats").ok);
}

// rounded_parts: the series' arithmetic (parts rounded, then added, then rounded), and the parts must add up.
TEST(Tolerance, RoundedPartsIsTheSeriesArithmetic) {
  Comparison c = with(rule::RoundedParts{0.1, 0.01, {"base", "adapter"}});
  const std::map<std::string, double> parts = {{"base", 16.0602}, {"adapter", 0.5878}};  // 16.648 exactly
  EXPECT_TRUE(compare_scalar(c, 16.648, 16.7, parts, "GB").ok);                          // 16.06 + 0.59 = 16.65 -> 16.7
  EXPECT_FALSE(compare_scalar(c, 16.648, 16.6, parts, "GB").ok);  // the exact sum's rounding is not the series'
  EXPECT_FALSE(compare_scalar(c, 16.7, 16.7, parts, "GB").ok);    // the parts do not add up to the figure
  EXPECT_FALSE(compare_scalar(c, 16.648, 16.7, kNone, "GB").ok);  // no parts derived
  const std::map<std::string, double> fewer = {{"base", 16.0602}, {"adapter", 0.0958}};  // LoRA on q, v only
  EXPECT_FALSE(compare_scalar(c, 16.156, 16.7, fewer, "GB").ok);
}
