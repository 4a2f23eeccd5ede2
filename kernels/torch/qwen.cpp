// Chapter 5 in LibTorch: the Qwen2 architecture built from its config.json with random initialisation
// (no weights), LoRA (ΔW = (α/r)·B·A, B zero-initialised) on chosen linear layers, and one AdamW step.
#include <chrono>
#include <cmath>

#include "claimcheck/ref/ledger.h"
#include "common.h"

namespace claimcheck::train {
namespace F = torch::nn::functional;

// A linear layer that LoRA can wrap: y = x W^T (+ b) + (alpha / r) (x A^T) B^T.
struct ProjImpl : torch::nn::Module {
  ProjImpl(std::int64_t in, std::int64_t out, bool bias)
      : base(register_module("base", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias)))) {}
  void enable_lora(int r, double alpha, bool alpha_not_over_r) {
    const auto in = base->weight.size(1), out = base->weight.size(0);
    A = register_parameter("lora_A", torch::randn({r, in}) / std::sqrt(static_cast<double>(in)));
    B = register_parameter("lora_B", torch::zeros({out, r}));
    scale = alpha_not_over_r ? alpha : alpha / r;  // a planted fault forgets the / r
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = base(x);
    if (A.defined()) y = y + scale * F::linear(F::linear(x, A), B);
    return y;
  }
  // W + (alpha / r) B A: the merged weight, for inference without the adapter.
  torch::Tensor merged_weight() { return base->weight + (A.defined() ? scale * torch::matmul(B, A) : torch::zeros_like(base->weight)); }
  torch::nn::Linear base;
  torch::Tensor A, B;
  double scale = 0;
};
TORCH_MODULE(Proj);

struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(std::int64_t d, double eps) : eps(eps) { weight = register_parameter("weight", torch::ones({d})); }
  torch::Tensor forward(const torch::Tensor& x) {
    return weight * (x * torch::rsqrt(x.pow(2).mean(-1, true) + eps));
  }
  torch::Tensor weight;
  double eps;
};
TORCH_MODULE(RMSNorm);

struct DecoderLayerImpl : torch::nn::Module {
  explicit DecoderLayerImpl(const ref::ModelConfig& c) : c(c) {
    for (const auto& l : ref::layer_linears(c)) projs.emplace(l.name, register_module(l.name, Proj(l.in, l.out, l.bias)));
    ln1 = register_module("input_layernorm", RMSNorm(c.hidden, 1e-6));
    ln2 = register_module("post_attention_layernorm", RMSNorm(c.hidden, 1e-6));
  }
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& cos, const torch::Tensor& sin) {
    const auto B = x.size(0), T = x.size(1);
    auto h = ln1(x);
    auto q = projs.at("q_proj")(h).view({B, T, c.heads, c.head_dim}).transpose(1, 2);
    auto k = projs.at("k_proj")(h).view({B, T, c.kv_heads, c.head_dim}).transpose(1, 2);
    auto v = projs.at("v_proj")(h).view({B, T, c.kv_heads, c.head_dim}).transpose(1, 2);
    auto rope = [&](const torch::Tensor& t) {  // rotate-half RoPE
      auto t1 = t.slice(-1, 0, c.head_dim / 2), t2 = t.slice(-1, c.head_dim / 2);
      return t * cos + torch::cat({-t2, t1}, -1) * sin;
    };
    q = rope(q);
    k = rope(k);
    const auto rep = c.heads / c.kv_heads;  // grouped-query attention
    k = k.repeat_interleave(rep, 1);
    v = v.repeat_interleave(rep, 1);
    auto a = compat::causal_sdpa(q, k, v).transpose(1, 2).reshape({B, T, c.heads * c.head_dim});
    x = x + projs.at("o_proj")(a);
    h = ln2(x);
    return x + projs.at("down_proj")(F::silu(projs.at("gate_proj")(h)) * projs.at("up_proj")(h));
  }
  ref::ModelConfig c;
  std::map<std::string, Proj> projs;
  RMSNorm ln1{nullptr}, ln2{nullptr};
};
TORCH_MODULE(DecoderLayer);

struct DecoderImpl : torch::nn::Module {
  explicit DecoderImpl(const ref::ModelConfig& c) : c(c) {
    embed = register_module("embed_tokens", torch::nn::Embedding(c.vocab, c.hidden));
    for (int i = 0; i < c.layers; ++i) layers.push_back(register_module("layers_" + std::to_string(i), DecoderLayer(c)));
    norm = register_module("norm", RMSNorm(c.hidden, 1e-6));
    if (!c.tie_embeddings)
      lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(c.hidden, c.vocab).bias(false)));
    torch::NoGradGuard ng;
    for (auto& p : parameters())
      if (p.dim() == 2) p.normal_(0.0, 0.02);
  }
  torch::Tensor forward(const torch::Tensor& ids) {
    const auto T = ids.size(1);
    auto inv = torch::pow(1e6, -torch::arange(0, c.head_dim, 2, torch::kFloat) / static_cast<double>(c.head_dim));
    auto ang = torch::outer(torch::arange(T, torch::kFloat), inv);
    auto cos = torch::cat({ang.cos(), ang.cos()}, -1), sin = torch::cat({ang.sin(), ang.sin()}, -1);
    auto x = embed(ids);
    for (auto& l : layers) x = l->forward(x, cos, sin);
    x = norm(x);
    return c.tie_embeddings ? F::linear(x, embed->weight) : lm_head(x);  // tied: the embedding is the head
  }
  ref::ModelConfig c;
  torch::nn::Embedding embed{nullptr};
  std::vector<DecoderLayer> layers;
  RMSNorm norm{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(Decoder);

namespace {
std::int64_t count(const std::vector<torch::Tensor>& ps, bool trainable_only) {
  std::int64_t n = 0;
  for (const auto& p : ps)
    if (!trainable_only || p.requires_grad()) n += p.numel();
  return n;
}
}  // namespace

QwenLoraMeasure qwen_lora_measure(const std::filesystem::path& config, const LoraSpec& lora, std::uint64_t seed,
                                  int seq_len) {
  install_counting_allocator();
  const ref::ModelConfig c = ref::load_model_config(config);
  torch::manual_seed(seed);
  QwenLoraMeasure m;
  auto t0 = std::chrono::steady_clock::now();
  Decoder model(c);
  m.build_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  m.params = count(model->parameters(), false);
  for (auto& p : model->parameters()) p.requires_grad_(false);
  const auto base_live = live_bytes();
  for (auto& layer : model->layers)
    for (const auto& t : lora.targets) layer->projs.at(t)->enable_lora(lora.r, lora.alpha, false);
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
  p->enable_lora(r, alpha, fault == "alpha_not_over_r");
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
