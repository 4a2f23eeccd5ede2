// Binomial confidence intervals and a two-proportion test (reference, analytic).
#pragma once
#include <cstdint>

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
// Two-sided p-value of the pooled two-proportion z-test.
double two_proportion_p_value(double p1, std::int64_t n1, double p2, std::int64_t n2);

}  // namespace claimcheck::ref
