// The training step that chapter 6's timings and profile share (kernels/train/perf.cpp, profiler.cpp): a config's
// decoder layers in fp32 with their RoPE tables, and the batch a data pipeline hands over. Private to kernels/train.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "decoder.h"

namespace claimcheck::train::step_detail {

// The layers of a decoder config, fp32, with RoPE tables for `tokens` positions.
struct LayerStack {
  LayerStack(const DecoderConfig& c, std::uint64_t seed, int tokens) : c(c) {
    torch::manual_seed(seed);
    for (int i = 0; i < c.layers; ++i) {
      layers.push_back(DecoderLayer(c));
      torch::NoGradGuard ng;
      for (auto& p : layers.back()->parameters())
        if (p.dim() == 2) p.normal_(0.0, 0.02);
    }
    auto ang = torch::outer(torch::arange(tokens, torch::kFloat), rope_inv_freq(c, c.rope_theta));
    if (c.fault == "block_rope_interleaved") {  // planted: GPT-J's layout (pairs 2i, 2i+1) for a rotate-half layer
      cos = ang.cos().repeat_interleave(2, -1);
      sin = ang.sin().repeat_interleave(2, -1);
      return;
    }
    cos = torch::cat({ang.cos(), ang.cos()}, -1);
    sin = torch::cat({ang.sin(), ang.sin()}, -1);
  }
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> ps;
    for (const auto& l : layers)
      for (const auto& p : l->parameters()) ps.push_back(p);
    return ps;
  }
  torch::Tensor forward(torch::Tensor x, bool recompute) {
    DecoderRun run;
    for (auto& l : layers) x = recompute ? checkpointed_layer(*l, x, cos, sin, run) : l->forward(x, cos, sin, run);
    return x;
  }
  // 2 FLOP per weight per token in every Linear, plus causal QK^T and PV.
  double forward_flops(int batch, int tokens) const {
    double linear = 0;
    for (const auto& l : layers)
      for (const auto& [name, p] : l->projs) linear += static_cast<double>(p->base->weight.numel());
    const double pairs = tokens * (tokens + 1.0) / 2;
    const double attn =
        2.0 * 2.0 * static_cast<double>(c.heads * c.head_dim) * pairs * static_cast<double>(layers.size());
    return batch * (2.0 * linear * tokens + attn);
  }
  std::int64_t linear_params() const {
    std::int64_t n = 0;
    for (const auto& l : layers)
      for (const auto& [name, p] : l->projs) n += p->base->weight.numel();
    return n;
  }
  DecoderConfig c;
  std::vector<DecoderLayer> layers;
  torch::Tensor cos, sin;
};

// The batch as a data pipeline hands it over (bf16 storage), and the fixed projection the loss reads.
struct StepData {
  StepData(const DecoderConfig& c, int batch, int tokens) {
    stored = torch::randn({batch, tokens, c.hidden}).to(torch::kBFloat16);
    proj = torch::randn({batch, tokens, c.hidden}) / std::sqrt(static_cast<double>(c.hidden));
  }
  // A copy whatever the dtype (a bf16 `stored` would otherwise be returned itself, its .grad kept across steps).
  torch::Tensor input(torch::Dtype dtype = torch::kFloat) const {
    return stored.to(dtype, /*non_blocking=*/false, /*copy=*/true).requires_grad_(true);
  }
  torch::Tensor stored, proj;
};

}  // namespace claimcheck::train::step_detail
