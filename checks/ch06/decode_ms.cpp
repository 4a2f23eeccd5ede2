// ch06.decode_ms — 「decode 每 token 搬 16.06 GB 权重 ÷ 3.35 TB/s ≈ 4.8 ms → 209 token/s」 (Llama-3-8B, H100 SXM)
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

namespace ref = claimcheck::ref;

static void decode_ms(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));

  // Run: bytes read per decoded token / HBM bandwidth.
  const double bytes = ref::decode_bytes_per_token(cfg, {});
  const double seconds = bytes / hw.bandwidth;

  // Verify.
  ctx.measure(seconds * 1e3, "ms");
  ctx.measure("tokens_per_s", 1.0 / seconds, "token/s");
  ctx.measure("weight_bytes", ref::gigabytes(bytes), "GB");
  ctx.assumption(
      "batch 1; every bf16 weight read once per token, the whole embedding table included; "
      "KV cache reads ignored (short context); bandwidth = the spec's peak");
  ref::DecodeModel row;
  row.whole_embedding_table = false;
  ctx.alternative("embedding lookup reads one row", ref::decode_bytes_per_token(cfg, row) / hw.bandwidth * 1e3, "ms",
                  "the table is not streamed: only lm_head's copy of the vocabulary is read");
  ref::DecodeModel ctx4k;
  ctx4k.context_tokens = 4096;
  ctx.alternative("plus a 4096-token KV cache", ref::decode_bytes_per_token(cfg, ctx4k) / hw.bandwidth * 1e3, "ms",
                  "the cache is read once per token as well");
}
CLAIMCHECK_REGISTER(decode_ms).claim("ch06.decode_ms");
