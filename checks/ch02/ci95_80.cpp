// ch02.ci95_80 — 「评测表带上 ci95 = 1.96 √(p(1−p)/n)：80 道题 ±10.9」
// The formula at p = 0.5, n = 80, and how often such an interval covers the truth (exactly and by simulation).
#include "claimcheck/check.h"
#include "claimcheck/ref/stats.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void ci95_80(claimcheck::Context& ctx) {
  // Prepare.
  const auto n = ctx.input("n").get<std::int64_t>();
  const double p = ctx.input("p").get<double>();
  const auto draws = ctx.input("draws").get<std::int64_t>();

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
  ctx.assumption("worst case p = 0.5 (the widest interval); z = 1.96; n = " + std::to_string(n) + " questions");
  ctx.assumption("coverage simulated with " + std::to_string(draws) + " draws of Binomial(n, p), seed from the run");
  const auto w = ref::wilson_interval(p, n);
  ctx.alternative("Wilson half-width at p = 0.5", 100.0 * (w.hi - w.lo) / 2, "points",
                  "the Wilson score interval, better behaved near 0 and 1");
  ctx.alternative("rounded instead of truncated", std::round(1000.0 * half) / 10.0, "points",
                  "the formula rounds to 11.0 points; the series writes 10.9");
}
CLAIMCHECK_REGISTER(ci95_80).claim("ch02.ci95_80");
