// ch03.no_grad_memory — 「评测不加 no_grad：中间量等一个不会来的 backward，显存涨到 OOM」
// Live bytes (counting allocator) while evaluation keeps each batch's loss, with and without no_grad.
#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void no_grad_memory(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const int n = ctx.input("batches").get<int>();
  const auto r = claimcheck::train::evaluation_memory(ctx.seed(), n, ctx.planted_fault());
  ctx.measure(r.with_grad_bytes.back() / r.with_grad_bytes.front(), "x");
  ctx.measure("no_grad_extra", (r.no_grad_bytes.back() - r.no_grad_bytes.front()) / 1e3, "KB");
  ctx.measure("retained_per_batch", r.with_grad_bytes.front() / 1e6, "MB");
  ctx.detail("live_bytes", {{"without_no_grad", r.with_grad_bytes}, {"with_no_grad", r.no_grad_bytes}});
  ctx.assumption("evaluation appends each batch's loss tensor to a list (\"total += loss\"), as buggy code does");
#endif
}
CLAIMCHECK_REGISTER(no_grad_memory).claim("ch03.no_grad_memory");
