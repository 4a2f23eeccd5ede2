// ch04.autocast_keeps_fp32 — 「autocast 不把参数变成 bf16：减半的是矩阵乘的中间结果」
// One step of the Llama-shaped decoder under CPU bf16 autocast; the dtypes are read off the tensors.
#include "claimcheck/check.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/memory.h"
#endif

static void autocast_keeps_fp32(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // Run.
  const auto seen = claimcheck::train::autocast_dtypes(ctx.input_path("config"), ctx.seed(), ctx.planted_fault());
  auto is = [&](const std::string& k, const char* dtype) { return seen.count(k) && seen.at(k) == dtype; };

  // Verify: what the series says, observed.
  const bool params = is("parameters after the step", "Float") && is("gradients", "Float");
  bool matmuls = true;
  for (const char* k : {"q_proj output (matmul)", "gate_proj output (matmul)", "down_proj output (matmul)",
                        "attention scores (matmul)", "logits (matmul)"})
    matmuls = matmuls && is(k, "BFloat16");
  const bool loss = is("loss (cross_entropy on the bf16 logits)", "Float");
  ctx.measure_bool("params_and_grads_fp32", params);
  ctx.measure_bool("matmul_outputs_bf16", matmuls);
  ctx.measure_bool("loss_fp32", loss);
  ctx.measure_bool("softmax_output_fp32", is("softmax output", "Float"));
  ctx.measure_bool("value", params && matmuls && loss);
  ctx.detail("dtypes", seen);
  ctx.assumption(
      "CPU autocast to bf16 (the device here); the softmax is the eager attention's own, so its output "
      "can be looked at (SDPA's is inside the kernel)");
  ctx.assumption("the loss is cross_entropy on the bf16 logits without a cast: fp32 there is autocast's choice");
#endif
}
CLAIMCHECK_REGISTER(autocast_keeps_fp32).claim("ch04.autocast_keeps_fp32");
