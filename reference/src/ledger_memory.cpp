// The ledger's arithmetic on a parsed model config: the linears of a layer and the parameter counts (and chapter 3's
// GPT), the bytes of the training state, of quantised weights, of the activations saved for backward, of the KV cache,
// the bytes read per decoded token and the FLOPs of a prefill, and the series' decimal units. Parsing is in
// ledger_config.cpp and ledger_specs.cpp, LoRA in ledger_lora.cpp.
#include "claimcheck/ref/ledger.h"

#include <algorithm>

#include "ledger_internal.h"

namespace claimcheck::ref {

// ---- parameter counts ---------------------------------------------------------
std::vector<Linear> layer_linears(const ModelConfig& c) {
  // (A planted fault takes the query width as the hidden size, as it is wherever heads x head_dim is.)
  const std::int64_t q = ledger_fault("ledger_q_proj_width_hidden") ? c.hidden : c.heads * c.head_dim;
  const std::int64_t kv = c.kv_heads * c.head_dim, h = c.hidden, I = c.intermediate;
  std::vector<Linear> l;
  if (c.fused_qkv) {  // Phi3Attention: op_size = heads x head_dim + 2 x kv_heads x head_dim, no bias
    l.push_back({"qkv_proj", h, q + 2 * kv, c.qkv_bias, "self_attn"});
  } else {
    l.push_back({"q_proj", h, q, c.qkv_bias, "self_attn"});
    l.push_back({"k_proj", h, kv, c.qkv_bias, "self_attn"});
    l.push_back({"v_proj", h, kv, c.qkv_bias, "self_attn"});
  }
  l.push_back({"o_proj", q, h, c.o_bias, "self_attn"});
  switch (c.mlp) {
    case ModelConfig::Mlp::gated:
      l.push_back({"gate_proj", h, I, c.mlp_bias, "mlp"});
      l.push_back({"up_proj", h, I, c.mlp_bias, "mlp"});
      break;
    case ModelConfig::Mlp::gated_fused:  // Phi3MLP: gate_up_proj (hidden -> 2 x intermediate), chunked in two
      // (A planted fault reads the fused width as the intermediate size alone.)
      l.push_back({"gate_up_proj", h, (ledger_fault("ledger_phi3_gate_up_single") ? 1 : 2) * I, c.mlp_bias, "mlp"});
      break;
    case ModelConfig::Mlp::plain:  // Starcoder2MLP: c_fc, activation, c_proj
      l.push_back({"c_fc", h, I, c.mlp_bias, "mlp"});
      l.push_back({"c_proj", I, h, c.mlp_bias, "mlp"});
      return l;
  }
  l.push_back({"down_proj", I, h, c.mlp_bias, "mlp"});
  return l;
}

std::int64_t gpt_parameter_tensors(const GptShape& s) { return 2 + 12 * s.n_layer + 2 + 1; }

std::int64_t gpt_params(const GptShape& s) {
  using I = __int128;
  const I d = s.d_model, ff = ledger_fault("ledger_gpt_mlp_4d") ? 4 * d : I{s.d_ff};  // (planted: GPT-2's 4 d)
  const I layer_norm = 2 * d;                                                         // weight and bias
  const I attention = (d * 3 * d + 3 * d) + (d * d + d);                              // qkv, output projection
  const I mlp = (d * ff + ff) + (ff * d + d);                                         // fc1, fc2
  const I per_layer = 2 * layer_norm + attention + mlp;
  // (Planted faults drop the positions, or count them by the vocabulary, which chapter 3's model's 128 = 128 hides.)
  const I positions = ledger_fault("ledger_gpt_no_positions")         ? 0
                      : ledger_fault("ledger_gpt_positions_by_vocab") ? I{s.vocab} * d
                                                                      : I{s.context} * d;
  const I total = I{s.vocab} * d + positions + I{s.n_layer} * per_layer + layer_norm + d * I{s.vocab};
  if (total >= (I{1} << 62)) fail("gpt shape", "(sizes)", "the parameter count passes 2^62");
  return static_cast<std::int64_t>(total);
}

ParamCount count_params(const ModelConfig& c) {
  ParamCount p;
  p.embedding = c.vocab * c.hidden;
  p.lm_head = c.tie_embeddings && !ledger_fault("ledger_tied_counted_twice") ? 0 : c.vocab * c.hidden;
  for (const auto& l : layer_linears(c))
    (l.block == "self_attn" ? p.attention_per_layer : p.mlp_per_layer) += l.params();
  p.norms_per_layer = static_cast<std::int64_t>(c.layer_norms.size()) * c.norm_params_per_unit * c.hidden +
                      (c.qk_norm && !ledger_fault("ledger_qk_norm_forgotten") ? 2 * c.head_dim : 0);  // (planted)
  p.final_norm = c.norm_params_per_unit * c.hidden;
  p.layers = c.layers;
  p.sparse_layers = c.sparse_layers();
  if (p.sparse_layers > 0) {
    p.experts = c.experts;
    // (Planted faults route a token through every expert, or forget each expert's down projection.)
    p.experts_per_token = ledger_fault("ledger_moe_all_experts_routed") ? c.experts : c.experts_per_token;
    p.expert_params = (ledger_fault("ledger_moe_down_forgotten") ? 2 : 3) * c.hidden *
                      c.moe_intermediate;       // gate and up fused (2I x h), down (h x I); no bias
    p.router_per_layer = c.experts * c.hidden;  // the top-k router: experts x hidden, no bias
    if (c.model_type == "qwen2_moe")            // shared expert (SwiGLU) + its sigmoid gate (hidden -> 1)
      p.shared_expert_per_layer = 3 * c.hidden * c.shared_expert_intermediate + c.hidden;
  }
  return p;
}

// ---- training state -----------------------------------------------------------
std::int64_t dtype_bytes(const std::string& d) {
  if (d == "fp64") return 8;
  if (d == "fp32") return 4;
  if (d == "bf16" || d == "fp16") return 2;
  if (d == "int8" || d == "fp8") return 1;
  throw SpecError("dtype: unknown '" + d + "'");
}

std::vector<StateTerm> mixed_precision_adamw_state() {
  return {{"bf16 weight copy", "bf16"},
          {"gradient", "bf16"},
          {"fp32 master weight", "fp32"},
          {"Adam m", "fp32"},
          {"Adam v", "fp32"}};
}

std::vector<StateTerm> lora_adapter_state() {
  auto t = mixed_precision_adamw_state();
  // The adapter is held in fp32 (the master) and cast on the fly. (A planted fault drops the gradient instead: the
  // same 2 bytes.)
  t.erase(t.begin() + (ledger_fault("ledger_lora_drops_gradient") ? 1 : 0));
  return t;
}

std::int64_t bytes_per_param(const std::vector<StateTerm>& terms) {
  std::int64_t b = 0;
  for (const auto& t : terms) b += dtype_bytes(t.dtype);
  return b;
}

// ---- quantisation -------------------------------------------------------------
double QuantFormat::bits_per_param() const {
  double b = bits;
  if (block_size > 0) {
    if (double_quant)
      // (a planted fault: the second-level fp32 scale counted per block of dq_block_size weights)
      b += 8.0 / block_size +
           32.0 / (ledger_fault("ledger_dq_per_weight_block") ? dq_block_size : block_size * dq_block_size);
    else
      b += 8.0 * scale_bytes / block_size;
  }
  return b;
}

double quantized_weight_bytes(const ModelConfig& c, const QuantFormat& q) {
  const ParamCount p = count_params(c);
  const double qbytes = q.bits_per_param() / 8.0;
  auto kept = [&](const char* m) { return std::find(q.keep_bf16.begin(), q.keep_bf16.end(), m) != q.keep_bf16.end(); };
  double b = 0;
  b += p.embedding * (kept("embed_tokens") ? 2.0 : qbytes);
  b += p.lm_head * (kept("lm_head") ? 2.0 : qbytes);
  b += static_cast<double>(p.total() - p.embedding - p.lm_head) * qbytes;  // layers, norms included
  return b;
}

// ---- activations --------------------------------------------------------------
std::vector<SavedTensor> saved_per_layer(const ModelConfig& c) {
  const std::int64_t q = ledger_fault("ledger_q_width_hidden") ? c.hidden : c.heads * c.head_dim;
  const std::int64_t kv = c.kv_heads * c.head_dim;
  const bool sandwich = c.layer_norms.size() == 4;  // Gemma2: norms after attention and around the MLP
  std::vector<SavedTensor> t = {{"input_layernorm input (residual stream)", c.hidden},
                                {"input_layernorm output (q/k/v_proj input)", c.hidden},
                                {"q after RoPE", q},
                                {"k after RoPE", kv},
                                {"v", kv},
                                {"attention output (o_proj input)", q}};
  if (sandwich) {
    t.push_back({"o_proj output (post_attention_layernorm input)", c.hidden});
    t.push_back({"pre_feedforward_layernorm input", c.hidden});
    t.push_back({"pre_feedforward_layernorm output (gate/up_proj input)", c.hidden});
  } else {
    t.push_back({"post_attention_layernorm input", c.hidden});
    t.push_back({"post_attention_layernorm output (gate/up_proj input)", c.hidden});
  }
  if (c.mlp == ModelConfig::Mlp::plain) {
    t.push_back({"c_fc output (activation input)", c.intermediate});
    t.push_back({"activation output (c_proj input)", c.intermediate});
  } else {
    t.push_back({"gate_proj output (SiLU input)", c.intermediate});
    t.push_back({"up_proj output", c.intermediate});
    t.push_back({"SiLU(gate) * up (down_proj input)", c.intermediate});
  }
  if (sandwich) t.push_back({"down_proj output (post_feedforward_layernorm input)", c.hidden});
  return t;
}

std::vector<SavedTensor> plain_layer_extra_bytes(const ModelConfig& c) {
  if (c.experts > 0 || c.mlp != ModelConfig::Mlp::gated) return {};
  const std::int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  std::vector<SavedTensor> t;
  for (const auto& n : c.layer_norms) t.push_back({n + " input in fp32 and its fp32 reciprocal RMS", 4 * c.hidden + 4});
  t.push_back({"k and v repeated to every query head (GQA by repeat_interleave)", 2 * (q - kv) * 2});
  if (!ledger_fault("ledger_no_logsumexp"))  // (a planted fault forgets it: 6e-4 of the layer's bytes here)
    t.push_back({"SDPA's fp32 logsumexp per head", 4 * c.heads});
  t.push_back({"SiLU output (the product's other factor)", 2 * c.intermediate});
  return t;
}

std::vector<SavedTensor> lora_layer_saved_change_bytes(const ModelConfig& c, std::int64_t r, std::int64_t targets) {
  if (c.experts > 0 || c.mlp != ModelConfig::Mlp::gated) return {};
  if (r < 1 || targets < 0)
    throw SpecError("lora_layer_saved_change_bytes: rank " + std::to_string(r) + ", " + std::to_string(targets) +
                    " targets");
  std::vector<SavedTensor> t;
  for (const auto& n : c.layer_norms)
    t.push_back({n + " output (bf16), not kept: its weight is frozen", -2 * c.hidden});
  t.push_back({"each adapter's x A^T (bf16), B's input", targets * 2 * r});
  return t;
}

std::vector<SavedTensor> saved_per_sparse_layer(const ModelConfig& c) {
  std::vector<SavedTensor> t = saved_per_layer(c);
  if (c.experts == 0) return t;
  const auto dense_mlp = std::find_if(t.begin(), t.end(), [](const SavedTensor& s) {
    return s.name.rfind("gate_proj output", 0) == 0 || s.name.rfind("c_fc output", 0) == 0;
  });
  t.erase(dense_mlp, t.end());  // the dense MLP's tensors (and what follows them) give way to the sparse block's
  const std::int64_t k = c.experts_per_token, m = c.moe_intermediate;
  t.push_back({"router logits (softmax input)", c.experts});
  t.push_back({"router softmax output (top-k input)", c.experts});
  t.push_back({"top-k routing weights", k});
  t.push_back({"routed experts: gathered input copies (gate/up_proj input)", k * c.hidden});
  t.push_back({"routed experts: gate_proj outputs (SiLU input)", k * m});
  t.push_back({"routed experts: up_proj outputs", k * m});
  t.push_back({"routed experts: SiLU(gate) * up (down_proj input)", k * m});
  t.push_back({"routed experts: outputs (scaled by their routing weights)", k * c.hidden});
  if (c.shared_expert_intermediate > 0) {
    const std::int64_t s = c.shared_expert_intermediate;
    t.push_back({"shared expert: gate_proj output (SiLU input)", s});
    t.push_back({"shared expert: up_proj output", s});
    t.push_back({"shared expert: SiLU(gate) * up (down_proj input)", s});
    t.push_back({"shared expert gate (sigmoid input and output)", 2});
    t.push_back({"shared expert output (scaled by its gate)", c.hidden});
  }
  return t;
}

double activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, const ActivationOptions& o) {
  auto per_token_layer = [&](const std::vector<SavedTensor>& saved, std::int64_t silu_width) {
    std::int64_t elems = 0;
    for (const auto& t : saved) elems += t.elements_per_token;
    if (o.silu_output_saved && c.mlp != ModelConfig::Mlp::plain) elems += silu_width;  // plain: saved already
    double b = static_cast<double>(elems) * o.bytes_per_element;
    if (o.eager_attention_probs) b += static_cast<double>(c.heads) * tokens * o.bytes_per_element;
    return b;
  };
  const std::int64_t sparse = c.sparse_layers(), dense = c.layers - sparse;
  double per_token = per_token_layer(saved_per_layer(c), c.intermediate) * static_cast<double>(dense);
  if (sparse > 0)
    per_token += per_token_layer(saved_per_sparse_layer(c),
                                 c.experts_per_token * c.moe_intermediate + c.shared_expert_intermediate) *
                 static_cast<double>(sparse);
  // (A planted fault drops the batch: one row's tokens.)
  const double rows = ledger_fault("ledger_activations_batch_ignored") ? 1.0 : static_cast<double>(batch);
  return per_token * rows * static_cast<double>(tokens);
}

double checkpointed_activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, int bpe) {
  return static_cast<double>(c.hidden) * bpe * batch * tokens * c.layers;
}

// ---- inference ---------------------------------------------------------------
std::int64_t kv_cache_bytes_per_token(const ModelConfig& c, int bpe) {
  const std::int64_t heads = ledger_fault("ledger_kv_ignores_gqa") ? c.heads : c.kv_heads;
  // (A planted fault takes the textbook hidden / heads for the head's width.)
  const std::int64_t head_dim = ledger_fault("ledger_kv_head_dim_from_hidden") ? c.hidden / c.heads : c.head_dim;
  return 2 * c.layers * heads * head_dim * bpe;
}

double decode_bytes_per_token(const ModelConfig& c, const DecodeModel& m) {
  const ParamCount p = count_params(c);
  double params = static_cast<double>(p.active());  // a mixture of experts reads the experts a token is routed to
  if (!m.whole_embedding_table) params -= static_cast<double>(p.embedding) - c.hidden;
  // A planted fault reads the cache as fp32.
  const int kv_bytes = ledger_fault("ledger_decode_kv_fp32") ? 4 : 2;
  return params * m.weight_bytes_per_param +
         static_cast<double>(m.context_tokens) * static_cast<double>(kv_cache_bytes_per_token(c, kv_bytes));
}

double prefill_flops(std::int64_t params, std::int64_t tokens) { return 2.0 * params * tokens; }

namespace {
double causal_attention_flops(double width, double tokens) { return 2.0 * 2.0 * width * tokens * (tokens + 1) / 2; }
}  // namespace

double decoder_forward_flops(const ModelConfig& c, std::int64_t layers, std::int64_t batch, std::int64_t tokens) {
  // A planted fault: the query width taken as the hidden size (equal only where heads x head_dim = hidden).
  const double q_width = static_cast<double>(ledger_fault("ledger_q_width_hidden") ? c.hidden : c.heads * c.head_dim);
  if (c.experts > 0)
    fail("decoder FLOPs", "num_local_experts", "a dense decoder's (this config is a mixture of experts)");
  double weights = 0;  // one layer's Linear weights (biases are not multiplies)
  for (const Linear& l : layer_linears(c)) weights += static_cast<double>(l.in) * static_cast<double>(l.out);
  const double t = static_cast<double>(tokens);
  return static_cast<double>(batch) * static_cast<double>(layers) *
         (2.0 * weights * t + causal_attention_flops(q_width, t));
}

double gpt_forward_flops(const GptShape& s, std::int64_t batch, std::int64_t tokens) {
  const double d = static_cast<double>(s.d_model), ff = static_cast<double>(s.d_ff), t = static_cast<double>(tokens);
  const double per_layer = 2.0 * (3 * d * d + d * d + 2 * d * ff) * t + causal_attention_flops(d, t);
  // (A planted fault multiplies the layer by the head count, which chapter 3's 4 = 4 hides.)
  const double layers = static_cast<double>(ledger_fault("ledger_gpt_flops_by_heads") ? s.n_head : s.n_layer);
  return static_cast<double>(batch) * (layers * per_layer + 2.0 * d * s.vocab * t);
}

// ---- units --------------------------------------------------------------------
double gigabytes(double bytes) { return bytes / (ledger_fault("ledger_gib_for_gb") ? 1073741824.0 : 1e9); }
double megabytes(double bytes) { return bytes / (ledger_fault("ledger_gib_for_gb") ? 1048576.0 : 1e6); }

}  // namespace claimcheck::ref
