// base/timing.h's measurement helpers: the median and the bracketed pairs the measured checks rest on.
#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "claimcheck/base/timing.h"

namespace base = claimcheck::base;

TEST(Timing, MedianOfOddAndEvenCountsAndNothing) {
  EXPECT_DOUBLE_EQ(base::median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(base::median({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(base::median({}), std::invalid_argument);
}

// A machine whose speed drifts linearly: each call takes 1 + 0.1 t units of its work at call t. Bracketed, the b's
// ratio to the a's is exact (0.3); a before b alone reads it off by the drift.
TEST(Timing, BracketedPairsCancelALinearDrift) {
  int t = 0;
  const auto a = [&] { return 1.0 * (1 + 0.1 * t++); };
  const auto b = [&] { return 0.3 * (1 + 0.1 * t++); };
  const base::Bracketed p = base::bracketed(5, a, b);
  ASSERT_EQ(p.ratios.size(), 5u);
  for (double r : p.ratios) EXPECT_NEAR(r, 0.3, 1e-12);
  EXPECT_NEAR(p.ratio, 0.3, 1e-12);
  EXPECT_EQ(t, 11);  // a, then (b, a) five times
  EXPECT_DOUBLE_EQ(p.best_a, 1.0);
  EXPECT_DOUBLE_EQ(p.best_b, 0.3 * 1.1);
  t = 0;
  const double unbracketed = b() / a();  // b at t = 0, a at t = 1
  EXPECT_GT(std::abs(unbracketed - 0.3), 0.02);
  // At least one round, whatever the caller asks.
  EXPECT_EQ(base::bracketed(0, a, b).ratios.size(), 1u);
}

// The median of the pairs: one slow moment moves it no more than one rank.
TEST(Timing, BracketedRatioIsTheMedianPair) {
  int call = 0;
  const auto a = [&] {
    ++call;
    return 1.0;
  };
  std::vector<double> bs = {0.30, 0.31, 5.0, 0.29, 0.30};
  std::size_t i = 0;
  const auto b = [&] { return bs[i++]; };
  const base::Bracketed p = base::bracketed(5, a, b);
  EXPECT_DOUBLE_EQ(p.ratio, 0.30);
  EXPECT_EQ(call, 6);
}
