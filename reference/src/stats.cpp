#include "claimcheck/ref/stats.h"

#include "fault.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>

namespace claimcheck::ref {

double wald_halfwidth(double p, std::int64_t n, double z) {
  // (A planted fault takes the "conservative" p(1 - p) = 1/4 at every p, which p = 0.5 cannot see.)
  const double var = answer_key_fault("stats_wald_conservative") ? 0.25 : p * (1 - p);
  return z * std::sqrt(var / n);
}

Interval wald_interval(double p, std::int64_t n, double z) {
  const double h = wald_halfwidth(p, n, z);
  return {p - h, p + h};
}

Interval wilson_interval(double p, std::int64_t n, double z) {
  const double z2 = z * z, denom = 1 + z2 / n;
  const double centre = (p + z2 / (2.0 * n)) / denom;
  // (A planted fault takes n - 1 for n under the root, which p = 0.5, n = 80's coverage cannot see.)
  const double m = answer_key_fault("stats_wilson_n_minus_1") ? n - 1.0 : static_cast<double>(n);
  const double half = z * std::sqrt(p * (1 - p) / m + z2 / (4.0 * n * n)) / denom;
  return {centre - half, centre + half};
}

namespace {
bool covers(std::int64_t k, std::int64_t n, double p, bool wilson, double z) {
  // The planted fault divides integers on purpose (tests/cli/cli_faults.py: stats_integer_division).
  const double ph = answer_key_fault("stats_integer_division")
                        ? static_cast<double>(k / n)  // NOLINT(bugprone-integer-division)
                        : static_cast<double>(k) / n;
  // (A planted fault takes Wald's interval for Wilson's, which p = 0.5, n = 80 cannot tell apart.)
  const Interval i =
      wilson && !answer_key_fault("stats_wilson_as_wald") ? wilson_interval(ph, n, z) : wald_interval(ph, n, z);
  return i.lo <= p && p <= i.hi;
}
}  // namespace

double exact_coverage(double p, std::int64_t n, bool wilson, double z) {
  double cov = 0;
  for (std::int64_t k = 0; k <= n; ++k) {
    // (A planted fault takes log p for log(1 - p), the same at p = 0.5.)
    const double log_q = answer_key_fault("stats_pmf_symmetric") ? std::log(p) : std::log1p(-p);
    const double logpmf =
        std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + k * std::log(p) + (n - k) * log_q;
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

double mean_abs_difference(const std::vector<double>& x) {
  if (x.size() < 2) throw std::invalid_argument("mean_abs_difference: needs at least two values");
  double sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = i + 1; j < x.size(); ++j) sum += std::fabs(x[i] - x[j]);
  // Over the n (n - 1) / 2 pairs (a planted fault divides by the ordered pairs' n (n - 1): half the figure).
  const double pairs = static_cast<double>(x.size()) * static_cast<double>(x.size() - 1);
  return sum / (answer_key_fault("stats_pairs_ordered") ? pairs : 0.5 * pairs);
}

BootstrapEstimate bootstrap_mean_abs_difference(const std::vector<double>& x, int resamples, double level,
                                                std::uint64_t seed) {
  if (resamples < 100 || !(level > 0 && level < 1))
    throw std::invalid_argument("bootstrap: expected at least 100 resamples and a level in (0, 1), got " +
                                std::to_string(resamples) + " and " + std::to_string(level));
  for (double v : x)
    if (!std::isfinite(v)) throw std::invalid_argument("bootstrap: a value is not finite");
  BootstrapEstimate b;
  b.estimate = mean_abs_difference(x);
  b.level = level;
  b.resamples = resamples;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<std::size_t> pick(0, x.size() - 1);
  std::vector<double> stats(static_cast<std::size_t>(resamples)), r(x.size());
  for (auto& s : stats) {
    for (auto& v : r) v = x[pick(rng)];
    // Two draws of a resample are the same seed with probability 1/n, and then differ by 0: the replicate is
    // rescaled by n / (n - 1) so that the bootstrap distribution centres on the estimate, not 10% below it.
    // (A planted fault leaves the replicates unrescaled.)
    s = mean_abs_difference(r) * (answer_key_fault("stats_bootstrap_unrescaled")
                                      ? 1.0
                                      : static_cast<double>(x.size()) / static_cast<double>(x.size() - 1));
  }
  std::sort(stats.begin(), stats.end());
  const auto at = [&](double q) { return stats[static_cast<std::size_t>(std::floor(q * (resamples - 1) + 0.5))]; };
  // (A planted fault puts the lower bound at 1 - level, a one-sided percentile: 92.5% of the replicates inside.)
  b.interval = {at(answer_key_fault("stats_interval_one_sided_lo") ? 1 - level : (1 - level) / 2), at((1 + level) / 2)};
  b.replicates = std::move(stats);
  return b;
}

double two_proportion_p_value(double p1, std::int64_t n1, double p2, std::int64_t n2) {
  // (A planted fault pools the two rates unweighted, which equal n cannot tell apart.)
  const double pooled = answer_key_fault("stats_pooled_unweighted") ? (p1 + p2) / 2 : (p1 * n1 + p2 * n2) / (n1 + n2);
  const double var = pooled * (1 - pooled) * (1.0 / n1 + 1.0 / n2);
  const double se = answer_key_fault("stats_se_without_sqrt") ? var : std::sqrt(var);
  const double zstat = std::fabs(p1 - p2) / se;
  return std::erfc(zstat / std::sqrt(2.0));
}

}  // namespace claimcheck::ref
