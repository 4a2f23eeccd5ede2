// ch06.kv_cache, measured part: a bf16 cache for N tokens allocated by the LibTorch decoder code (K and V per layer,
// shaped from the config as the model reads it), counted by the allocator, per token.
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "../decoder_vs_transformers.h"
#include "claimcheck/train/perf.h"
#endif

static void kv_cache_allocated(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const int tokens = ctx.input("tokens").get<int>();
  const auto m = claimcheck::train::allocate_kv_cache(ctx.input_path("config"), tokens, ctx.planted_fault());
  ctx.measure("measured", static_cast<double>(m.bytes) / tokens / 1e3, "KB");
  // The same bytes to the byte: the ledger's bf16 figure per token, times the tokens (the rounding of `measured` to
  // the series' digit would take a cache a token or a few too long).
  const double ledger_bytes = static_cast<double>(claimcheck::ref::kv_cache_bytes_per_token(
                                  claimcheck::ref::load_model_config(ctx.input_path("config")), 2)) *
                              tokens;
  ctx.measure("allocated_vs_ledger", static_cast<double>(m.bytes) / ledger_bytes, "ratio");
  // What the ledger's decode reads of that cache (decode_bytes_per_token at a context of `tokens`, less at none:
  // chapter 6's bytes per decoded token), against the cache allocated for that context.
  {
    namespace R = claimcheck::ref;
    const R::ModelConfig cfg = R::load_model_config(ctx.input_path("config"));
    R::DecodeModel with_context;
    with_context.context_tokens = tokens;
    const double read = R::decode_bytes_per_token(cfg, with_context) - R::decode_bytes_per_token(cfg, {});
    ctx.measure("decode_kv_read_vs_allocated", read / static_cast<double>(m.bytes), "ratio");
  }
  // Heads whose width is set apart from the hidden size (head_dim, as Gemma's and Qwen3's): the cache is kv_heads x
  // head_dim wide, which hidden / heads is not there (here it is wherever the claim's config is read).
  if (ctx.wants("wide_heads_allocated_vs_ledger")) {
    claimcheck::ScratchDir wdir("kv_wide_heads");
    const auto [wide, wc] = checks::wide_heads_config(ctx, "config", "wide_heads_overrides", wdir.path());
    const auto w = claimcheck::train::allocate_kv_cache(wide, tokens, ctx.planted_fault());
    ctx.measure(
        "wide_heads_allocated_vs_ledger",
        static_cast<double>(w.bytes) / (static_cast<double>(claimcheck::ref::kv_cache_bytes_per_token(wc, 2)) * tokens),
        "ratio");
    ctx.detail("wide_heads_allocated", {{"bytes", w.bytes}, {"kv_heads", w.kv_heads}, {"head_dim", w.head_dim}});
  }
  ctx.detail("allocated", {{"bytes", m.bytes},
                           {"tokens", m.tokens},
                           {"tensors", m.tensors},
                           {"layers", m.layers},
                           {"kv_heads", m.kv_heads},
                           {"head_dim", m.head_dim}});
  ctx.assumption("measured: " + std::to_string(m.tensors) + " bf16 tensors [1, " + std::to_string(m.kv_heads) + ", " +
                 std::to_string(tokens) + ", " + std::to_string(m.head_dim) +
                 "] allocated through the counting "
                 "allocator (" +
                 std::to_string(m.bytes) + " bytes), divided by the tokens");

  // The cache in use: the decoder's cached greedy decode (a long prompt in two calls, then one token at a time) against
  // transformers' own cache (past_key_values) on the same weights, on the config scaled by inputs.reference_overrides;
  // the bytes its cache holds per token against transformers' and against the ledger's formula (fp32 here). Not in a
  // planted-fault run that judges none of them (run --statement).
  if (!ctx.wants_any({"cache_bytes_vs_ledger", "cached_decode_vs_transformers", "cache_bytes_vs_transformers",
                      "greedy_vs_transformers"}))
    return;
  claimcheck::ScratchDir dir("kv_vs_transformers");
  const auto scaled = checks::scaled_config(ctx, "config", "reference_overrides", dir.path()).first;
  const int prompt = ctx.input("reference_prompt").get<int>(), steps = ctx.input("reference_steps").get<int>();
  const auto g = claimcheck::train::export_decoder_generation(scaled, ctx.seed(), prompt, steps, dir.path() / "run",
                                                              ctx.planted_fault());
  const double ledger =
      static_cast<double>(claimcheck::ref::kv_cache_bytes_per_token(claimcheck::ref::load_model_config(scaled), 4));
  ctx.measure("cache_bytes_vs_ledger", g.cache_bytes_per_token / ledger, "ratio");
  const nlohmann::json r =
      claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py",
                                    {"generate", "--config", scaled.string(), "--dir", (dir.path() / "run").string()});
  if (r.contains("skip"))
    ctx.pending("the cached decode against transformers: " + r["skip"].get<std::string>());
  else
    claimcheck::forward_driver_result(ctx, r);
  ctx.assumption("cached decode: " + ctx.input("config").get<std::string>() + " with " +
                 ctx.input("reference_overrides").dump() + ", fp32, a random prompt of " + std::to_string(prompt) +
                 " tokens in two calls (its last min(48, half) second, every position's logits compared), then " +
                 std::to_string(steps) + " greedy tokens one at a time; transformers' eager attention");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(kv_cache_allocated).claim("ch06.kv_cache").part("measured");
