// ch04.checkpointing_compute — 「gradient checkpointing 多 30% 计算」
// The project's checkpointing (kernels/train/decoder.cpp: keep each layer's input, recompute it in backward)
// against the plain layers: forward + backward time, best of interleaved repeats, and the gradients.
#include "claimcheck/check.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/memory.h"
#endif

static void checkpointing_compute(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace train = claimcheck::train;
  // Prepare.
  const auto config = ctx.input_path("config");
  const int batch = ctx.input("batch").get<int>(), tokens = ctx.input("tokens").get<int>();
  const int repeats = ctx.input("repeats").get<int>();
  const std::string precision = ctx.input("precision").get<std::string>();

  // Run.
  const auto r = train::checkpointing(config, ctx.seed(), batch, tokens, repeats, precision, ctx.planted_fault());

  // Verify.
  ctx.measure(r.step_checkpointed_s / r.step_plain_s, "ratio");
  ctx.measure_bool("grads_equal_plain", r.grads_bitwise_equal);
  ctx.measure("grad_max_abs_diff", r.grad_max_abs_diff, "abs error");
  ctx.detail("seconds", {{"plain", r.step_plain_s}, {"checkpointed", r.step_checkpointed_s}, {"precision", precision}});
  ctx.detail("grad_scale", r.grad_scale);
  ctx.assumption("the layers of the Llama-shaped decoder (" + precision + ", batch " + std::to_string(batch) + ", " +
                 std::to_string(tokens) + " tokens): forward + backward, best of " + std::to_string(repeats) +
                 " interleaved runs each; the head and the loss are outside (they are not recomputed)");
  ctx.assumption("gradients compared bit for bit: the recompute runs the same CPU kernels on the same inputs");
  // The recompute under CPU bf16 autocast (the branch that restores the forward's autocast state): one untimed step
  // each way on the same model, gradients compared bit for bit (the recompute must run the same bf16 kernels).
  if (precision != "autocast") {
    const auto a = train::checkpointing(config, ctx.seed(), batch, tokens, 1, "autocast", ctx.planted_fault());
    ctx.measure_bool("grads_equal_plain_autocast", a.grads_bitwise_equal);
    ctx.detail("autocast_grads", {{"max_abs_diff", a.grad_max_abs_diff}, {"scale", a.grad_scale}});
  }
  if (precision == "fp32")
    ctx.assumption(
        "fp32 here, not bf16: this CPU has no native bf16, and its bf16 backward runs many times its "
        "forward, which hides the recompute (see the expected file)");
#endif
}
CLAIMCHECK_REGISTER(checkpointing_compute).claim("ch04.checkpointing_compute");
