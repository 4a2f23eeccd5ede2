// ch06.prefill_ms — 「prefill 4096 token：2 × 8B × 4096 ≈ 66 TFLOP ÷ 989 TFLOPS ≈ 67 ms，compute-bound」
// Analytic part on the series' card; the measured part comes with issue 9 (CPU) and issue 10 (GPU).
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void prefill_ms(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  const auto tokens = ctx.input("tokens").get<std::int64_t>();
  const std::int64_t params = ref::count_params(cfg).total();

  // Run: 2 FLOP per parameter per token at peak; intensity against the ridge.
  const double flops = ref::prefill_flops(params, tokens);
  const double intensity = flops / (static_cast<double>(params) * ref::dtype_bytes("bf16"));

  // Verify.
  ctx.measure(flops / hw.peak_flops * 1e3, "ms");
  ctx.measure("tflop", flops / 1e12, "TFLOP");
  ctx.measure_bool("compute_bound", intensity > hw.ridge());
  ctx.measure("intensity", intensity, "FLOP/byte");
  ctx.assumption("2 FLOP per parameter per token (matmuls, embedding counted as the series does); attention's "
                 "T^2 term ignored; 100% of peak");
  const double attn = 2.0 * 2.0 * cfg.layers * static_cast<double>(tokens) * tokens * cfg.heads * cfg.head_dim / 2;
  ctx.alternative("with causal attention FLOPs", (flops + attn) / hw.peak_flops * 1e3, "ms",
                  "QK^T and PV over the causal half");
  ctx.alternative("at 50% MFU", 2 * flops / hw.peak_flops * 1e3, "ms", "a typical achieved fraction of peak");
  ctx.pending("measured prefill time on a GPU (issues 9 and 10)");
}
CLAIMCHECK_REGISTER(prefill_ms).claim("ch06.prefill_ms");
