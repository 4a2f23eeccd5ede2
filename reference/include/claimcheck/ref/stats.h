// Binomial confidence intervals and a two-proportion test (reference, analytic).
#pragma once
#include <cstdint>
#include <vector>

namespace claimcheck::ref {

// Normal-approximation (Wald) half-width: z * sqrt(p (1 - p) / n).
double wald_halfwidth(double p, std::int64_t n, double z = 1.96);
struct Interval {
  double lo, hi;
};
Interval wald_interval(double p_hat, std::int64_t n, double z = 1.96);
Interval wilson_interval(double p_hat, std::int64_t n, double z = 1.96);
// Exact coverage of an interval method at true p: sum of binomial probabilities of the k whose interval holds p.
double exact_coverage(double p, std::int64_t n, bool wilson, double z = 1.96);
// Coverage by simulation: `draws` samples of Binomial(n, p) from a seeded generator.
double simulated_coverage(double p, std::int64_t n, bool wilson, std::int64_t draws, std::uint64_t seed,
                          double z = 1.96);
// How far another seed moves a result: the mean absolute difference over all pairs of `x` (Gini's mean difference),
// with a percentile bootstrap interval (`resamples` resamples of x with replacement, a seeded generator; each
// replicate rescaled by n / (n - 1), the share of a resample's pairs that are two different draws' expectation).
struct BootstrapEstimate {
  double estimate = 0;
  Interval interval{0, 0};
  double level = 0.95;
  int resamples = 0;
  std::vector<double> replicates;  // the resamples' rescaled statistics, sorted (the interval's percentiles of them)
};
double mean_abs_difference(const std::vector<double>& x);
BootstrapEstimate bootstrap_mean_abs_difference(const std::vector<double>& x, int resamples, double level,
                                                std::uint64_t seed);

// The worse of two errors, a NaN in either sticking (std::max(worst, NaN) is worst: an output the kernel left NaN
// would read as no error at all).
inline double worse(double worst, double e) { return worst != worst || e != e ? worst + e : (e > worst ? e : worst); }

// Two-sided p-value of the pooled two-proportion z-test.
double two_proportion_p_value(double p1, std::int64_t n1, double p2, std::int64_t n2);

}  // namespace claimcheck::ref
