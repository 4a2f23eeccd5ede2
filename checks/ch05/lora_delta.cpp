// ch05.lora_delta — 「get_peft_model(model, LoraConfig(r=16, lora_alpha=32, ...))  # ΔW = (α/r)·BA」
// At init (B = 0) the output is the base model's; with B trained away from 0 the module equals
// x (W + (α/r) B A)^T computed apart from it; the merged weight gives the same outputs.
#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

static void lora_delta(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const auto r = claimcheck::train::lora_delta(ctx.seed(), ctx.planted_fault());
  ctx.measure(r.formula_err, "abs error");
  ctx.measure("init", r.init_err, "abs error");
  ctx.measure("merged", r.merged_err, "abs error");
  ctx.measure("output_scale", r.output_scale, "count");
  ctx.assumption("a 64 -> 48 linear layer with bias, r = 8, alpha = 16, fp32");
#endif
}
CLAIMCHECK_REGISTER(lora_delta).claim("ch05.lora_delta");
