// Chapter 5 in LibTorch: the Qwen2 architecture built from its config.json with random initialisation
// (no weights), LoRA (ΔW = (α/r)·B·A, B zero-initialised) on chosen linear layers, and one AdamW step.
// Like Hugging Face's modeling code, the model reads config.json itself (its keys, its defaults) and shapes its
// modules from it; it shares nothing with the ledger in reference/, which counts the same config on paper.
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "decoder.h"

namespace claimcheck::train {
namespace F = torch::nn::functional;

namespace {
std::int64_t count(const std::vector<torch::Tensor>& ps, bool trainable_only) {
  std::int64_t n = 0;
  for (const auto& p : ps)
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}
}  // namespace

QwenLoraMeasure qwen_lora_measure(const std::filesystem::path& config, const LoraSpec& lora, std::uint64_t seed,
                                  int seq_len, const std::string& fault) {
  install_counting_allocator();
  const DecoderConfig c = with_planted_fault(read_decoder_config(config), fault);
  torch::manual_seed(seed);
  QwenLoraMeasure m;
  auto t0 = std::chrono::steady_clock::now();
  Decoder model(c);
  m.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.params = count(model->parameters(), false);
  {
    torch::NoGradGuard ng;
    double sq = 0, n = 0;
    for (const auto& p : model->named_parameters()) {
      const auto& t = p.value();
      const std::string& name = p.key();
      if (t.dim() == 2) {
        const auto s = t.flatten().narrow(0, 0, std::min<std::int64_t>(t.numel(), 65536)).to(torch::kDouble);
        sq += s.square().sum().item<double>(), n += static_cast<double>(s.numel());
      } else if (name.find("norm") != std::string::npos) {
        m.init_norm_max_dev = std::max(m.init_norm_max_dev, (t - 1).abs().max().item<double>());
      } else if (name.ends_with(".bias")) {
        m.init_bias_max_abs = std::max(m.init_bias_max_abs, t.abs().max().item<double>());
      }
    }
    m.init_matrix_std = n > 0 ? std::sqrt(sq / n) : 0;
  }
  for (auto& p : model->parameters()) p.requires_grad_(false);
  const auto base_live = live_bytes();
  // A planted fault: an off-by-one that leaves the last layer without adapters.
  const std::size_t wrapped = fault == "lora_skips_last_layer" ? model->layers.size() - 1 : model->layers.size();
  for (std::size_t i = 0; i < wrapped; ++i)
    for (const auto& t : lora.targets) model->layers[i]->projs.at(t)->enable_lora(lora.r, lora.alpha);
  m.lora_param_bytes = live_bytes() - base_live;
  m.trainable = count(model->parameters(), true);
  m.total_after_lora = count(model->parameters(), false);

  std::vector<torch::Tensor> trainable;
  for (auto& p : model->parameters())
    if (p.requires_grad()) trainable.push_back(p);
  torch::optim::AdamW opt(trainable, torch::optim::AdamWOptions(1e-4));
  t0 = std::chrono::steady_clock::now();
  {
    auto ids = torch::randint(0, c.vocab, {1, seq_len});
    auto loss = lm_loss(model->forward(ids).slice(1, 0, seq_len - 1), ids.slice(1, 1), true);
    loss.backward();
  }  // the graph and activations are gone here
  for (auto& p : trainable) m.grad_bytes += p.grad().numel() * p.grad().element_size();
  const auto before_step = live_bytes();
  opt.step();
  m.optimizer_bytes = live_bytes() - before_step;
  m.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.state_bytes = live_bytes() - base_live;
  return m;
}

LoraDeltaResult lora_delta(std::uint64_t seed, const std::string& fault) {
  torch::manual_seed(seed);
  const int in = 64, out = 48, r = 8;
  const double alpha = 16;
  Proj p(in, out, true);
  auto x = torch::randn({32, in});
  torch::Tensor base_out;
  {
    torch::NoGradGuard ng;
    base_out = p->forward(x).clone();
  }
  p->enable_lora(r, alpha, fault);
  LoraDeltaResult res;
  torch::NoGradGuard ng;
  res.init_err = (p->forward(x) - base_out).abs().max().item<double>();
  p->B.copy_(torch::randn({out, r}) * 0.1);  // as if trained
  auto lora_out = p->forward(x);
  // The formula, computed apart from the module: x (W + (alpha / r) B A)^T + b.
  auto expected = F::linear(x, p->base->weight + (alpha / r) * torch::matmul(p->B, p->A), p->base->bias);
  res.formula_err = (lora_out - expected).abs().max().item<double>();
  res.merged_err = (F::linear(x, p->merged_weight(), p->base->bias) - lora_out).abs().max().item<double>();
  res.output_scale = lora_out.abs().max().item<double>();
  return res;
}

}  // namespace claimcheck::train
