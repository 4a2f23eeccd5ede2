// ch02.ci95_80 — 「评测表带上 ci95 = 1.96 √(p(1−p)/n)：80 道题 ±10.9」
// The formula at p = 0.5, n = 80, and how often such an interval covers the truth (exactly and by simulation).
#include "claimcheck/check.h"
#include "claimcheck/ref/stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void ci95_80(claimcheck::Context& ctx) {
  // Prepare.
  const auto n = ctx.input("n").get<std::int64_t>();
  const double p = ctx.input("p").get<double>();
  const auto draws = ctx.input("draws").get<std::int64_t>();
  // (The coverage bounds, and 0.01 between summed and drawn coverage, are sized for this many draws at least.)
  if (draws < 20000 || draws > 100000000)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.draws': expected 20,000 to 100,000,000 draws");

  // Run.
  const double half = ref::wald_halfwidth(p, n);
  const double wald_sim = ref::simulated_coverage(p, n, false, draws, ctx.seed());
  const double wilson_sim = ref::simulated_coverage(p, n, true, draws, ctx.seed());

  // Verify.
  ctx.measure(100.0 * half, "points");
  ctx.measure("coverage_wald", wald_sim, "ratio");
  ctx.measure("coverage_wald_exact", ref::exact_coverage(p, n, false), "ratio");
  ctx.measure("coverage_wilson", wilson_sim, "ratio");
  ctx.measure("coverage_wilson_exact", ref::exact_coverage(p, n, true), "ratio");
  // The Wilson interval's own width at p (the textbook figure, in expected/), and both intervals at a rate near 0
  // (inputs.p_small), where they cover different draws: at p = 0.5, n = 80 both cover exactly |k - 40| <= 8, so a
  // Wilson interval computed as Wald's, or its width's n taken as n - 1, would read the same there. The exact
  // coverage (the binomial sum) against the simulated one at both rates, the worst gap.
  const auto w = ref::wilson_interval(p, n);
  ctx.measure("wilson_halfwidth", 100.0 * (w.hi - w.lo) / 2, "points");
  const double p_small = ctx.input("p_small").get<double>();
  if (!(p_small > 0 && p_small < 1))
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.p_small': must lie strictly between 0 and 1");
  const double wilson_small = ref::simulated_coverage(p_small, n, true, draws, ctx.seed());
  const double wald_small = ref::simulated_coverage(p_small, n, false, draws, ctx.seed());
  ctx.measure("coverage_wilson_small_p", wilson_small, "ratio");
  ctx.measure("coverage_wald_small_p", wald_small, "ratio");
  ctx.measure("wald_halfwidth_small_p", 100.0 * ref::wald_halfwidth(p_small, n), "points");
  double gap = 0;
  for (const auto& [rate, wilson, simulated] :
       {std::tuple{p, false, wald_sim}, std::tuple{p, true, wilson_sim}, std::tuple{p_small, false, wald_small},
        std::tuple{p_small, true, wilson_small}}) {
    const double g = std::fabs(ref::exact_coverage(rate, n, wilson) - simulated);
    gap = g == g ? std::max(gap, g) : 1.0;
  }
  ctx.measure("exact_vs_simulated_coverage", gap, "ratio");
  ctx.detail("small_p", {{"p", p_small}, {"coverage_wald", wald_small}, {"coverage_wilson", wilson_small}});
  ctx.assumption("worst case p = 0.5 (the widest interval); z = 1.96; n = " + std::to_string(n) + " questions");
  ctx.assumption("coverage simulated with " + std::to_string(draws) + " draws of Binomial(n, p), seed from the run");
  ctx.alternative("rounded instead of truncated", std::round(1000.0 * half) / 10.0, "points",
                  "the formula rounds to 11.0 points; the series writes 10.9");
}
CLAIMCHECK_REGISTER(ci95_80).claim("ch02.ci95_80");
