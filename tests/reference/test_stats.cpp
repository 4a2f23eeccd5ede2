// The statistics of the answer key (reference/src/stats.cpp): Wald's and Wilson's intervals, the two-proportion
// test, Gini's mean difference and its bootstrap.
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/stats.h"

namespace ref = claimcheck::ref;

TEST(Stats, WaldWilsonAndTheTest) {
  EXPECT_NEAR(ref::wald_halfwidth(0.5, 80), 1.96 * std::sqrt(0.25 / 80), 1e-15);
  const auto w = ref::wilson_interval(0.5, 80);
  EXPECT_NEAR((w.lo + w.hi) / 2, 0.5, 1e-12);
  const auto z = ref::wilson_interval(0.0, 80);  // Wilson stays inside [0, 1] where Wald collapses
  EXPECT_GE(z.lo, -1e-15);
  EXPECT_GT(z.hi, 0.0);
  const double exact = ref::exact_coverage(0.5, 80, false);
  EXPECT_NEAR(ref::simulated_coverage(0.5, 80, false, 20000, 1), exact, 0.01);
  EXPECT_NEAR(ref::two_proportion_p_value(0.5, 80, 0.55, 80), 0.527, 0.01);
  EXPECT_LT(ref::two_proportion_p_value(0.5, 1000, 0.6, 1000), 1e-4);
}

// Gini's mean difference and its bootstrap: exact on a small case, zero for identical values, and an interval
// whose coverage of the true value (2 sigma / sqrt(pi) for a normal) is near its level at n = 16.
TEST(Stats, MeanAbsDifferenceAndItsBootstrap) {
  EXPECT_NEAR(ref::mean_abs_difference({0, 1, 2}), 4.0 / 3.0, 1e-15);
  EXPECT_THROW(ref::mean_abs_difference({1.0}), std::invalid_argument);
  const auto same = ref::bootstrap_mean_abs_difference(std::vector<double>(8, 3.0), 500, 0.95, 1);
  EXPECT_EQ(same.estimate, 0);
  EXPECT_EQ(same.interval.hi, 0);
  EXPECT_THROW(ref::bootstrap_mean_abs_difference({1, 2, NAN}, 500, 0.95, 1), std::invalid_argument);
  EXPECT_THROW(ref::bootstrap_mean_abs_difference({1, 2, 3}, 10, 0.95, 1), std::invalid_argument);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n01(0, 0.1);
  const double truth = 2 * 0.1 / std::sqrt(M_PI);
  int covered = 0;
  const int datasets = 200;
  for (int d = 0; d < datasets; ++d) {
    std::vector<double> x(16);
    for (auto& v : x) v = n01(rng);
    const auto b = ref::bootstrap_mean_abs_difference(x, 1000, 0.95, d);
    EXPECT_LE(b.interval.lo, b.estimate);
    EXPECT_GE(b.interval.hi, b.estimate);
    covered += b.interval.lo <= truth && truth <= b.interval.hi;
  }
  EXPECT_GE(covered, 0.85 * datasets) << covered << " of " << datasets;  // percentile bootstrap at n = 16
  EXPECT_LE(covered, 0.99 * datasets) << covered << " of " << datasets;
}

// The worse of two errors keeps a NaN wherever it comes (std::max(worst, NaN) is worst), and the answer key's sampled
// output errors read an output left NaN as NaN, never as no error.
TEST(Stats, WorseKeepsNaN) {
  EXPECT_EQ(ref::worse(1, 2), 2);
  EXPECT_EQ(ref::worse(2, 1), 2);
  EXPECT_TRUE(std::isnan(ref::worse(1, NAN)));
  EXPECT_TRUE(std::isnan(ref::worse(NAN, 1)));
  EXPECT_TRUE(std::isnan(ref::worse(ref::worse(0, NAN), 5)));
  const int N = 3, K = 4;
  const std::vector<std::uint16_t> W(N * K, 0x3f80);  // bf16 1.0
  const std::vector<float> x(K, 0.5f);
  std::vector<float> y(N, 2.0f);
  EXPECT_EQ(ref::gemm_bf16_sampled_error(W.data(), N, K, x.data(), 1, y.data()), 0);
  y[N - 1] = NAN;
  EXPECT_TRUE(std::isnan(ref::gemm_bf16_sampled_error(W.data(), N, K, x.data(), 1, y.data())));
}
