// ch03.no_grad_memory — 「评测不加 no_grad：中间量等一个不会来的 backward，显存涨到 OOM」
// Live bytes (counting allocator) while evaluation keeps each batch's loss, with and without no_grad.
#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

#include <cmath>

#include <nlohmann/json.hpp>

static void no_grad_memory(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const int n = ctx.input("batches").get<int>();
  const auto r = claimcheck::train::evaluation_memory(ctx.seed(), n, ctx.planted_fault());
  ctx.measure(r.with_grad_bytes.back() / r.with_grad_bytes.front(), "x");
  ctx.measure("no_grad_extra", (r.no_grad_bytes.back() - r.no_grad_bytes.front()) / 1e3, "KB");
  ctx.measure("retained_per_batch", r.with_grad_bytes.front() / 1e6, "MB");
  ctx.detail("live_bytes", {{"without_no_grad", r.with_grad_bytes}, {"with_no_grad", r.no_grad_bytes}});
  // The project's own evaluation (the perplexity chapter 3's run reports) holds to the rule: its peak as the training
  // loop calls it over its peak inside a NoGradGuard of the caller's, where no graph can be built.
  const auto e = claimcheck::train::evaluation_peaks(ctx.seed(), ctx.planted_fault());
  ctx.measure("project_eval_peak_ratio", e.under_outer_guard > 0 ? e.as_called / e.under_outer_guard : INFINITY,
              "ratio");
  ctx.detail("project_eval_peak_bytes", {{"as_called", e.as_called}, {"under_outer_guard", e.under_outer_guard}});
  ctx.assumption("evaluation appends each batch's loss tensor to a list (\"total += loss\"), as buggy code does");
#endif
}
CLAIMCHECK_REGISTER(no_grad_memory).claim("ch03.no_grad_memory");
