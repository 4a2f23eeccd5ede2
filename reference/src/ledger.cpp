#include "claimcheck/ref/ledger.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace claimcheck::ref {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Faults a test plants in the answer key itself ($CLAIMCHECK_FAULT, tests/cli_faults.py): a wrong ledger must make
// the claims built on it fail, as a wrong kernel does. Read on every call (a test sets it per process).
bool ledger_fault(const char* name) {
  const char* f = std::getenv("CLAIMCHECK_FAULT");
  return f != nullptr && std::strcmp(f, name) == 0;
}

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& what) {
  throw SpecError(file + ": field '" + field + "': " + what);
}

json parse_text(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(file, "(json)", std::string("malformed JSON: ") + e.what());
  }
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) fail(p.string(), "(file)", "cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// No config dimension of a real model comes near 2^31; beyond it the byte counts would overflow.
constexpr std::int64_t kMaxConfigInt = std::int64_t{1} << 31;

std::int64_t positive_int(const json& j, const std::string& file, const char* key, bool required = true,
                          std::int64_t dflt = 0) {
  if (!j.contains(key) || j.at(key).is_null()) {
    if (required) fail(file, key, "missing");
    return dflt;
  }
  const json& v = j.at(key);
  if (!v.is_number_integer()) {
    if (v.is_number_float()) {
      const double d = v.get<double>();
      if (!std::isfinite(d)) fail(file, key, "not a finite number");
      if (d != std::floor(d)) fail(file, key, "expected an integer, got " + v.dump());
      if (d <= 0) fail(file, key, "must be positive, got " + v.dump());
      if (d > kMaxConfigInt) fail(file, key, "implausibly large, got " + v.dump() + " (the ledger accepts up to 2^31)");
      return static_cast<std::int64_t>(d);
    }
    fail(file, key, std::string("expected an integer, got ") + v.type_name());
  }
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxConfigInt))
    fail(file, key, "implausibly large, got " + v.dump() + " (the ledger accepts up to 2^31)");
  const auto n = v.get<std::int64_t>();
  if (n <= 0) fail(file, key, "must be positive, got " + v.dump());
  if (n > kMaxConfigInt) fail(file, key, "implausibly large, got " + v.dump() + " (the ledger accepts up to 2^31)");
  return n;
}

bool get_bool(const json& j, const std::string& file, const char* key, bool dflt) {
  if (!j.contains(key) || j.at(key).is_null()) return dflt;
  if (!j.at(key).is_boolean()) fail(file, key, std::string("expected true or false, got ") + j.at(key).dump());
  return j.at(key).get<bool>();
}

double positive_number(const json& j, const std::string& file, const char* key) {
  if (!j.contains(key)) fail(file, key, "missing");
  const json& v = j.at(key);
  if (!v.is_number()) fail(file, key, std::string("expected a number, got ") + v.type_name());
  const double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0) fail(file, key, "must be a positive finite number, got " + v.dump());
  return d;
}

}  // namespace

// ---- model config -------------------------------------------------------------
ModelConfig parse_model_config(const std::string& text, const std::string& file) {
  const json j = parse_text(text, file);
  if (!j.is_object()) fail(file, "(json)", "expected an object (a Hugging Face config.json)");
  ModelConfig c;
  c.file = file;
  if (!j.contains("model_type") || !j.at("model_type").is_string())
    fail(file, "model_type", "missing: not a Hugging Face model config");
  c.model_type = j.at("model_type").get<std::string>();
  static const std::vector<std::string> supported = {"llama", "mistral", "qwen2", "qwen3"};
  if (std::find(supported.begin(), supported.end(), c.model_type) == supported.end())
    fail(file, "model_type", "'" + c.model_type + "' is not a supported decoder-only model (llama, mistral, qwen2, qwen3)");
  if (j.contains("is_encoder_decoder") && j.at("is_encoder_decoder").is_boolean() && j.at("is_encoder_decoder").get<bool>())
    fail(file, "is_encoder_decoder", "true: not a decoder-only model");
  c.vocab = positive_int(j, file, "vocab_size");
  c.hidden = positive_int(j, file, "hidden_size");
  c.intermediate = positive_int(j, file, "intermediate_size");
  c.layers = positive_int(j, file, "num_hidden_layers");
  c.heads = positive_int(j, file, "num_attention_heads");
  c.kv_heads = positive_int(j, file, "num_key_value_heads", false, c.heads);
  if (c.heads % c.kv_heads != 0)
    fail(file, "num_key_value_heads", std::to_string(c.kv_heads) + " does not divide num_attention_heads " + std::to_string(c.heads));
  const bool explicit_head_dim = j.contains("head_dim") && !j.at("head_dim").is_null();
  if (!explicit_head_dim && c.hidden % c.heads != 0)
    fail(file, "hidden_size", "not divisible by num_attention_heads and no head_dim is given");
  c.head_dim = positive_int(j, file, "head_dim", false, c.hidden / c.heads);
  c.max_position = positive_int(j, file, "max_position_embeddings", false, 0);
  c.tie_embeddings = get_bool(j, file, "tie_word_embeddings", false);
  if (c.model_type == "qwen2") {
    c.qkv_bias = !ledger_fault("ledger_qwen2_no_bias");  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
  } else {
    // Llama, Mistral and Qwen3 attention: one attention_bias flag for q, k, v and o_proj.
    c.qkv_bias = c.o_bias = get_bool(j, file, "attention_bias", false);
  }
  c.mlp_bias = get_bool(j, file, "mlp_bias", false);
  c.qk_norm = c.model_type == "qwen3";
  // Every count below is an int64 and every byte count a double: a model past 2^50 parameters (a thousand times
  // the largest published) is a typo, not a config.
  const double rough = 2.0 * c.vocab * c.hidden +
                       static_cast<double>(c.layers) * (2.0 * c.hidden * (c.heads + c.kv_heads) * c.head_dim +
                                                        3.0 * c.hidden * c.intermediate);
  if (!(rough < std::ldexp(1.0, 50)))
    fail(file, "num_hidden_layers", "implausibly large model: about " + std::to_string(static_cast<long long>(rough / 1e12)) + " trillion parameters (more than 2^50)");
  if (j.contains("hidden_act") && j.at("hidden_act").is_string()) {
    const auto act = j.at("hidden_act").get<std::string>();
    if (act != "silu" && act != "swish") fail(file, "hidden_act", "'" + act + "': the ledger models a SwiGLU MLP (silu)");
  }
  return c;
}

ModelConfig load_model_config(const fs::path& file) { return parse_model_config(read_file(file), file.string()); }

std::vector<Linear> layer_linears(const ModelConfig& c) {
  const std::int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  return {{"q_proj", c.hidden, q, c.qkv_bias},
          {"k_proj", c.hidden, kv, c.qkv_bias},
          {"v_proj", c.hidden, kv, c.qkv_bias},
          {"o_proj", q, c.hidden, c.o_bias},
          {"gate_proj", c.hidden, c.intermediate, c.mlp_bias},
          {"up_proj", c.hidden, c.intermediate, c.mlp_bias},
          {"down_proj", c.intermediate, c.hidden, c.mlp_bias}};
}

ParamCount count_params(const ModelConfig& c) {
  ParamCount p;
  p.embedding = c.vocab * c.hidden;
  p.lm_head = c.tie_embeddings && !ledger_fault("ledger_tied_counted_twice") ? 0 : c.vocab * c.hidden;
  for (const auto& l : layer_linears(c)) {
    const bool attn = l.name == "q_proj" || l.name == "k_proj" || l.name == "v_proj" || l.name == "o_proj";
    (attn ? p.attention_per_layer : p.mlp_per_layer) += l.params();
  }
  p.norms_per_layer = 2 * c.hidden + (c.qk_norm ? 2 * c.head_dim : 0);
  p.final_norm = c.hidden;
  p.layers = c.layers;
  return p;
}

std::vector<std::string> all_linear_targets() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

std::int64_t lora_trainable(const ModelConfig& c, int rank, const std::vector<std::string>& targets) {
  if (rank <= 0) throw SpecError("lora: field 'r': must be positive, got " + std::to_string(rank));
  const auto linears = layer_linears(c);
  std::int64_t per_layer = 0;
  const std::vector<std::string> peft_default = {"q_proj", "v_proj"};  // what PEFT picks for Llama when none are named
  for (const auto& t : ledger_fault("ledger_lora_qv_only") ? peft_default : targets) {
    auto it = std::find_if(linears.begin(), linears.end(), [&](const Linear& l) { return l.name == t; });
    if (it == linears.end()) throw SpecError("lora: field 'target_modules': unknown module '" + t + "'");
    per_layer += rank * (it->in + it->out);
  }
  return per_layer * c.layers;
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
  t.erase(t.begin());  // the adapter is held in fp32 (the master) and cast on the fly
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
      b += 8.0 / block_size + 32.0 / (block_size * dq_block_size);
    else
      b += 8.0 * scale_bytes / block_size;
  }
  return b;
}

QuantFormat parse_quant_format(const std::string& text, const std::string& where) {
  const json j = parse_text(text, where);
  if (!j.is_object()) fail(where, "(json)", "a quantisation format is an object");
  QuantFormat q;
  q.name = j.value("name", "");
  q.bits = static_cast<int>(positive_int(j, where, "bits"));
  if (q.bits > 16) fail(where, "bits", "more than 16");
  q.block_size = j.contains("block_size") && !j.at("block_size").is_null() ? positive_int(j, where, "block_size") : 0;
  if (q.block_size > 0) q.scale_bytes = static_cast<int>(positive_int(j, where, "scale_bytes"));
  q.double_quant = get_bool(j, where, "double_quant", false);
  if (q.double_quant) {
    if (q.block_size == 0) fail(where, "double_quant", "needs a block_size");
    q.dq_block_size = positive_int(j, where, "dq_block_size", false, 256);
  }
  if (j.contains("keep_bf16")) {
    if (!j.at("keep_bf16").is_array()) fail(where, "keep_bf16", "expected a list of module names");
    for (const auto& m : j.at("keep_bf16")) {
      if (!m.is_string()) fail(where, "keep_bf16", "expected module names");
      const auto s = m.get<std::string>();
      if (s != "embed_tokens" && s != "lm_head") fail(where, "keep_bf16", "unknown module '" + s + "' (embed_tokens, lm_head)");
      q.keep_bf16.push_back(s);
    }
  }
  return q;
}

QuantFormat load_quant_format(const fs::path& file) { return parse_quant_format(read_file(file), file.string()); }

double quantized_weight_bytes(const ModelConfig& c, const QuantFormat& q) {
  const ParamCount p = count_params(c);
  const double qbytes = q.bits_per_param() / 8.0;
  auto kept = [&](const char* m) { return std::find(q.keep_bf16.begin(), q.keep_bf16.end(), m) != q.keep_bf16.end(); };
  double b = 0;
  b += p.embedding * (kept("embed_tokens") ? 2.0 : qbytes);
  b += p.lm_head * (kept("lm_head") ? 2.0 : qbytes);
  b += static_cast<double>(p.layers) * (p.attention_per_layer + p.mlp_per_layer) * qbytes;
  b += static_cast<double>(p.layers * p.norms_per_layer + p.final_norm) * qbytes;
  return b;
}

// ---- activations --------------------------------------------------------------
std::vector<SavedTensor> saved_per_layer(const ModelConfig& c) {
  const std::int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
  return {{"input_layernorm input (residual stream)", c.hidden},
          {"input_layernorm output (q/k/v_proj input)", c.hidden},
          {"q after RoPE", q},
          {"k after RoPE", kv},
          {"v", kv},
          {"attention output (o_proj input)", q},
          {"post_attention_layernorm input", c.hidden},
          {"post_attention_layernorm output (gate/up_proj input)", c.hidden},
          {"gate_proj output (SiLU input)", c.intermediate},
          {"up_proj output", c.intermediate},
          {"SiLU(gate) * up (down_proj input)", c.intermediate}};
}

double activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, const ActivationOptions& o) {
  std::int64_t elems = 0;
  for (const auto& t : saved_per_layer(c)) elems += t.elements_per_token;
  if (o.silu_output_saved) elems += c.intermediate;
  double per_token_layer = static_cast<double>(elems) * o.bytes_per_element;
  if (o.eager_attention_probs) per_token_layer += static_cast<double>(c.heads) * tokens * o.bytes_per_element;
  return per_token_layer * static_cast<double>(batch) * tokens * c.layers;
}

double checkpointed_activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, int bpe) {
  return static_cast<double>(c.hidden) * bpe * batch * tokens * c.layers;
}

// ---- inference ---------------------------------------------------------------
std::int64_t kv_cache_bytes_per_token(const ModelConfig& c, int bpe) {
  const std::int64_t heads = ledger_fault("ledger_kv_ignores_gqa") ? c.heads : c.kv_heads;
  return 2 * c.layers * heads * c.head_dim * bpe;
}

HardwareSpec load_hardware_spec(const fs::path& path) {
  const std::string file = path.string();
  const json j = parse_text(read_file(path), file);
  if (!j.is_object()) fail(file, "(json)", "expected an object (a hardware spec)");
  HardwareSpec h;
  h.file = file;
  if (!j.contains("name") || !j.at("name").is_string()) fail(file, "name", "missing");
  h.name = j.at("name").get<std::string>();
  h.memory_bytes = positive_number(j, file, "memory_bytes");
  h.bandwidth = positive_number(j, file, "hbm_bandwidth_bytes_per_s");
  h.peak_flops = positive_number(j, file, "bf16_dense_flops");
  return h;
}

double decode_bytes_per_token(const ModelConfig& c, const DecodeModel& m) {
  const ParamCount p = count_params(c);
  double params = static_cast<double>(p.total());
  if (!m.whole_embedding_table) params -= static_cast<double>(p.embedding) - c.hidden;
  return params * m.weight_bytes_per_param +
         static_cast<double>(m.context_tokens) * static_cast<double>(kv_cache_bytes_per_token(c, 2));
}

double prefill_flops(std::int64_t params, std::int64_t tokens) { return 2.0 * params * tokens; }

}  // namespace claimcheck::ref
