// ch03.first_loss_ln_v — 「首步 loss 应 ≈ ln V：84 万参数、V = 128 → 5.07 ✓」
// A freshly initialised model's loss on real text, against ln V.
#include <algorithm>
#include <cmath>

#include "../tiny_shape.h"
#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void first_loss_ln_v(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace T = claimcheck::train;
  // V is the series' (inputs.model, chapter 3's model as the series gives it: 7-bit ASCII's 128), not the model's own:
  // a model built on another vocabulary starts at its own ln V, which the series' does not.
  const T::TinyConfig series = tiny_config_input(ctx, "model");
  ctx.derive("ln_v", std::log(static_cast<double>(series.vocab)), "nats");
  const auto corpus = T::load_fortunes_corpus(ctx.input_path("corpus"));
  const T::TinyConfig c = T::tiny_model_config(ctx.planted_fault());
  const T::FirstLoss first = T::tiny_first_loss(c, corpus, ctx.seed(), 16, ctx.planted_fault());
  ctx.measure(first.loss, "nats");
  // The spread the weights were drawn with (the band of the first loss takes in a doubled one): the sample's standard
  // deviation about 0, over every matrix of the fresh model (about 0.8M values: sampling moves it by 0.1%).
  double sq = 0;
  for (float w : first.init_weights) sq += static_cast<double>(w) * w;
  ctx.measure("init_std", first.init_weights.empty() ? 0.0 : std::sqrt(sq / first.init_weights.size()), "ratio");
  // Matrix by matrix: the smallest standard deviation over the largest (each of 16K values or more: sampling moves
  // a matrix's by about 0.6%). One matrix left at zero, or drawn at another spread, hides in the whole's 1%.
  double lo = INFINITY, hi = 0;
  std::size_t at = 0;
  for (const std::size_t n : first.init_weight_sizes) {
    double s2 = 0;
    for (std::size_t i = at; i < at + n && i < first.init_weights.size(); ++i)
      s2 += static_cast<double>(first.init_weights[i]) * first.init_weights[i];
    at += n;
    const double sd = n ? std::sqrt(s2 / static_cast<double>(n)) : 0.0;
    lo = std::min(lo, sd), hi = std::max(hi, sd);
  }
  ctx.measure("init_std_matrices_apart", hi > 0 && std::isfinite(lo) ? lo / hi : 0.0, "ratio");
  // And GPT-2's zero biases (LibTorch's default draws them uniform in +-1/sqrt(fan_in)): the largest |b|.
  double bias = first.init_biases.empty() ? 1.0 : 0.0;  // (a model without its biases is not the model described)
  for (float b : first.init_biases) bias = std::max(bias, static_cast<double>(std::fabs(b)));
  ctx.measure("init_bias_max_abs", bias, "ratio");
  // And LayerNorm's identity (gain 1, shift 0, as PyTorch's and GPT-2's): the largest departure from it. Gains drawn
  // near 0 start the logits near 0 too, so the first loss alone would not tell.
  double norm = first.init_norm_gains.empty() ? 1.0 : 0.0;  // (a model without its norms is not the model described)
  for (float g : first.init_norm_gains) norm = std::max(norm, static_cast<double>(std::fabs(g - 1.0f)));
  for (float b : first.init_norm_shifts) norm = std::max(norm, static_cast<double>(std::fabs(b)));
  ctx.measure("init_norm_max_dev", norm, "ratio");
  ctx.detail("data_revision", corpus.sha256);
  ctx.assumption("N(0, 0.02) initialisation (GPT-2's): logits start near 0, so every character is about 1/V likely");
#endif
}
CLAIMCHECK_REGISTER(first_loss_ln_v).claim("ch03.first_loss_ln_v").derives("ln_v", claimcheck::Source::reference);
