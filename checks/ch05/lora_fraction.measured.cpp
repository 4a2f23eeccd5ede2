// ch05.lora_fraction, measured part: requires_grad parameters of the LibTorch-built Qwen2.5-0.5B after the project's
// LoRA wraps the targets (inputs.lora), over the built model's parameters.
#include "claimcheck/check.h"
#include "qwen_lora.h"

static void lora_fraction_built(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const auto m = ch05::measure_qwen_lora(ctx);
  ctx.measure("built_fraction", 100.0 * static_cast<double>(m.trainable) / static_cast<double>(m.params), "%");
  ctx.measure("built_trainable", static_cast<double>(m.trainable) / 1e6, "M params");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(lora_fraction_built).claim("ch05.lora_fraction").part("measured");
