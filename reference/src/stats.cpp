#include "claimcheck/ref/stats.h"

#include <cmath>
#include <random>

namespace claimcheck::ref {

double wald_halfwidth(double p, std::int64_t n, double z) { return z * std::sqrt(p * (1 - p) / n); }

Interval wald_interval(double p, std::int64_t n, double z) {
  const double h = wald_halfwidth(p, n, z);
  return {p - h, p + h};
}

Interval wilson_interval(double p, std::int64_t n, double z) {
  const double z2 = z * z, denom = 1 + z2 / n;
  const double centre = (p + z2 / (2.0 * n)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / n + z2 / (4.0 * n * n)) / denom;
  return {centre - half, centre + half};
}

namespace {
bool covers(std::int64_t k, std::int64_t n, double p, bool wilson, double z) {
  const double ph = static_cast<double>(k) / n;
  const Interval i = wilson ? wilson_interval(ph, n, z) : wald_interval(ph, n, z);
  return i.lo <= p && p <= i.hi;
}
}  // namespace

double exact_coverage(double p, std::int64_t n, bool wilson, double z) {
  double cov = 0;
  for (std::int64_t k = 0; k <= n; ++k) {
    const double logpmf = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + k * std::log(p) +
                          (n - k) * std::log1p(-p);
    if (covers(k, n, p, wilson, z)) cov += std::exp(logpmf);
  }
  return cov;
}

double simulated_coverage(double p, std::int64_t n, bool wilson, std::int64_t draws, std::uint64_t seed, double z) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution coin(p);
  std::int64_t hit = 0;
  for (std::int64_t d = 0; d < draws; ++d) {
    std::int64_t k = 0;
    for (std::int64_t i = 0; i < n; ++i) k += coin(rng);
    hit += covers(k, n, p, wilson, z);
  }
  return static_cast<double>(hit) / draws;
}

double two_proportion_p_value(double p1, std::int64_t n1, double p2, std::int64_t n2) {
  const double pooled = (p1 * n1 + p2 * n2) / (n1 + n2);
  const double se = std::sqrt(pooled * (1 - pooled) * (1.0 / n1 + 1.0 / n2));
  const double zstat = std::fabs(p1 - p2) / se;
  return std::erfc(zstat / std::sqrt(2.0));
}

}  // namespace claimcheck::ref
