// ch06.quant_inference_not_training — 「量化对推理有效、对训练用处不大，根本原因就是 decode 在 ridge 左边、训练在右边」
// Analytic on Llama-3-8B and the H100 card; measured here: a decode step of a Llama-3-8B-shaped layer on the GEMV
// kernels and a training step of a Llama-shaped block in LibTorch, each placed against this machine's measured
// ridge (intensity = FLOPs over the bytes the step must touch) and each timed against the roof that should bound it:
// quant_inference_not_training.measured.cpp.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void quant_inference_not_training(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  const auto tokens = ctx.input("train_tokens").get<std::int64_t>();
  // FLOPs follow the parameters a token meets (a mixture of experts routes it to a few), bytes the parameters held:
  // equal for a dense model.
  const ref::ParamCount count = ref::count_params(cfg);
  const auto params = static_cast<double>(count.total()), active = static_cast<double>(count.active());

  // Run: intensities of a decode step (batch 1; it reads the experts it routes to) and of a training step of `tokens`
  // tokens (every parameter's state touched once).
  const double decode = 2.0 * active / ref::decode_bytes_per_token(cfg, {});
  const double train_flops = 6.0 * active * static_cast<double>(tokens);  // forward 2 + backward 4
  const double train_bytes = params * ref::bytes_per_param(ref::mixed_precision_adamw_state());
  const double train = train_flops / train_bytes;

  // Verify: decode left of the ridge (fewer bytes = less time), training right of it (bytes are not the limit).
  ctx.measure_bool("value", decode < hw.ridge() && hw.ridge() < train);
  ctx.measure("decode_intensity", decode, "FLOP/byte");
  ctx.measure("train_intensity", train, "FLOP/byte");
  ctx.measure("ridge", hw.ridge(), "FLOP/byte");
  ctx.assumption("training step: 6 FLOP per parameter per token over " + std::to_string(tokens) +
                 " tokens; bytes = the 16 B/param state touched once per step");
  ctx.alternative("decode with 4-bit weights", decode * 4, "FLOP/byte",
                  "4x the intensity, still far left of the ridge: decode stays memory-bound and gets faster");
  ctx.alternative("training step of 512 tokens", 6.0 * active * 512 / train_bytes, "FLOP/byte",
                  "even a short step sits right of the ridge");
}
CLAIMCHECK_REGISTER(quant_inference_not_training).claim("ch06.quant_inference_not_training");
