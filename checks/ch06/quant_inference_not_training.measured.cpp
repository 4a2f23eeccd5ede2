// ch06.quant_inference_not_training, measured part: a decode step of a Llama-3-8B-shaped layer on the GEMV kernels
// and a training step of a Llama-shaped block in LibTorch, each placed against this machine's measured ridge
// (intensity = FLOPs over the bytes the step must touch) and each timed against the roof that should bound it.
#include "claimcheck/ref/ledger.h"
#include "testbed/testbed.h"

#include <vector>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/perf.h"
#endif

static void quant_inference_not_training_placed(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  ch06::Testbed tb(ctx, /*cpu_only=*/true);  // both steps run here: LibTorch's training step on this CPU
  const ch06::Roofs& roofs = tb.measure();
  ch06::K::DecodeShape shape = ch06::decode_shape(ctx);
  const auto opts = ch06::gemv_options(ctx);
  const ch06::K::DecodeStack stack(shape, "bf16", ctx.seed(), opts.faults);
  // Fifteen steps, each against one read of its own weights by the probe's reader just before: the median ratio.
  const auto x = ch06::random_activations(static_cast<std::size_t>(shape.hidden), ctx.seed());
  std::vector<float> y(x.size());
  ch06::Kernel decode{"decode step (bf16, batch 1)", stack.flops(), static_cast<double>(stack.weight_bytes())};
  decode.sample = [&] { return ch06::best_seconds(1, [&] { stack.step(x.data(), y.data(), opts); }); };
  decode.rounds = 15;
  decode.warm_ups = 1;
  decode.reads = ch06::stack_reads(stack);
  decode.bound = ch06::Bound::memory;
  const ch06::Timing dec = tb.time(decode);
  ctx.measure("output_matches_reference", ch06::error_figure(ch06::stack_output_error(stack, x.data(), y.data(), opts)),
              "ratio");
  const double t_dec = dec.seconds;
  const auto step = claimcheck::train::time_block_step(
      ctx.input_path("train_config"), ctx.seed(), 1, ctx.input("cpu_train_tokens").get<int>(), 2, ctx.planted_fault());
  const double dec_bytes = static_cast<double>(stack.weight_bytes());
  const double dec_i = stack.flops() / dec_bytes;
  const double step_flops = 3 * step.forward_flops;
  const double train_i = step_flops / static_cast<double>(step.step_peak_bytes);
  const double dec_vs_mem = dec.ratio;
  const double train_vs_comp = step.step_s / roofs.flops_seconds(step_flops);
  ctx.measure_bool("measured_decode_left", dec_i < roofs.ridge());
  ctx.measure_bool("measured_train_right", roofs.ridge() < train_i);
  // The step's bytes against the state it must hold, from the answer key's count of the block's parameters: fp32
  // weights, gradients and AdamW's m and v, 16 bytes each (the activations come on top).
  const claimcheck::ref::ParamCount pc =
      claimcheck::ref::count_params(claimcheck::ref::load_model_config(ctx.input_path("train_config")));
  const double state_bytes = 16.0 * static_cast<double>(step.layers) * static_cast<double>(pc.per_layer());
  ctx.measure("train_bytes_over_state", static_cast<double>(step.step_peak_bytes) / state_bytes, "ratio");
  ctx.measure("measured_decode_intensity", dec_i, "FLOP/byte");
  ctx.measure("measured_train_intensity", train_i, "FLOP/byte");
  ctx.measure("measured_ridge", roofs.ridge(), "FLOP/byte");
  ctx.measure("decode_time_over_bytes_roof", dec_vs_mem, "ratio");
  ctx.measure("train_time_over_compute_roof", train_vs_comp, "ratio");
  ctx.detail("decode_step_over_read", dec.ratios);  // each round's, in order
  tb.record("decode and training", {ch06::roofline_point(decode, t_dec),
                                    ch06::roofline_point("training step (fp32 block)", step_flops,
                                                         static_cast<double>(step.step_peak_bytes), step.step_s)});
  ctx.assumption("measured decode: " + std::to_string(shape.layers) +
                 " Llama-3-8B-shaped layer(s), bf16, batch 1: "
                 "FLOPs over the weight bytes, and its time against one read of those very bytes by the read probe "
                 "just before (the memory roof explains it)");
  ctx.assumption("measured training: " + std::to_string(step.layers) + " layers of " +
                 ctx.input_path("train_config").filename().string() + ", fp32, " + std::to_string(step.tokens) +
                 " tokens, forward + backward + AdamW: 3x the forward's FLOPs over the allocator's peak bytes in the "
                 "step (weights, gradients, AdamW state, activations: each touched at least once, so the intensity "
                 "is at most this)");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(quant_inference_not_training_placed).claim("ch06.quant_inference_not_training").part("measured");
