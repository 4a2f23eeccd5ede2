// ch06.decode_intensity — 「decode 强度 ≈ 1 远低于 295，是 memory-bound，所以 batch 大才快」
// Analytic part; the batch sweep on this machine arrives with the measured checks.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

namespace ref = claimcheck::ref;

static void decode_intensity(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  const auto params = static_cast<double>(ref::count_params(cfg).total());

  // Run: FLOP per token over bytes per token at batch 1, and the batch at which it meets the ridge.
  const double bytes = ref::decode_bytes_per_token(cfg, {});
  const double intensity = 2.0 * params / bytes;

  // Verify.
  ctx.measure(intensity, "FLOP/byte");
  ctx.measure_bool("memory_bound", intensity < hw.ridge());
  ctx.measure("knee_batch", hw.ridge() / intensity, "count");
  ctx.assumption("2 FLOP per parameter per token, every bf16 weight read once per step; a batch of B tokens "
                 "reuses each weight B times, so intensity ~ B until the ridge");
  ctx.alternative("matmul FLOPs only (no embedding lookup FLOPs)",
                  2.0 * static_cast<double>(ref::count_params(cfg).total() - ref::count_params(cfg).embedding) / bytes,
                  "FLOP/byte", "the lookup moves bytes but does no multiply-adds");
  ctx.pending("per-token cost against batch size measured on this machine (issue 9)");
}
CLAIMCHECK_REGISTER(decode_intensity).claim("ch06.decode_intensity");
