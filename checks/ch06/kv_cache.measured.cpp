// ch06.kv_cache, measured part: a bf16 cache for N tokens allocated by the LibTorch decoder code (K and V per layer,
// shaped from the config as the model reads it), counted by the allocator, per token.
#include "claimcheck/check.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/perf.h"
#endif

static void kv_cache_allocated(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const int tokens = ctx.input("tokens").get<int>();
  const auto m = claimcheck::train::allocate_kv_cache(ctx.input_path("config"), tokens, ctx.planted_fault());
  ctx.measure("measured", static_cast<double>(m.bytes) / tokens / 1e3, "KB");
  ctx.detail("allocated", {{"bytes", m.bytes}, {"tokens", m.tokens}, {"tensors", m.tensors}, {"layers", m.layers},
                           {"kv_heads", m.kv_heads}, {"head_dim", m.head_dim}});
  ctx.assumption("measured: " + std::to_string(m.tensors) + " bf16 tensors [1, " + std::to_string(m.kv_heads) + ", " +
                 std::to_string(tokens) + ", " + std::to_string(m.head_dim) + "] allocated through the counting "
                 "allocator (" + std::to_string(m.bytes) + " bytes), divided by the tokens");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(kv_cache_allocated).claim("ch06.kv_cache").part("measured");
