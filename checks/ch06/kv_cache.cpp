// ch06.kv_cache — 「显存四块：… KV cache（131 KB / token）」 (Llama-3-8B, bf16)
// Analytic from the config; measured (kv_cache.measured.cpp): a bf16 cache for N tokens allocated by the LibTorch
// decoder code (K and V per layer, shaped from the config as the model reads it), counted by the allocator, per token.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

namespace ref = claimcheck::ref;

static void kv_cache(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));

  // Run: K and V, per layer, per KV head, head_dim values of 2 bytes.
  const double bytes = static_cast<double>(ref::kv_cache_bytes_per_token(cfg, 2));

  // Verify.
  ctx.measure(bytes / 1e3, "KB");
  ctx.assumption("bf16 cache; grouped-query attention: " + std::to_string(cfg.kv_heads) + " KV heads of " +
                 std::to_string(cfg.head_dim) + " in each of " + std::to_string(cfg.layers) + " layers; KB = 1000 B");
  ctx.alternative("without GQA (one KV head per query head)",
                  bytes * static_cast<double>(cfg.heads) / static_cast<double>(cfg.kv_heads) / 1e3, "KB",
                  "what the cache would cost with multi-head attention");
  ctx.alternative("in KiB", bytes / 1024, "KiB", "the same bytes in binary units");
}
CLAIMCHECK_REGISTER(kv_cache).claim("ch06.kv_cache");
