// ch05.qwen_config — 「config.json 里的数字就是结构：Qwen2.5-0.5B 24 层、hidden 896、词表 151936、tie_word_embeddings」
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void qwen_config(claimcheck::Context& ctx) {
  // Prepare + Run: read the shipped public config.json.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));

  // Verify.
  ctx.measure(static_cast<double>(cfg.layers), "layers");
  ctx.measure("hidden", static_cast<double>(cfg.hidden), "count");
  ctx.measure("vocab", static_cast<double>(cfg.vocab), "count");
  ctx.measure_bool("tie_word_embeddings", cfg.tie_embeddings);
  ctx.detail("also_read", {{"heads", cfg.heads},
                           {"kv_heads", cfg.kv_heads},
                           {"head_dim", cfg.head_dim},
                           {"intermediate", cfg.intermediate},
                           {"qkv_bias", cfg.qkv_bias}});
}
CLAIMCHECK_REGISTER(qwen_config).claim("ch05.qwen_config");
