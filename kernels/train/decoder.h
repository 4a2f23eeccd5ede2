// The Llama / Qwen2 / Mistral decoder in LibTorch (internal to kernels/train): one model family in code,
// its size from a Hugging Face config.json read here as transformers' modeling code reads it (keys, defaults).
// Chapter 5 builds Qwen2.5-0.5B with it; chapter 4 a Llama-3-8B-shaped model scaled for a CPU, with optional
// eager attention (keeps the T x T probabilities), gradient checkpointing (decoder.cpp) and a switch that
// records autograd for only the first segments of layer 0 (which op saves which bytes).
#pragma once
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "common.h"

namespace claimcheck::train {

// The keys of a Qwen2 / Llama / Mistral config.json this decoder reads, with transformers' defaults.
struct DecoderConfig {
  std::string model_type;
  std::int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool tie = false, qkv_bias = false, o_bias = false, mlp_bias = false;
  double rms_eps = 1e-6, rope_theta = 10000.0;
  double init_std = 0.02;  // initializer_range: the matrices' normal draw, as transformers' _init_weights
  // rope_scaling (rope_parameters in transformers 5's files): "default" (none), "linear" (every frequency / factor) or
  // "llama3" (Llama-3.1's: long wavelengths / factor, short ones kept, those between interpolated).
  std::string rope_type = "default";
  double rope_factor = 1, rope_low_freq_factor = 1, rope_high_freq_factor = 4, rope_original_max = 0;
  // A fault planted in the model by a test (never from a config): "gqa_tiled" (k and v tiled over the query heads,
  // not interleaved), "rope_half_swapped" (the rotation's halves swapped: rotates the other way),
  // "rope_half_from_hidden" (the halves split at hidden / heads, not head_dim), "rope_theta_ignored" (10000 whatever
  // the config says), "rope_scaling_ignored" (unscaled frequencies), "attention_mask_ignored" (padding keys attended
  // to), "rmsnorm_eps_ignored", "rmsnorm_no_rsqrt" (divides by the mean square, not by its root).
  std::string fault;
};
// Throws std::invalid_argument "<file>: field '<key>': <why>" for a config this code cannot build.
DecoderConfig read_decoder_config(const std::filesystem::path& file);
// The Hugging Face name of a parameter of Decoder, by its key in named_parameters() ("layers_0.q_proj.base.weight"):
// what LlamaForCausalLM / Qwen2ForCausalLM's state_dict calls it ("model.layers.0.self_attn.q_proj.weight"). Throws
// std::logic_error for a key it has no name for.
std::string hf_name(const std::string& key);
// A config misread on purpose (tests only): "qkv_bias_missing" (Qwen2's q/k/v without bias),
// "tie_word_embeddings_ignored" (an lm_head of its own), "attention_bias_misread" (attention biases inverted); any
// other fault is the model's (DecoderConfig::fault).
inline DecoderConfig with_planted_fault(DecoderConfig c, const std::string& fault) {
  c.fault = fault;
  if (fault == "qkv_bias_missing") c.qkv_bias = false;
  if (fault == "tie_word_embeddings_ignored") c.tie = false;
  if (fault == "attention_bias_misread") c.qkv_bias = c.o_bias = !c.qkv_bias;
  return c;
}

// RoPE's inverse frequencies [head_dim / 2], fp32, as transformers' rope utilities compute them: 1 / theta^(2i / d),
// then the config's rope_scaling. theta is passed (a planted fault reads another).
inline torch::Tensor rope_inv_freq(const DecoderConfig& c, double theta) {
  const auto d = static_cast<double>(c.head_dim);
  auto inv = 1.0 / torch::pow(theta, torch::arange(0, c.head_dim, 2, torch::kLong).to(torch::kFloat) / d);
  if (c.rope_type == "default" || c.fault == "rope_scaling_ignored") return inv;  // planted: the scaling forgotten
  if (c.rope_type == "linear") return inv / c.rope_factor;
  // llama3 (transformers' _compute_llama3_parameters).
  const double low_wavelen = c.rope_original_max / c.rope_low_freq_factor;
  const double high_wavelen = c.rope_original_max / c.rope_high_freq_factor;
  const auto wavelen = 2 * M_PI / inv;
  auto scaled = torch::where(wavelen > low_wavelen, inv / c.rope_factor, inv);
  const auto smooth =
      (c.rope_original_max / wavelen - c.rope_low_freq_factor) / (c.rope_high_freq_factor - c.rope_low_freq_factor);
  const auto smoothed = (1 - smooth) * scaled / c.rope_factor + smooth * scaled;
  const auto medium = (wavelen >= high_wavelen).logical_and(wavelen <= low_wavelen);
  return torch::where(medium, smoothed, scaled);
}

// How a forward runs (set on the model; defaults are the plain model).
struct DecoderRun {
  bool eager_attention = false;  // softmax(QK^T / sqrt(d)) V in three ops, the probabilities kept for backward
  // tests only: "attention_not_fused" (the fused path written out as eager ops), "eager_softmax_fp32" (eager
  // attention keeps its probabilities in fp32, then a bf16 copy for the matmul).
  std::string attention_fault;
  bool checkpoint = false;       // each layer keeps only its input and is recomputed in backward
  std::string checkpoint_fault;  // tests: "ckpt_saves_layer", "ckpt_no_recompute"
  int grad_segments = -1;        // >= 0: autograd records only layer 0's first n segments (kSegments)
  int max_layers = -1;           // >= 0: run only the first n layers (no final norm, no head: returns hidden states)
  // Set by DecoderImpl::forward from an attention mask: [B, 1, T, T], 0 where a query may read a key (causal and
  // not padding), the dtype's lowest value elsewhere, added to the scores as transformers' eager attention does.
  torch::Tensor attention_bias;
  std::map<std::string, std::string>* dtypes = nullptr;  // when set: the dtype of each named intermediate
  // With grad_segments: where autograd stops, the graph recorded so far is kept alive through these (the nodes,
  // not the tensors: what stays live is what the graph saved).
  std::vector<std::decay_t<decltype(std::declval<const at::Tensor&>().grad_fn())>>* keep_graph = nullptr;
};
// A decoder layer's segments, in order (the unit of DecoderRun::grad_segments).
inline const std::vector<std::string>& decoder_segments() {
  static const std::vector<std::string> s = {"input_rmsnorm", "q_k_v_proj",      "rope",
                                             "attention",     "o_proj_residual", "post_rmsnorm",
                                             "gate_up_proj",  "silu_times_up",   "down_proj_residual"};
  return s;
}

// A linear layer that LoRA can wrap: y = x W^T (+ b) + (alpha / r) (x A^T) B^T.
struct ProjImpl : torch::nn::Module {
  ProjImpl(std::int64_t in, std::int64_t out, bool bias)
      : base(register_module("base", torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias)))) {}
  // A as peft initialises it (kaiming_uniform_ with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))), B zero; the scale
  // alpha / r, or alpha / sqrt(r) with rsLoRA (peft's use_rslora).
  // fault (tests only): "alpha_not_over_r", "lora_b_random_init", "merge_without_scale", "lora_a_zero_init",
  // "unmerge_unscaled", "lora_input_copied" (the adapter's path reads a copy of its input: autograd keeps the copy),
  // "lora_dropout_applied" (dropout 0.1 on the adapter's input where the config says 0: its mask and output kept),
  // "lora_a_normal_init" (A drawn from a normal of peft's spread, not its uniform).
  void enable_lora(int r, double alpha, const std::string& fault = "", bool rslora = false) {
    const auto in = base->weight.size(1), out = base->weight.size(0);
    A = register_parameter("lora_A", torch::empty({r, in}));
    {
      torch::NoGradGuard ng;
      if (fault == "lora_a_zero_init")
        A.zero_();  // planted: then neither A nor B ever gets a gradient
      else if (fault == "lora_a_normal_init")
        torch::nn::init::kaiming_normal_(A, std::sqrt(5.0));  // planted: the same spread, a normal's tails
      else
        torch::nn::init::kaiming_uniform_(A, std::sqrt(5.0));
    }
    // A planted fault initialises B like A (then the adapter changes the model before any training).
    B = register_parameter("lora_B", fault == "lora_b_random_init"
                                         ? torch::randn({out, r}) / std::sqrt(static_cast<double>(r))
                                         : torch::zeros({out, r}));
    const double denom = rslora ? std::sqrt(static_cast<double>(r)) : static_cast<double>(r);
    scale = fault == "alpha_not_over_r" ? alpha : alpha / denom;  // a planted fault forgets the / r
    merge_unscaled = fault == "merge_without_scale";
    unmerge_unscaled = fault == "unmerge_unscaled";
    unmerge_skipped = fault == "unmerge_skipped";
    input_copied = fault == "lora_input_copied";
    dropout = fault == "lora_dropout_applied" ? 0.1 : 0.0;
  }
  torch::Tensor forward(const torch::Tensor& x) {
    auto y = base(x);
    if (A.defined() && !merged) {
      auto in = input_copied ? x.clone() : x;  // planted: a copy of the input, kept for A's gradient
      if (dropout > 0) in = torch::dropout(in, dropout, is_training());  // planted
      y = y + scale * torch::nn::functional::linear(torch::nn::functional::linear(in, A), B);
    }
    return y;
  }
  // (alpha / r) B A: what the adapter adds to the weight.
  torch::Tensor delta_weight() {
    // A planted fault merges B A without its alpha / r.
    return A.defined() ? (merge_unscaled ? 1.0 : scale) * torch::matmul(B, A) : torch::zeros_like(base->weight);
  }
  // W + (alpha / r) B A: the merged weight, for inference without the adapter.
  torch::Tensor merged_weight() { return base->weight + delta_weight(); }
  // peft's merge_adapter / unmerge_adapter: the delta added into the base weight (the adapter's path then skipped),
  // and taken out again (the weight back to W up to rounding).
  void merge() {
    if (!A.defined() || merged) return;
    torch::NoGradGuard ng;
    base->weight.add_(delta_weight());
    merged = true;
  }
  void unmerge() {
    if (!A.defined() || !merged || unmerge_skipped) return;  // (planted: the delta left in, the adapter path off)
    torch::NoGradGuard ng;
    base->weight.sub_(unmerge_unscaled ? torch::matmul(B, A) : delta_weight());  // planted: without alpha / r
    merged = false;
  }
  torch::nn::Linear base;
  torch::Tensor A, B;
  double scale = 0;
  bool merge_unscaled = false, unmerge_unscaled = false, unmerge_skipped = false, input_copied = false;
  double dropout = 0;
  bool merged = false;
};
TORCH_MODULE(Proj);

// Llama's RMSNorm as the modeling code writes it: weight * x / sqrt(mean(x^2) + eps).
struct RMSNormImpl : torch::nn::Module {
  RMSNormImpl(std::int64_t d, double eps, const std::string& fault = "")
      : eps(fault == "rmsnorm_eps_ignored" ? 0.0 : eps), no_rsqrt(fault == "rmsnorm_no_rsqrt") {
    weight = register_parameter("weight", torch::ones({d}));
  }
  // In fp32 whatever the input's dtype, then back to it before the weight, as transformers' LlamaRMSNorm does.
  torch::Tensor forward(const torch::Tensor& x) {
    const auto x32 = x.to(torch::kFloat);
    const auto ms = x32.pow(2).mean(-1, true) + eps;
    return weight * (no_rsqrt ? x32 / ms : x32 * torch::rsqrt(ms)).to(x.scalar_type());
  }
  torch::Tensor weight;
  double eps;
  bool no_rsqrt = false;  // a planted fault
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
    ln1 = register_module("input_layernorm", RMSNorm(c.hidden, c.rms_eps, c.fault));
    ln2 = register_module("post_attention_layernorm", RMSNorm(c.hidden, c.rms_eps, c.fault));
  }
  // grad_limit >= 0: segments from that index on run without autograd (see DecoderRun::grad_segments).
  torch::Tensor forward(torch::Tensor x, const torch::Tensor& cos, const torch::Tensor& sin, const DecoderRun& run = {},
                        int grad_limit = -1) {
    std::optional<c10::AutoGradMode> no_grad;
    torch::Tensor h, q, k, v, a, o, g, u, m, d;
    auto segment = [&](int s) {
      if (grad_limit < 0 || s < grad_limit || no_grad) return;
      if (run.keep_graph)
        for (const torch::Tensor* t : {&x, &h, &q, &k, &v, &a, &o, &g, &u, &m})
          if (t->defined() && t->grad_fn()) run.keep_graph->push_back(t->grad_fn());
      no_grad.emplace(false);
    };
    auto note = [&](const char* name, const torch::Tensor& t) {
      if (run.dtypes) (*run.dtypes)[name] = std::string(c10::toString(t.scalar_type()));
    };
    const auto B = x.size(0), T = x.size(1);
    segment(0);
    note("residual stream", x);
    h = ln1(x);
    note("rmsnorm output", h);
    segment(1);
    q = projs.at("q_proj")(h).view({B, T, c.heads, c.head_dim}).transpose(1, 2);
    k = projs.at("k_proj")(h).view({B, T, c.kv_heads, c.head_dim}).transpose(1, 2);
    v = projs.at("v_proj")(h).view({B, T, c.kv_heads, c.head_dim}).transpose(1, 2);
    note("q_proj output (matmul)", q);
    segment(2);
    auto rope = [&](const torch::Tensor& t) {  // rotate-half RoPE
      // (A planted fault splits at the textbook hidden / heads, not the config's head width.)
      const auto half = (c.fault == "rope_half_from_hidden" ? c.hidden / c.heads : c.head_dim) / 2;
      auto t1 = t.slice(-1, 0, half), t2 = t.slice(-1, half);
      if (c.fault == "rope_half_swapped") return t * cos + torch::cat({t2, -t1}, -1) * sin;  // planted
      return t * cos + torch::cat({-t2, t1}, -1) * sin;
    };
    q = rope(q);
    k = rope(k);
    segment(3);
    const auto rep = c.heads / c.kv_heads;  // grouped-query attention
    if (c.fault == "gqa_tiled") {           // planted: query head h reads kv head h % kv_heads, not h / rep
      k = k.repeat({1, rep, 1, 1});
      v = v.repeat({1, rep, 1, 1});
    } else {
      k = k.repeat_interleave(rep, 1);
      v = v.repeat_interleave(rep, 1);
    }
    if (run.eager_attention || run.attention_fault == "attention_not_fused") {  // a planted fault: never fused
      // (A planted fault scales the eager scores by 1 / head_dim.)
      const double d = static_cast<double>(c.head_dim);
      auto s = torch::matmul(q, k.transpose(-2, -1)) *
               (run.attention_fault == "eager_scale_by_d" ? 1.0 / d : 1.0 / std::sqrt(d));
      note("attention scores (matmul)", s);
      s = run.attention_bias.defined()
              ? s + run.attention_bias
              : s.masked_fill(torch::ones({T, T}, torch::kBool).triu(1), -std::numeric_limits<double>::infinity());
      auto p = run.attention_fault == "eager_softmax_fp32" ? torch::softmax(s.to(torch::kFloat), -1).to(s.scalar_type())
                                                           : torch::softmax(s, -1);
      note("softmax output", p);
      a = torch::matmul(p, v);
    } else if (run.attention_bias.defined()) {
      a = at::scaled_dot_product_attention(q, k, v, run.attention_bias);
    } else {
      a = compat::causal_sdpa(q, k, v);
    }
    note("attention output", a);
    a = a.transpose(1, 2).reshape({B, T, c.heads * c.head_dim});
    segment(4);
    o = projs.at("o_proj")(a);
    x = x + o;
    note("residual stream after attention", x);
    segment(5);
    h = ln2(x);
    segment(6);
    g = projs.at("gate_proj")(h);
    u = projs.at("up_proj")(h);
    note("gate_proj output (matmul)", g);
    segment(7);
    m = torch::silu(g) * u;
    note("silu(gate) * up", m);
    segment(8);
    d = projs.at("down_proj")(m);
    note("down_proj output (matmul)", d);
    return x + d;
  }
  // Decoding with a KV cache: x [B, T, hidden] holds the new tokens, at positions past .. past + T - 1 (cos and sin
  // are theirs); k_cache and v_cache hold the earlier tokens' keys and values after RoPE, [B, kv_heads, past,
  // head_dim] (undefined when past = 0), and gain these T. Each new token attends to every cached one and to the
  // new ones up to itself. Planted (DecoderConfig::fault): "kv_cache_not_appended" (the new keys and values are
  // attended to but never stored: the next token sees the prompt only).
  torch::Tensor forward_cached(torch::Tensor x, const torch::Tensor& cos, const torch::Tensor& sin,
                               torch::Tensor& k_cache, torch::Tensor& v_cache) {
    const auto B = x.size(0), T = x.size(1);
    auto h = ln1(x);
    auto q = projs.at("q_proj")(h).view({B, T, c.heads, c.head_dim}).transpose(1, 2);
    auto k = projs.at("k_proj")(h).view({B, T, c.kv_heads, c.head_dim}).transpose(1, 2);
    auto v = projs.at("v_proj")(h).view({B, T, c.kv_heads, c.head_dim}).transpose(1, 2);
    auto rope = [&](const torch::Tensor& t) {
      // (A planted fault splits at the textbook hidden / heads, not the config's head width.)
      const auto half = (c.fault == "rope_half_from_hidden" ? c.hidden / c.heads : c.head_dim) / 2;
      auto t1 = t.slice(-1, 0, half), t2 = t.slice(-1, half);
      return t * cos + torch::cat({-t2, t1}, -1) * sin;
    };
    q = rope(q);
    k = rope(k);
    const auto past = k_cache.defined() ? k_cache.size(2) : 0;
    auto k_all = past ? torch::cat({k_cache, k}, 2) : k, v_all = past ? torch::cat({v_cache, v}, 2) : v;
    if (c.fault != "kv_cache_not_appended" || !k_cache.defined()) {
      k_cache = k_all;
      v_cache = v_all;
    }
    const auto rep = c.heads / c.kv_heads;
    // (A planted fault scales by the textbook hidden / heads, not the config's head width.)
    const double width = c.fault == "kv_scale_hidden_over_heads" ? static_cast<double>(c.hidden) / c.heads
                                                                 : static_cast<double>(c.head_dim);
    auto s = torch::matmul(q, k_all.repeat_interleave(rep, 1).transpose(-2, -1)) * (1.0 / std::sqrt(width));
    // New token i (position past + i) sees key j when j <= past + i.
    auto future = torch::arange(past + T).unsqueeze(0) > (torch::arange(T) + past).unsqueeze(1);
    // (A planted fault masks only a prompt's first chunk: "a token after the cache needs no mask", true of one token.)
    if (c.fault != "kv_chunk_unmasked" || past == 0)
      s = s.masked_fill(future, -std::numeric_limits<double>::infinity());
    auto a = torch::matmul(torch::softmax(s, -1), v_all.repeat_interleave(rep, 1));
    x = x + projs.at("o_proj")(a.transpose(1, 2).reshape({B, T, c.heads * c.head_dim}));
    h = ln2(x);
    return x + projs.at("down_proj")(torch::silu(projs.at("gate_proj")(h)) * projs.at("up_proj")(h));
  }
  DecoderConfig c;
  std::map<std::string, Proj> projs;
  RMSNorm ln1{nullptr}, ln2{nullptr};
};
TORCH_MODULE(DecoderLayer);

// One layer behind gradient checkpointing (decoder.cpp): forward without autograd keeping only x; backward
// recomputes the layer with autograd (and the autocast state of the forward) and backpropagates through it.
torch::Tensor checkpointed_layer(DecoderLayerImpl& layer, const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const DecoderRun& run);

struct DecoderImpl : torch::nn::Module {
  explicit DecoderImpl(const DecoderConfig& c) : c(c) {
    embed = register_module("embed_tokens", torch::nn::Embedding(c.vocab, c.hidden));
    for (int i = 0; i < c.layers; ++i)
      layers.push_back(register_module("layers_" + std::to_string(i), DecoderLayer(c)));
    norm = register_module("norm", RMSNorm(c.hidden, c.rms_eps, c.fault));
    if (!c.tie)
      lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(c.hidden, c.vocab).bias(false)));
    // As transformers' _init_weights: every matrix (projections, embeddings, lm_head) from N(0, initializer_range),
    // biases 0, norm gains 1 (as built).
    torch::NoGradGuard ng;
    // (Planted: "decoder_init_std_tenfold", ten times initializer_range; "decoder_norms_drawn", the gains drawn too.)
    for (auto& p : named_parameters()) {
      const bool drawn = p.value().dim() == 2 || (c.fault == "decoder_norms_drawn" && p.value().dim() == 1 &&
                                                  p.key().find("norm") != std::string::npos);
      if (drawn)
        p.value().normal_(0.0, c.fault == "decoder_init_std_tenfold" ? 10 * c.init_std : c.init_std);
      else if (p.key().ends_with(".bias"))
        p.value().zero_();
    }
  }
  // ids [B, T]; attention_mask [B, T] (1: a token, 0: padding; undefined: none) and position_ids [B, T] (undefined:
  // 0 .. T - 1) as transformers' forward takes them.
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& attention_mask = {},
                        const torch::Tensor& position_ids = {}) {
    const auto T = ids.size(1);
    const auto dtype = embed->weight.scalar_type();  // bf16 when the model was converted, else fp32
    const double theta = c.fault == "rope_theta_ignored" ? 10000.0 : c.rope_theta;  // planted
    const auto inv = rope_inv_freq(c, theta);
    torch::Tensor cos, sin;
    // (RoPE is relative: a row's positions shifted by its padding give the same scores between its tokens.)
    if (position_ids.defined()) {
      auto ang = position_ids.to(torch::kFloat).unsqueeze(-1) * inv;  // [B, T, d / 2]
      cos = torch::cat({ang.cos(), ang.cos()}, -1).unsqueeze(1).to(dtype);
      sin = torch::cat({ang.sin(), ang.sin()}, -1).unsqueeze(1).to(dtype);
    } else {
      auto ang = torch::outer(torch::arange(T, torch::kFloat), inv);
      cos = torch::cat({ang.cos(), ang.cos()}, -1).to(dtype);
      sin = torch::cat({ang.sin(), ang.sin()}, -1).to(dtype);
    }
    DecoderRun r = run;
    if (attention_mask.defined()) {
      if (run.checkpoint) throw std::invalid_argument("Decoder::forward: an attention mask with checkpointing");
      auto allowed = torch::ones({T, T}, torch::kBool).tril().view({1, 1, T, T});
      if (c.fault != "attention_mask_ignored")  // planted: padding keys stay visible
        allowed = allowed.logical_and(attention_mask.to(torch::kBool).view({ids.size(0), 1, 1, T}));
      // torch.finfo(dtype).min, as transformers fills its masks (fp32's lowest overflows bf16 to -inf).
      const double lowest = dtype == torch::kBFloat16
                                ? static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest())
                                : static_cast<double>(std::numeric_limits<float>::lowest());
      r.attention_bias =
          torch::zeros(allowed.sizes(), torch::TensorOptions().dtype(dtype)).masked_fill(allowed.logical_not(), lowest);
    }
    auto x = embed(ids);
    const int n = r.max_layers >= 0 ? std::min<int>(r.max_layers, static_cast<int>(layers.size()))
                                    : static_cast<int>(layers.size());
    for (int i = 0; i < n; ++i) {
      const int limit = r.grad_segments < 0 ? -1 : (i == 0 ? r.grad_segments : 0);
      x = r.checkpoint ? checkpointed_layer(*layers[i], x, cos, sin, r) : layers[i]->forward(x, cos, sin, r, limit);
    }
    if (run.max_layers >= 0) return x;
    std::optional<c10::AutoGradMode> no_grad;
    if (run.grad_segments >= 0) no_grad.emplace(false);
    x = norm(x);
    auto logits =
        c.tie ? torch::nn::functional::linear(x, embed->weight) : lm_head(x);  // tied: the embedding is the head
    if (run.dtypes) (*run.dtypes)["logits (matmul)"] = std::string(c10::toString(logits.scalar_type()));
    return logits;
  }
  // The per-layer keys and values of the tokens decoded so far (forward_cached).
  struct KvCache {
    std::vector<torch::Tensor> k, v;
    std::int64_t length = 0;  // tokens held
  };
  // The logits of ids [B, T], the tokens that follow those in `cache`, which gains them. Planted
  // (DecoderConfig::fault): "kv_positions_restart" (every call's RoPE positions start at 0, not at the cache's length),
  // and the layer's "kv_cache_not_appended".
  torch::Tensor forward_cached(const torch::Tensor& ids, KvCache& cache) {
    const auto T = ids.size(1);
    const auto dtype = embed->weight.scalar_type();
    const auto first = c.fault == "kv_positions_restart" ? 0 : cache.length;
    auto ang = torch::outer(torch::arange(first, first + T, torch::kFloat), rope_inv_freq(c, c.rope_theta));
    auto cos = torch::cat({ang.cos(), ang.cos()}, -1).to(dtype), sin = torch::cat({ang.sin(), ang.sin()}, -1).to(dtype);
    cache.k.resize(layers.size());
    cache.v.resize(layers.size());
    auto x = embed(ids);
    for (std::size_t i = 0; i < layers.size(); ++i) x = layers[i]->forward_cached(x, cos, sin, cache.k[i], cache.v[i]);
    cache.length += T;
    x = norm(x);
    return c.tie ? torch::nn::functional::linear(x, embed->weight) : lm_head(x);
  }
  DecoderConfig c;
  DecoderRun run;
  torch::nn::Embedding embed{nullptr};
  std::vector<DecoderLayer> layers;
  RMSNorm norm{nullptr};
  torch::nn::Linear lm_head{nullptr};
};
TORCH_MODULE(Decoder);

}  // namespace claimcheck::train
