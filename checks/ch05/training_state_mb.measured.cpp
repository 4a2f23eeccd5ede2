// ch05.training_state_mb, measured part: live bytes the counting allocator sees added by the LoRA parameters, their
// gradients and AdamW's state, after one step on the LibTorch-built model (fp32 on the CPU: 4 + 4 + 4 + 4 bytes).
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"
#include "qwen_lora.h"

namespace ref = claimcheck::ref;

static void training_state_mb_allocated(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const auto m = ch05::measure_qwen_lora(ctx);
  ctx.measure("allocator", ref::megabytes(static_cast<double>(m.state_bytes)), "MB");
  ctx.detail("allocator_breakdown_bytes", {{"lora_parameters", m.lora_param_bytes},
                                           {"gradients", m.grad_bytes},
                                           {"adamw_state", m.optimizer_bytes},
                                           {"total", m.state_bytes}});
  ctx.detail("step_seconds", m.step_seconds);
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(training_state_mb_allocated).claim("ch05.training_state_mb").part("measured");
