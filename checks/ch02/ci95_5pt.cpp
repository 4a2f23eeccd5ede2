// ch02.ci95_5pt — 「80 道题 ±10.9，5 个点的差分辨不出」
// 5 points lies inside the interval, and a two-sample test agrees.
#include "claimcheck/check.h"
#include "claimcheck/ref/stats.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void ci95_5pt(claimcheck::Context& ctx) {
  // Prepare: two systems scored on the same-sized test, 5 points apart around 50%.
  const auto n = ctx.input("n").get<std::int64_t>();
  const double p = ctx.input("p").get<double>();
  const double diff = ctx.input("difference_points").get<double>() / 100.0;
  if (!(p > 0 && p < 1))
    throw std::invalid_argument("ch02.ci95_5pt: field 'inputs.p': " + std::to_string(p) + " is no rate in (0, 1)");
  if (!(p + diff > 0 && p + diff < 1))
    throw std::invalid_argument("ch02.ci95_5pt: field 'inputs.difference_points': p + difference (" +
                                std::to_string(p + diff) + ") is no rate in (0, 1)");

  // Run.
  const double half = ref::wald_halfwidth(p, n);
  const double pval = ref::two_proportion_p_value(p, n, p + diff, n);
  // The smallest difference a two-sample test at the 5% level would detect (normal approximation).
  const double detectable = 1.96 * std::sqrt(2 * p * (1 - p) / static_cast<double>(n));

  // Verify.
  ctx.measure_bool("value", diff < half && pval > 0.05);
  ctx.measure("p_value", pval, "ratio");
  // The same test on two samples of different sizes (inputs.unequal), where the pooled rate weighs each by its n: at
  // equal n a mean of the two rates, or weights swapped, reads the same.
  const nlohmann::json& u = ctx.input("unequal");
  const auto rate = [&](const char* k) {
    const nlohmann::json& v = u.contains(k) ? u.at(k) : nlohmann::json();
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.unequal." + k + "': expected a rate in [0, 1]");
    return v.get<double>();
  };
  const auto size = [&](const char* k) {
    const nlohmann::json& v = u.contains(k) ? u.at(k) : nlohmann::json();
    if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 1000000000)
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.unequal." + k +
                                  "': expected an integer from 1 to 1e9");
    return v.get<std::int64_t>();
  };
  if (!u.is_object())
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.unequal': expected {p1, n1, p2, n2}");
  ctx.measure("p_value_unequal_n", ref::two_proportion_p_value(rate("p1"), size("n1"), rate("p2"), size("n2")),
              "ratio");
  ctx.measure("halfwidth", 100.0 * half, "points");
  ctx.measure("detectable_difference", 100.0 * detectable, "points");
  ctx.assumption("accuracies " + std::to_string(p) + " and " + std::to_string(p + diff) +
                 " on n = " + std::to_string(n) + " each; pooled two-proportion z-test, two-sided, alpha = 0.05");
  const double n_needed = std::ceil(2 * p * (1 - p) * std::pow(1.96 / diff, 2));
  ctx.alternative("questions needed to resolve 5 points", n_needed, "count",
                  "n with 1.96 * sqrt(2p(1-p)/n) = 5 points");
}
CLAIMCHECK_REGISTER(ci95_5pt).claim("ch02.ci95_5pt");
