// ch04.checkpointing_memory, measured part: the project's checkpointing (kernels/train/decoder.cpp) on the
// Llama-shaped decoder (inputs.measure_config), saved bytes per token per layer with and without, in units of hidden,
// carried to the claim's model (inputs.config) at B x T.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/memory.h"
#endif

namespace ref = claimcheck::ref;

static void checkpointing_memory_saved(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const auto batch = ctx.input("batch").get<std::int64_t>();
  const auto tokens = ctx.input("tokens").get<std::int64_t>();
  constexpr double GiB = 1073741824.0;
  const auto small = ctx.input_path("measure_config");
  const ref::ModelConfig sc = ref::load_model_config(small);
  const int mb = ctx.input("measure_batch").get<int>(), mt = ctx.input("measure_tokens").get<int>();
  const auto r = claimcheck::train::checkpointing(small, ctx.seed(), mb, mt, 0, "bf16", ctx.planted_fault());
  const double h = static_cast<double>(sc.hidden);
  const double scale = static_cast<double>(cfg.hidden) * static_cast<double>(cfg.layers) * static_cast<double>(batch) *
                       static_cast<double>(tokens) / GiB;
  ctx.measure("measured_k_checkpointed", r.saved_checkpointed / h, "count");
  ctx.measure("measured_extrapolated", r.saved_checkpointed / h * scale, "GiB");
  ctx.measure("measured_reduction", r.saved_plain / r.saved_checkpointed, "x");
  // The ledger's checkpoint bytes (the analytic figure's formula) on the measured model and batch, against what the
  // project's checkpointing left live there: to the byte (the 5% of the analytic figures would take a checkpoint more).
  ctx.measure("ledger_vs_measured",
              ref::checkpointed_activation_bytes(sc, mb, mt, 2) /
                  (r.saved_checkpointed * static_cast<double>(mb) * mt * static_cast<double>(sc.layers)),
              "ratio");
  ctx.detail("measured_bytes_per_token_layer", {{"plain", r.saved_plain}, {"checkpointed", r.saved_checkpointed}});
  ctx.assumption("measured on " + small.filename().string() + " in bf16, batch " + std::to_string(mb) + ", " +
                 std::to_string(mt) + " tokens: bytes the layers' forward leaves live with autograd minus without");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(checkpointing_memory_saved).claim("ch04.checkpointing_memory").part("measured");
