// ch03.loss_in_fp32 — 「loss = F.cross_entropy(logits.view(-1, V).float(), …)  # loss 用 fp32 算」
// Cross-entropy over a 32K vocabulary from bf16 and from fp32 logits against fp64; the project's loss
// helper, handed bf16 logits, must land at fp32's error.
#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

static void loss_in_fp32(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const auto p = claimcheck::train::loss_precision(ctx.seed(), ctx.planted_fault());
  ctx.measure(p.project_err, "abs error");
  ctx.measure("bf16_over_fp32", p.bf16_err / p.fp32_err, "x");
  ctx.measure("bf16_error", p.bf16_err, "abs error");
  ctx.measure("fp32_error", p.fp32_err, "abs error");
  ctx.assumption("512 positions x 32000 classes, logits ~ N(0, 9); the loss is ~10 nats, where bf16 resolves 0.06");
#endif
}
CLAIMCHECK_REGISTER(loss_in_fp32).claim("ch03.loss_in_fp32");
