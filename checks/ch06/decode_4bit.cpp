// ch06.decode_4bit — 「4-bit 量化字节 1/4、时间也 1/4」 (decode is bytes / bandwidth)
// Analytic part under the format named in the expected file; the measured 4-bit GEMV arrives later.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

namespace ref = claimcheck::ref;

static void decode_4bit(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  const ref::QuantFormat q = ref::load_quant_format(ctx.input_path("quant"));

  // Run: bytes read per token in bf16 and in the 4-bit format; time follows bytes when memory-bound.
  const double bf16 = ref::decode_bytes_per_token(cfg, {});
  const double q4 = ref::quantized_weight_bytes(cfg, q);
  const double t_bf16 = bf16 / hw.bandwidth, t_q4 = q4 / hw.bandwidth;

  // Verify.
  ctx.measure(q4 / bf16, "ratio");
  ctx.measure("time_ratio", t_q4 / t_bf16, "ratio");
  ctx.assumption("format: " + q.name + "; decode stays memory-bound at 4 bits (intensity 4 FLOP/byte, still far "
                 "left of the ridge) and dequantisation is free");
  for (const char* alt : {"alt_absmax", "alt_bnb"}) {
    const ref::QuantFormat a = ref::load_quant_format(ctx.input_path(alt));
    ctx.alternative(a.name, ref::quantized_weight_bytes(cfg, a) / bf16, "ratio",
                    std::to_string(a.bits_per_param()) + " bits per quantised weight");
  }
  ctx.pending("a 4-bit GEMV against the bf16 one, timed on this machine (issue 9)");
}
CLAIMCHECK_REGISTER(decode_4bit).claim("ch06.decode_4bit");
