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

#include "common.h"

namespace claimcheck::train {
namespace F = torch::nn::functional;

namespace {

// The keys of a Qwen2 / Llama / Mistral config.json this decoder reads, with transformers' defaults.
struct DecoderConfig {
  std::string model_type;
  std::int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool tie = false, qkv_bias = false, o_bias = false, mlp_bias = false;
  double rms_eps = 1e-6, rope_theta = 10000.0;
};

DecoderConfig read_decoder_config(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot be read");
  const nlohmann::json j = nlohmann::json::parse(in);
  auto need = [&](const char* k) -> std::int64_t {
    if (!j.contains(k) || !j.at(k).is_number()) throw std::runtime_error(file.string() + ": field '" + k + "': missing");
    return j.at(k).get<std::int64_t>();
  };
  DecoderConfig c;
  c.model_type = j.value("model_type", "");
  c.vocab = need("vocab_size");
  c.hidden = need("hidden_size");
  c.intermediate = need("intermediate_size");
  c.layers = need("num_hidden_layers");
  c.heads = need("num_attention_heads");
  c.kv_heads = j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null() ? need("num_key_value_heads")
                                                                                        : c.heads;
  c.head_dim = j.contains("head_dim") && !j["head_dim"].is_null() ? need("head_dim") : c.hidden / c.heads;
  c.tie = j.value("tie_word_embeddings", false);
  c.rms_eps = j.value("rms_norm_eps", 1e-6);
  c.rope_theta = j.value("rope_theta", 10000.0);
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q, k, v with bias; o_proj without; MLP without
  } else if (c.model_type == "llama") {
    c.qkv_bias = c.o_bias = j.value("attention_bias", false);
    c.mlp_bias = j.value("mlp_bias", false);
  } else if (c.model_type != "mistral") {
    throw std::runtime_error(file.string() + ": field 'model_type': '" + c.model_type +
                             "' is not a decoder this code builds (qwen2, llama, mistral)");
  }
  if (c.heads <= 0 || c.kv_heads <= 0 || c.heads % c.kv_heads)
    throw std::runtime_error(file.string() + ": field 'num_key_value_heads': must divide num_attention_heads");
  return c;
}

}  // namespace

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
  explicit DecoderLayerImpl(const DecoderConfig& c) : c(c) {
    const auto q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
    auto add = [&](const std::string& name, std::int64_t in, std::int64_t out, bool bias) {
      projs.emplace(name, register_module(name, Proj(in, out, bias)));
    };
    add("q_proj", c.hidden, q, c.qkv_bias);  // self_attn
    add("k_proj", c.hidden, kv, c.qkv_bias);
    add("v_proj", c.hidden, kv, c.qkv_bias);
    add("o_proj", q, c.hidden, c.o_bias);
    add("gate_proj", c.hidden, c.intermediate, c.mlp_bias);  // mlp
    add("up_proj", c.hidden, c.intermediate, c.mlp_bias);
    add("down_proj", c.intermediate, c.hidden, c.mlp_bias);
    ln1 = register_module("input_layernorm", RMSNorm(c.hidden, c.rms_eps));
    ln2 = register_module("post_attention_layernorm", RMSNorm(c.hidden, c.rms_eps));
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
  DecoderConfig c;
  std::map<std::string, Proj> projs;
  RMSNorm ln1{nullptr}, ln2{nullptr};
};
TORCH_MODULE(DecoderLayer);

struct DecoderImpl : torch::nn::Module {
  explicit DecoderImpl(const DecoderConfig& c) : c(c) {
    embed = register_module("embed_tokens", torch::nn::Embedding(c.vocab, c.hidden));
    for (int i = 0; i < c.layers; ++i) layers.push_back(register_module("layers_" + std::to_string(i), DecoderLayer(c)));
    norm = register_module("norm", RMSNorm(c.hidden, c.rms_eps));
    if (!c.tie)
      lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(c.hidden, c.vocab).bias(false)));
    torch::NoGradGuard ng;
    for (auto& p : parameters())
      if (p.dim() == 2) p.normal_(0.0, 0.02);
  }
  torch::Tensor forward(const torch::Tensor& ids) {
    const auto T = ids.size(1);
    auto inv = torch::pow(c.rope_theta, -torch::arange(0, c.head_dim, 2, torch::kFloat) / static_cast<double>(c.head_dim));
    auto ang = torch::outer(torch::arange(T, torch::kFloat), inv);
    auto cos = torch::cat({ang.cos(), ang.cos()}, -1), sin = torch::cat({ang.sin(), ang.sin()}, -1);
    auto x = embed(ids);
    for (auto& l : layers) x = l->forward(x, cos, sin);
    x = norm(x);
    return c.tie ? F::linear(x, embed->weight) : lm_head(x);  // tied: the embedding is the head
  }
  DecoderConfig c;
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
                                  int seq_len, const std::string& fault) {
  install_counting_allocator();
  DecoderConfig c = read_decoder_config(config);
  if (fault == "qkv_bias_missing") c.qkv_bias = false;
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
