// ch04.activation_gib — 「激活另算：B = 1、T = 4096 约 16.5 GiB」 (Llama-3-8B)
// Analytic part: an activation model per token per layer with its assumptions explicit.
// Measured part (activation_gib.measured.cpp): saved bytes per token per layer of the Llama-shaped decoder
// (llama-scaled-ch04.json) under the counting allocator, per op, as k x hidden; k carried to Llama-3-8B's hidden size
// and layers.
#include <tuple>

#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void activation_gib(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const auto batch = ctx.input("batch").get<std::int64_t>();
  const auto tokens = ctx.input("tokens").get<std::int64_t>();
  constexpr double GiB = 1073741824.0;

  // Run: the saved tensors of one layer, per token, times layers and tokens (a mixture of experts' sparse layers
  // keep their own list: the per-layer figure is the mean over the model's layers).
  const std::int64_t sparse = cfg.sparse_layers(), dense = cfg.layers - sparse;
  nlohmann::json saved = nlohmann::json::object();
  double elems = 0;
  for (const auto& [list, n, kind] : {std::tuple{ref::saved_per_layer(cfg), dense, "dense_layers"},
                                      std::tuple{ref::saved_per_sparse_layer(cfg), sparse, "sparse_layers"}}) {
    if (n == 0) continue;
    nlohmann::json& into = sparse > 0 ? saved[kind] : saved;
    for (const auto& t : list) {
      into[t.name] = t.elements_per_token;
      elems += static_cast<double>(t.elements_per_token) * static_cast<double>(n) / static_cast<double>(cfg.layers);
    }
  }
  const double bytes = ref::activation_bytes(cfg, batch, tokens, {});

  // Verify.
  ctx.measure(bytes, "B");  // in bytes: the harness converts to the stated GiB (its unit table judged too)
  ctx.measure("bytes_per_token_per_layer_over_hidden", 2.0 * elems / cfg.hidden, "count");
  ctx.detail("saved_elements_per_token_per_layer", saved);
  ctx.assumption("bf16 activations; FlashAttention-style attention (the T x T probabilities are recomputed, not kept)");
  ctx.assumption(
      "RMSNorm keeps its input; SwiGLU keeps gate and up outputs and the product fed to down_proj; no dropout");
  ctx.assumption("logits and the loss are outside the layers and not counted");
  ctx.alternative("eager attention keeping softmax probabilities",
                  ref::activation_bytes(cfg, batch, tokens, {2, true, false}) / GiB, "GiB",
                  "adds heads x T bf16 values per token per layer");
  ctx.alternative("eager SiLU keeping its output too",
                  ref::activation_bytes(cfg, batch, tokens, {2, false, true}) / GiB, "GiB",
                  "what a plain PyTorch SiLU * up saves");
}
CLAIMCHECK_REGISTER(activation_gib).claim("ch04.activation_gib");
