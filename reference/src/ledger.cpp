#include "claimcheck/ref/ledger.h"

#include "fault.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace claimcheck::ref {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool ledger_fault(const char* name) { return answer_key_fault(name); }

[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& what) {
  throw SpecError(file + ": field '" + field + "': " + what);
}

json parse_text(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond a double (1e400)
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
namespace {

// What transformers 5.x's configuration_<family>.py and modeling_<family>.py do with a config, family by family.
struct Family {
  const char* type;
  const char* cls;               // the config class, for messages
  std::int64_t kv_absent;        // num_key_value_heads when absent: -1 = num_attention_heads
  std::int64_t head_dim_absent;  // -1 = hidden_size // num_attention_heads
  bool hidden_divisible;         // validate_architecture (Llama, Gemma2): hidden_size % num_attention_heads == 0
  bool tie_default;
  enum Bias { attention_bias_all, qkv_always, qkv_key, use_bias_all, none } bias;
  bool mlp_bias_read;
  bool qk_norm;
  const char* act_default;
  enum Moe { dense, mixtral, qwen2_moe } moe;
  enum Norm { rms, rms_four, layer_norm, no_params } norm;  // rms_four: Gemma2's sandwich; no_params: OlmoLayerNorm
  ModelConfig::Mlp mlp;
  bool fused_qkv;
  const char* act_key;       // the key the MLP's activation is read from (Gemma2: hidden_activation)
  std::int64_t pad_default;  // pad_token_id when absent (nn.Embedding's padding_idx): -1 = None
  // A key given as null: head_dim null is hidden_size // num_attention_heads (LlamaConfig.__post_init__,
  // Starcoder2Attention's `or`), elsewhere refused (a strict int field, or None reaching the attention);
  // num_key_value_heads null is num_attention_heads (__post_init__), elsewhere refused.
  bool head_dim_nullable, kv_nullable;
};
using Mlp = ModelConfig::Mlp;
const Family kFamilies[] = {
    // type, class, kv absent, head_dim absent, hidden % heads, tie, bias, mlp_bias, qk_norm, act, moe,
    // norm, mlp, fused qkv, act key, pad default, head_dim null ok, kv null ok
    {"llama", "LlamaConfig", -1, -1, true, false, Family::attention_bias_all, true, false, "silu", Family::dense,
     Family::rms, Mlp::gated, false, "hidden_act", -1, true, true},
    {"mistral", "MistralConfig", 8, -1, false, false, Family::none, false, false, "silu", Family::dense, Family::rms,
     Mlp::gated, false, "hidden_act", -1, true, false},
    {"qwen2", "Qwen2Config", 32, -1, false, false, Family::qkv_always, false, false, "silu", Family::dense, Family::rms,
     Mlp::gated, false, "hidden_act", -1, false, true},
    {"qwen3", "Qwen3Config", 32, 128, false, false, Family::attention_bias_all, false, true, "silu", Family::dense,
     Family::rms, Mlp::gated, false, "hidden_act", -1, false, true},
    {"gemma", "GemmaConfig", 16, 256, false, true, Family::attention_bias_all, false, false, "gelu_pytorch_tanh",
     Family::dense, Family::rms, Mlp::gated, false, "hidden_act", 0, false, false},
    {"gemma2", "Gemma2Config", 4, 256, true, true, Family::attention_bias_all, false, false, "gelu_pytorch_tanh",
     Family::dense, Family::rms_four, Mlp::gated, false, "hidden_activation", 0, false, false},
    {"phi3", "Phi3Config", -1, -1, false, false, Family::none, false, false, "silu", Family::dense, Family::rms,
     Mlp::gated_fused, true, "hidden_act", 32000, false, true},
    {"olmo", "OlmoConfig", -1, -1, false, false, Family::attention_bias_all, false, false, "silu", Family::dense,
     Family::no_params, Mlp::gated, false, "hidden_act", 1, false, true},
    {"starcoder2", "Starcoder2Config", 2, -1, false, true, Family::use_bias_all, false, false, "gelu_pytorch_tanh",
     Family::dense, Family::layer_norm, Mlp::plain, false, "hidden_act", -1, true, false},
    {"mixtral", "MixtralConfig", 8, -1, false, false, Family::none, false, false, "silu", Family::mixtral, Family::rms,
     Mlp::gated, false, "hidden_act", -1, true, false},
    {"qwen2_moe", "Qwen2MoeConfig", 16, -1, false, false, Family::qkv_key, false, false, "silu", Family::qwen2_moe,
     Family::rms, Mlp::gated, false, "hidden_act", -1, false, false},
};

// Keys of one family that change no count: (family, key, why). Their types are checked where transformers' strict
// config class would refuse them (kTypedKeys below).
struct FamilyKey {
  const char* type;
  const char* key;
  const char* why;
};
const FamilyKey kFamilyHarmless[] = {
    {"gemma2", "query_pre_attn_scalar", "scales the attention scores: no parameters"},
    {"gemma2", "final_logit_softcapping", "tanh soft-capping of the logits: no parameters"},
    {"gemma2", "attn_logit_softcapping", "tanh soft-capping of the attention scores: no parameters"},
    {"gemma2", "hidden_act", "Gemma2Config reads hidden_activation; Gemma2MLP never reads hidden_act"},
    {"phi3", "resid_pdrop", "dropout: no parameters"},
    {"phi3", "embd_pdrop", "dropout: no parameters"},
    {"phi3", "original_max_position_embeddings", "RoPE scaling (longrope): no parameters"},
    {"phi3", "partial_rotary_factor", "RoPE: no parameters"},
    {"olmo", "clip_qkv", "clamps q, k and v: no parameters"},
    {"starcoder2", "norm_epsilon", "the LayerNorms' epsilon: no parameters"},
    {"starcoder2", "residual_dropout", "dropout: no parameters"},
    {"starcoder2", "embedding_dropout", "dropout: no parameters"},
    {"starcoder2", "norm_type", "Starcoder2 builds nn.LayerNorm (weight and bias) whatever it says"},
    {"starcoder2", "mlp_type", "Starcoder2 builds the plain MLP (c_fc, c_proj) whatever it says"},
    {"starcoder2", "layer_norm_epsilon", "not read by Starcoder2Config (norm_epsilon is): no parameters"},
};
// The strict types of those keys (huggingface_hub's @strict refuses an int for a float field and the reverse).
struct TypedKey {
  const char* type;
  const char* key;
  enum Kind { integer, float_or_null } kind;
};
const TypedKey kTypedKeys[] = {
    {"gemma2", "query_pre_attn_scalar", TypedKey::integer},
    {"gemma2", "final_logit_softcapping", TypedKey::float_or_null},
    {"gemma2", "attn_logit_softcapping", TypedKey::float_or_null},
    {"phi3", "original_max_position_embeddings", TypedKey::integer},
    {"olmo", "clip_qkv", TypedKey::float_or_null},
};

// Keys that change no count here: PreTrainedConfig's own, generation defaults transformers drops, and the
// families' fields for RoPE, norms' epsilon, dropout, tokens, caching and the router's training loss.
const char* const kHarmless[] = {
    "architectures", "transformers_version", "torch_dtype", "dtype", "_name_or_path", "name_or_path", "use_cache",
    "bos_token_id", "eos_token_id", "pad_token_id", "rms_norm_eps", "initializer_range", "rope_theta",
    "rope_scaling", "rope_parameters", "attention_dropout", "output_hidden_states", "output_attentions",
    "return_dict", "chunk_size_feed_forward", "id2label", "label2id", "problem_type", "num_labels",
    "attn_implementation", "_attn_implementation", "pretraining_tp", "output_router_logits",
    "router_aux_loss_coef", "router_jitter_noise", "norm_topk_prob", "use_bidirectional_attention", "auto_map",
    "bos_token", "eos_token", "temperature", "top_p", "top_k", "do_sample", "max_length", "num_beams",
    "repetition_penalty", "_commit_hash", "tokenizer_class", "prefix", "task_specific_params",
    "cache_implementation"};
// Keys that bound the KV cache of sliding-window layers at the window: the per-token figure holds up to it.
const char* const kWindow[] = {"sliding_window", "use_sliding_window", "max_window_layers", "layer_types"};

const Family& family_of(const json& j, const std::string& file) {
  if (!j.contains("model_type") || !j.at("model_type").is_string())
    fail(file, "model_type", "missing: not a Hugging Face model config");
  const auto t = j.at("model_type").get<std::string>();
  for (const auto& f : kFamilies)
    if (t == f.type) return f;
  std::string list, keys;
  for (const auto& f : kFamilies) list += (list.empty() ? "" : ", ") + std::string(f.type);
  for (auto it = j.begin(); it != j.end() && keys.size() < 200; ++it) keys += (keys.empty() ? "" : ", ") + it.key();
  fail(file, "model_type", "'" + t + "' is not a supported decoder-only model (supported: " + list + "; keys read: " +
                               keys + ")");
}

// transformers' config classes are strict dataclasses: an int field given 4096.0 or true is refused.
std::int64_t int_field(const json& j, const std::string& file, const char* key, std::int64_t min, const char* cls) {
  const json& v = j.at(key);
  if (v.is_boolean() || !v.is_number_integer())
    fail(file, key, std::string("expected an integer, got ") + v.dump() + " (" + cls + " accepts int only)");
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxConfigInt))
    fail(file, key, "implausibly large, got " + v.dump() + " (the ledger accepts up to 2^31)");
  const auto n = v.get<std::int64_t>();
  if (n < min) fail(file, key, (min > 0 ? "must be positive, got " : "must be >= 0, got ") + v.dump());
  if (n > kMaxConfigInt) fail(file, key, "implausibly large, got " + v.dump() + " (the ledger accepts up to 2^31)");
  return n;
}
bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

}  // namespace

std::vector<std::string> supported_model_types() {
  std::vector<std::string> v;
  for (const auto& f : kFamilies) v.emplace_back(f.type);
  return v;
}

std::int64_t ModelConfig::sparse_layers() const {
  return static_cast<std::int64_t>(std::count(sparse_layer.begin(), sparse_layer.end(), true));
}

ModelConfig parse_model_config(const std::string& text, const std::string& file) {
  const json j = parse_text(text, file);
  if (!j.is_object()) fail(file, "(json)", "expected an object (a Hugging Face config.json)");
  const Family& f = family_of(j, file);
  ModelConfig c;
  c.file = file;
  c.model_type = f.type;
  std::vector<std::string> read = {"model_type", "is_encoder_decoder"};
  auto note_default = [&](const char* key, const std::string& value, const std::string& why) {
    c.defaults.push_back({key, value, why});
  };
  // The dimensions have class defaults in transformers too, but a config without them describes no published
  // model: the ledger requires them.
  auto required = [&](const char* key) {
    read.emplace_back(key);
    if (!present(j, key)) fail(file, key, "missing");
    return int_field(j, file, key, 1, f.cls);
  };
  auto optional = [&](const char* key, std::int64_t dflt, std::int64_t min, const std::string& why) {
    read.emplace_back(key);
    if (present(j, key)) return int_field(j, file, key, min, f.cls);
    note_default(key, std::to_string(dflt), why);
    return dflt;
  };
  auto flag = [&](const char* key, bool dflt) {
    read.emplace_back(key);
    if (!j.contains(key)) return dflt;
    if (!j.at(key).is_boolean())
      fail(file, key, std::string("expected true or false, got ") + j.at(key).dump() + " (" + f.cls + " accepts bool only)");
    return j.at(key).get<bool>();
  };
  if (j.contains("is_encoder_decoder") && j.at("is_encoder_decoder").is_boolean() && j.at("is_encoder_decoder").get<bool>())
    fail(file, "is_encoder_decoder", "true: not a decoder-only model");
  if (present(j, "quantization_config"))
    fail(file, "quantization_config", "a pre-quantised checkpoint: the ledger counts unquantised weights (use the "
                                      "unquantised model's config and --quant for the format)");
  c.vocab = required("vocab_size");
  c.hidden = required("hidden_size");
  c.intermediate = required("intermediate_size");
  c.layers = required("num_hidden_layers");
  c.heads = required("num_attention_heads");
  if (c.layers > (1 << 16)) fail(file, "num_hidden_layers", "implausibly large, got " + std::to_string(c.layers) + " (the ledger accepts up to 65536)");
  const std::string cls = f.cls;
  // null where transformers' class refuses it (a strict int field, or None reaching the attention's arithmetic).
  auto null_refused = [&](const char* key, bool nullable) {
    if (j.contains(key) && j.at(key).is_null() && !nullable)
      fail(file, key, "null: " + cls + " refuses it (give an integer or leave the key out)");
  };
  null_refused("num_key_value_heads", f.kv_nullable);
  null_refused("head_dim", f.head_dim_nullable);
  const bool kv_null = j.contains("num_key_value_heads") && j.at("num_key_value_heads").is_null();
  c.kv_heads = optional("num_key_value_heads", f.kv_absent > 0 && !kv_null ? f.kv_absent : c.heads, 1,
                        f.kv_absent > 0 && !kv_null ? cls + "'s default"
                                                    : cls + ": num_attention_heads" + (kv_null ? " (null)" : ""));
  if (c.heads % c.kv_heads != 0)
    fail(file, "num_key_value_heads",
         std::to_string(c.kv_heads) + (present(j, "num_key_value_heads") ? "" : " (" + cls + "'s default)") +
             " does not divide num_attention_heads " + std::to_string(c.heads));
  if (f.hidden_divisible && c.hidden % c.heads != 0)
    fail(file, "hidden_size", std::to_string(c.hidden) + " is not a multiple of num_attention_heads " +
                                  std::to_string(c.heads) + " (" + cls + " refuses it, head_dim or not)");
  const bool explicit_head_dim = present(j, "head_dim");
  if (!explicit_head_dim && f.head_dim_absent < 0 && c.hidden / c.heads == 0)
    fail(file, "hidden_size", "smaller than num_attention_heads and no head_dim is given");
  c.head_dim = optional("head_dim", f.head_dim_absent > 0 ? f.head_dim_absent : c.hidden / c.heads, 1,
                        f.head_dim_absent > 0 ? cls + "'s default"
                                              : cls + ": hidden_size // num_attention_heads" +
                                                    (c.hidden % c.heads ? " (rounded down, as transformers does)" : ""));
  // transformers 5's validate_rope (RotaryEmbeddingConfigMixin) refuses a fully rotated head of odd width above 4
  // (rotate_half splits the head in two). It reads the config's head_dim attribute: the key where given, else what
  // the class sets (Llama, Mistral: hidden_size // num_attention_heads, a null too; Qwen3, Gemma, Gemma2: their
  // defaults); the classes that set none (Qwen2, Phi-3, OLMo, StarCoder2, Mixtral, Qwen2-MoE) are not checked. The
  // rotated width is head_dim x partial_rotary_factor (the key, or rope_parameters' / rope_scaling's), rounded down.
  {
    const std::string t = c.model_type;
    const bool computed = t == "llama" || t == "mistral";
    const bool held = explicit_head_dim || computed || (!j.contains("head_dim") && f.head_dim_absent > 0);
    double prf = 1.0;
    for (const char* block : {"rope_scaling", "rope_parameters"})
      if (j.contains(block) && j.at(block).is_object() && j.at(block).contains("partial_rotary_factor") &&
          j.at(block).at("partial_rotary_factor").is_number())
        prf = j.at(block).at("partial_rotary_factor").get<double>();
    if (j.contains("partial_rotary_factor") && j.at("partial_rotary_factor").is_number())
      prf = j.at("partial_rotary_factor").get<double>();
    const std::int64_t h = c.head_dim;
    if (held && h > 4 && h % 2 != 0 && static_cast<std::int64_t>(static_cast<double>(h) * prf) == h)
      fail(file, "head_dim",
           std::to_string(h) + (explicit_head_dim ? "" : " (" + cls + ": hidden_size // num_attention_heads)") +
               " is odd: RoPE rotates pairs, and " + cls + " (transformers 5's validate_rope) refuses a fully "
               "rotated head of odd width above 4");
  }
  c.max_position = present(j, "max_position_embeddings") ? int_field(j, file, "max_position_embeddings", 1, f.cls) : 0;
  read.emplace_back("max_position_embeddings");
  c.tie_embeddings = flag("tie_word_embeddings", f.tie_default);
  if (!present(j, "tie_word_embeddings"))
    note_default("tie_word_embeddings", f.tie_default ? "true" : "false", cls + "'s default");
  switch (f.bias) {
    case Family::attention_bias_all: c.qkv_bias = c.o_bias = flag("attention_bias", false); break;
    case Family::qkv_always: c.qkv_bias = true; break;  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
    case Family::qkv_key: c.qkv_bias = flag("qkv_bias", true); break;
    case Family::use_bias_all:  // Starcoder2: every Linear of the layer (attention and MLP), not lm_head
      c.qkv_bias = c.o_bias = c.mlp_bias = flag("use_bias", true);
      if (!j.contains("use_bias")) note_default("use_bias", "true", cls + "'s default");
      break;
    case Family::none: break;
  }
  if (c.model_type == "qwen2" && ledger_fault("ledger_qwen2_no_bias")) c.qkv_bias = false;
  if (f.mlp_bias_read) c.mlp_bias = flag("mlp_bias", false);
  c.qk_norm = f.qk_norm;
  const char* act = f.act_key;
  read.emplace_back(act);
  c.hidden_act = f.act_default;
  if (j.contains(act)) {
    if (!j.at(act).is_string()) fail(file, act, "expected a string, got " + j.at(act).dump());
    c.hidden_act = j.at(act).get<std::string>();
    static const std::vector<std::string> acts = {
        "gelu", "gelu_10", "gelu_accurate", "gelu_fast", "gelu_new", "gelu_python", "gelu_python_tanh",
        "gelu_pytorch_tanh", "hardswish", "laplace", "leaky_relu", "linear", "mish", "quick_gelu", "relu", "relu2",
        "relu6", "sigmoid", "silu", "sqrtsoftplus", "swish", "tanh"};
    if (c.hidden_act == "prelu" || c.hidden_act == "xielu")
      fail(file, act, "'" + c.hidden_act + "' has learnable parameters the ledger does not count");
    if (std::find(acts.begin(), acts.end(), c.hidden_act) == acts.end())
      fail(file, act, "'" + c.hidden_act + "' is not an activation transformers knows (ACT2FN)");
  } else {
    note_default(act, c.hidden_act, cls + "'s default");
  }
  // The block's shape.
  c.fused_qkv = f.fused_qkv;
  c.mlp = f.mlp;
  switch (f.norm) {
    case Family::rms: break;
    case Family::rms_four:  // Gemma2DecoderLayer: a norm after attention and one each side of the MLP
      c.layer_norms = {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                       "post_feedforward_layernorm"};
      break;
    case Family::layer_norm:  // nn.LayerNorm(hidden, eps=norm_epsilon): weight and bias
      c.norm_params_per_unit = 2;
      c.norm_kind = "a LayerNorm";
      break;
    case Family::no_params:  // OlmoLayerNorm: F.layer_norm(x, shape, None, None)
      c.norm_params_per_unit = 0;
      c.norm_kind = "a LayerNorm without parameters";
      break;
  }
  // nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id) asserts -vocab_size <= padding_idx < vocab_size.
  read.emplace_back("pad_token_id");
  if (present(j, "pad_token_id")) {
    const json& v = j.at("pad_token_id");
    if (v.is_boolean() || !v.is_number_integer())
      fail(file, "pad_token_id", "expected an integer or null, got " + v.dump() + " (" + cls + " accepts int only)");
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() >= static_cast<std::uint64_t>(c.vocab)
                               : (v.get<std::int64_t>() >= c.vocab || v.get<std::int64_t>() < -c.vocab))
      fail(file, "pad_token_id", v.dump() + " is outside the embedding's " + std::to_string(c.vocab) +
                                     " rows (nn.Embedding's padding_idx must lie in [-vocab_size, vocab_size))");
  } else if (!j.contains("pad_token_id") && f.pad_default >= c.vocab) {
    fail(file, "pad_token_id", "absent: " + cls + "'s default " + std::to_string(f.pad_default) +
                                   " is outside the embedding's " + std::to_string(c.vocab) +
                                   " rows (nn.Embedding's padding_idx; give pad_token_id)");
  }
  for (const auto& t : kTypedKeys) {
    if (c.model_type != t.type || !j.contains(t.key)) continue;
    const json& v = j.at(t.key);
    if (t.kind == TypedKey::integer && (v.is_boolean() || !v.is_number_integer()))
      fail(file, t.key, "expected an integer, got " + v.dump() + " (" + cls + " accepts int only)");
    if (t.kind == TypedKey::float_or_null && !v.is_null() && !v.is_number_float())
      fail(file, t.key, "expected a float or null, got " + v.dump() + " (" + cls + " accepts float or None only)");
  }

  // Mixture of experts.
  if (f.moe == Family::mixtral) {
    c.experts = optional("num_local_experts", 8, 1, cls + "'s default");
    c.experts_per_token = optional("num_experts_per_tok", 2, 1, cls + "'s default");
    c.moe_intermediate = c.intermediate;  // MixtralExperts: every expert is intermediate_size wide
    c.sparse_layer.assign(static_cast<std::size_t>(c.layers), true);
    c.peft_all_linear_experts = true;
  } else if (f.moe == Family::qwen2_moe) {
    c.experts = optional("num_experts", 60, 0, cls + "'s default");
    c.experts_per_token = optional("num_experts_per_tok", 4, 1, cls + "'s default");
    c.moe_intermediate = optional("moe_intermediate_size", 1408, 1, cls + "'s default");
    c.shared_expert_intermediate = optional("shared_expert_intermediate_size", 5632, 0, cls + "'s default");
    const std::int64_t step = optional("decoder_sparse_step", 1, 1, cls + "'s default");
    read.emplace_back("mlp_only_layers");
    std::vector<std::int64_t> mlp_only;
    if (present(j, "mlp_only_layers")) {
      if (!j.at("mlp_only_layers").is_array()) fail(file, "mlp_only_layers", "expected a list of layer indices");
      for (const auto& v : j.at("mlp_only_layers")) {
        if (v.is_boolean() || !v.is_number_integer()) fail(file, "mlp_only_layers", "expected integers, got " + v.dump());
        mlp_only.push_back(v.get<std::int64_t>());
      }
    }
    c.sparse_layer.resize(static_cast<std::size_t>(c.layers));
    for (std::int64_t i = 0; i < c.layers; ++i)  // Qwen2MoeDecoderLayer
      c.sparse_layer[i] = std::find(mlp_only.begin(), mlp_only.end(), i) == mlp_only.end() && c.experts > 0 &&
                          (i + 1) % step == 0;
    if (c.experts == 0) c.experts_per_token = 0;
  }
  if (c.experts > 0 && c.experts_per_token > c.experts)
    fail(file, "num_experts_per_tok", std::to_string(c.experts_per_token) + " is more than the " +
                                          std::to_string(c.experts) + " experts");

  // Every count below is an int64 and every byte count a double: a model past 2^50 parameters (a thousand times
  // the largest published) is a typo, not a config.
  const double rough = 2.0 * c.vocab * c.hidden +
                       static_cast<double>(c.layers) * (2.0 * c.hidden * (c.heads + c.kv_heads) * c.head_dim +
                                                        3.0 * c.hidden * c.intermediate +
                                                        3.0 * c.hidden * c.moe_intermediate * c.experts +
                                                        3.0 * c.hidden * c.shared_expert_intermediate);
  if (!(rough < std::ldexp(1.0, 50)))
    fail(file, "num_hidden_layers", "implausibly large model: about " + std::to_string(static_cast<long long>(rough / 1e12)) + " trillion parameters (more than 2^50)");

  // The keys not read: harmless ones by name, the biases this family's modeling code never builds, the rest unknown.
  auto in = [](const auto& list, const std::string& k) {
    return std::find(std::begin(list), std::end(list), k) != std::end(list);
  };
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    if (in(read, k)) continue;
    if (!k.empty() && k[0] == '_' && k != "_name_or_path" && k != "_attn_implementation" && k != "_commit_hash")
      c.ignored.push_back({k, true, "a comment (leading underscore)"});
    else if (const auto fk = std::find_if(std::begin(kFamilyHarmless), std::end(kFamilyHarmless),
                                          [&](const FamilyKey& x) { return c.model_type == x.type && k == x.key; });
             fk != std::end(kFamilyHarmless))
      c.ignored.push_back({k, true, fk->why});
    else if (in(kHarmless, k))
      c.ignored.push_back({k, true, "read by transformers for nothing counted here"});
    else if (in(kWindow, k))
      c.ignored.push_back({k, true, "sliding-window attention: bounds the KV cache of such layers at the window; "
                                    "the per-token figure holds up to it"});
    else if (k == "attention_bias" || k == "mlp_bias" || k == "qkv_bias" || k == "use_bias")
      c.ignored.push_back({k, true, cls + " has no such field: " + c.model_type + "'s modeling code builds no such bias"});
    else
      c.ignored.push_back({k, false, "unknown to the ledger (transformers keeps it as an attribute " + cls +
                                         "'s modeling code does not read)"});
  }
  return c;
}

ModelConfig load_model_config(const fs::path& file) { return parse_model_config(read_file(file), file.string()); }

std::vector<Linear> layer_linears(const ModelConfig& c) {
  const std::int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim, h = c.hidden, I = c.intermediate;
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
      l.push_back({"gate_up_proj", h, 2 * I, c.mlp_bias, "mlp"});
      break;
    case ModelConfig::Mlp::plain:  // Starcoder2MLP: c_fc, activation, c_proj
      l.push_back({"c_fc", h, I, c.mlp_bias, "mlp"});
      l.push_back({"c_proj", I, h, c.mlp_bias, "mlp"});
      return l;
  }
  l.push_back({"down_proj", I, h, c.mlp_bias, "mlp"});
  return l;
}

GptShape parse_gpt_shape(const std::string& json_text, const std::string& where) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    fail(where, "(json)", std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) fail(where, "(json)", "expected an object");
  GptShape s;
  s.vocab = positive_int(j, where, "vocab");
  s.d_model = positive_int(j, where, "d_model");
  s.n_layer = positive_int(j, where, "n_layer");
  s.n_head = positive_int(j, where, "n_head");
  s.d_ff = positive_int(j, where, "d_ff");
  s.context = positive_int(j, where, "context");
  if (s.d_model % s.n_head != 0)
    fail(where, "n_head", std::to_string(s.n_head) + " does not divide d_model " + std::to_string(s.d_model));
  return s;
}

std::int64_t gpt_params(const GptShape& s) {
  using I = __int128;
  const I d = s.d_model, ff = s.d_ff;
  const I layer_norm = 2 * d;                                   // weight and bias
  const I attention = (d * 3 * d + 3 * d) + (d * d + d);        // qkv, output projection
  const I mlp = (d * ff + ff) + (ff * d + d);                   // fc1, fc2
  const I per_layer = 2 * layer_norm + attention + mlp;
  const I total = I{s.vocab} * d + I{s.context} * d + I{s.n_layer} * per_layer + layer_norm + d * I{s.vocab};
  if (total >= (I{1} << 62)) fail("gpt shape", "(sizes)", "the parameter count passes 2^62");
  return static_cast<std::int64_t>(total);
}

ParamCount count_params(const ModelConfig& c) {
  ParamCount p;
  p.embedding = c.vocab * c.hidden;
  p.lm_head = c.tie_embeddings && !ledger_fault("ledger_tied_counted_twice") ? 0 : c.vocab * c.hidden;
  for (const auto& l : layer_linears(c)) (l.block == "self_attn" ? p.attention_per_layer : p.mlp_per_layer) += l.params();
  p.norms_per_layer = static_cast<std::int64_t>(c.layer_norms.size()) * c.norm_params_per_unit * c.hidden +
                      (c.qk_norm ? 2 * c.head_dim : 0);
  p.final_norm = c.norm_params_per_unit * c.hidden;
  p.layers = c.layers;
  p.sparse_layers = c.sparse_layers();
  if (p.sparse_layers > 0) {
    p.experts = c.experts;
    p.experts_per_token = c.experts_per_token;
    p.expert_params = 3 * c.hidden * c.moe_intermediate;  // gate and up fused (2I x h), down (h x I); no bias
    p.router_per_layer = c.experts * c.hidden;           // the top-k router: experts x hidden, no bias
    if (c.model_type == "qwen2_moe")                     // shared expert (SwiGLU) + its sigmoid gate (hidden -> 1)
      p.shared_expert_per_layer = 3 * c.hidden * c.shared_expert_intermediate + c.hidden;
  }
  return p;
}

std::vector<std::string> all_linear_targets() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

// ---- LoRA ---------------------------------------------------------------------
namespace {
// A module of the model as peft sees it: name within the layer (or full name at top level), whether peft can adapt
// it by name, its LoRA parameters per rank, whether "all-linear" takes it.
struct Module {
  std::string name;
  bool adaptable = false;
  std::int64_t lora_per_rank = 0;
  bool all_linear = false;
  const char* what = "";
};

std::vector<Module> layer_modules(const ModelConfig& c, bool sparse) {
  std::vector<Module> m;
  const auto lin = layer_linears(c);
  for (const auto& l : lin)
    if (l.block == "self_attn") m.push_back({"self_attn." + l.name, true, l.in + l.out, true, "Linear"});
  m.push_back({"self_attn", false, 0, false, "the attention block"});
  m.push_back({"mlp", false, 0, false, "the MLP block"});
  for (const auto& n : c.layer_norms) m.push_back({n, false, 0, false, c.norm_kind.c_str()});
  if (c.qk_norm) {
    m.push_back({"self_attn.q_norm", false, 0, false, "an RMSNorm"});
    m.push_back({"self_attn.k_norm", false, 0, false, "an RMSNorm"});
  }
  if (!sparse) {
    for (const auto& l : lin)
      if (l.block == "mlp") m.push_back({"mlp." + l.name, true, l.in + l.out, true, "Linear"});
    return m;
  }
  const std::int64_t h = c.hidden, e = c.experts, I = c.moe_intermediate;
  // The router ("gate"): peft adapts it, by name or under "all-linear", only where it converts the family's
  // experts (Mixtral); Qwen2-MoE's Qwen2MoeTopKRouter it refuses.
  m.push_back({"mlp.gate", c.peft_all_linear_experts, h + e, c.peft_all_linear_experts, "the router"});
  m.push_back({"mlp.experts", false, 0, false, "fused expert tensors (peft adapts them only under all-linear)"});
  if (c.peft_all_linear_experts) {
    // peft 0.21 converts Mixtral's w1, w3 (fused into gate_up_proj) and w2: A (2r*E x h), B (2I x 2r*E) on
    // gate_up_proj (w1 and w3 each r per expert), A (r*E x I), B (h x r*E) on down_proj.
    m.push_back({"mlp.experts#gate_up_proj", false, 2 * e * (h + 2 * I), true, "fused experts"});
    m.push_back({"mlp.experts#down_proj", false, e * (I + h), true, "fused experts"});
  }
  if (c.model_type == "qwen2_moe") {
    const std::int64_t s = c.shared_expert_intermediate;
    m.push_back({"mlp.shared_expert", false, 0, false, "the shared expert's MLP block"});
    m.push_back({"mlp.shared_expert.gate_proj", true, h + s, true, "Linear"});
    m.push_back({"mlp.shared_expert.up_proj", true, h + s, true, "Linear"});
    m.push_back({"mlp.shared_expert.down_proj", true, s + h, true, "Linear"});
    m.push_back({"mlp.shared_expert_gate", true, h + 1, true, "Linear"});
  }
  return m;
}

bool suffix_match(const std::string& key, const std::string& t) {
  return key == t || (key.size() > t.size() && key.compare(key.size() - t.size(), t.size(), t) == 0 &&
                      key[key.size() - t.size() - 1] == '.');
}
}  // namespace

LoraTargets parse_lora_targets(const std::string& s) {
  LoraTargets t;
  if (s == "all-linear") {
    t.all_linear = true;
    return t;
  }
  if (s.find_first_of("*+?()[]{}|^$\\") != std::string::npos) {
    t.regex = s;
    return t;
  }
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) {
    while (!x.empty() && x.front() == ' ') x.erase(x.begin());
    while (!x.empty() && x.back() == ' ') x.pop_back();
    if (!x.empty()) t.names.push_back(x);
  }
  if (t.names.empty()) throw SpecError("lora: field 'target_modules': empty (give module names, all-linear or a regex)");
  return t;
}

LoraCount lora_count(const ModelConfig& c, int rank, const LoraTargets& spec) {
  if (rank <= 0) throw SpecError("lora: field 'r': must be positive, got " + std::to_string(rank));
  LoraTargets t = spec;
  if (ledger_fault("ledger_lora_qv_only")) t = LoraTargets{false, {"q_proj", "v_proj"}, ""};
  for (const auto& n : t.names)
    if (n == "all-linear")
      throw SpecError("lora: field 'target_modules': 'all-linear' is a spelling of its own, not a module name in a list");
  std::regex re;
  if (!t.regex.empty()) {
    try {
      re = std::regex(t.regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw SpecError("lora: field 'target_modules': '" + t.regex + "' is not a regular expression (" + e.what() + ")");
    }
  }
  LoraCount out;
  std::vector<bool> name_used(t.names.size(), false);
  // peft 0.21's conversion of Mixtral's transformers-4 names (utils/transformers_weight_conversion.py): a listed
  // name that is, or ends in ".", the router `gate` or an expert's w1, w3, w2 becomes a target parameter of every
  // sparse layer (the router's weight, the fused gate_up_proj, down_proj) and no longer a module name; w1 and w3 are
  // fused, so one without the other is refused.
  std::set<std::string> converted;  // "mlp.gate", "mlp.experts#gate_up_proj", "mlp.experts#down_proj"
  std::vector<bool> is_converted(t.names.size(), false);
  if (c.peft_all_linear_experts) {
    bool w1 = false, w3 = false;
    for (std::size_t i = 0; i < t.names.size(); ++i) {
      for (const char* old : {"gate", "w1", "w3", "w2"}) {
        if (!suffix_match(t.names[i], old)) continue;
        const std::string o = old;
        converted.insert(o == "gate" ? "mlp.gate" : o == "w2" ? "mlp.experts#down_proj" : "mlp.experts#gate_up_proj");
        w1 = w1 || o == "w1";
        w3 = w3 || o == "w3";
        is_converted[i] = name_used[i] = true;
        break;
      }
    }
    if (w1 != w3)
      throw SpecError(std::string("lora: field 'target_modules': ") + (w1 ? "w1 without w3" : "w3 without w1") +
                      ": peft fuses Mixtral's w1 and w3 into the experts' gate_up_proj and refuses one alone");
  }
  auto select = [&](const std::string& full, const std::string& shown, const Module& m) {
    bool hit = false;
    if (t.all_linear) {
      hit = m.all_linear;
    } else if (!t.regex.empty()) {
      hit = m.name.find('#') == std::string::npos && std::regex_match(full, re);
    } else if (converted.count(m.name)) {
      hit = true;  // a converted name: this parameter in every sparse layer
    } else if (m.name.find('#') == std::string::npos) {
      for (std::size_t i = 0; i < t.names.size(); ++i)
        if (!is_converted[i] && suffix_match(full, t.names[i])) {
          hit = true;
          name_used[i] = true;
        }
    }
    if (!hit) return;
    if (!t.all_linear && !m.adaptable && !converted.count(m.name))
      throw SpecError("lora: field 'target_modules': selects " + full + ", " + m.what +
                      ", which peft cannot adapt by name (Linear and Embedding modules only)");
    // r x (in + out) in a double first: a rank of 2^31 on a wide layer passes int64 (a typo, not a config).
    const double add = static_cast<double>(rank) * static_cast<double>(m.lora_per_rank);
    if (!(add + static_cast<double>(out.trainable) < std::ldexp(1.0, 50)))
      throw SpecError("lora: field 'r': " + std::to_string(rank) + " gives more than 2^50 trainable parameters");
    out.trainable += static_cast<std::int64_t>(add);
    ++out.adapted_modules;
    std::string name = shown;
    std::replace(name.begin(), name.end(), '#', '.');  // fused expert tensors: parameters, not modules
    if (std::find(out.modules.begin(), out.modules.end(), name) == out.modules.end()) out.modules.push_back(name);
  };
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const bool sparse = !c.sparse_layer.empty() && c.sparse_layer[static_cast<std::size_t>(i)];
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    for (const auto& m : layer_modules(c, sparse)) select(prefix + m.name, m.name, m);
  }
  const std::vector<Module> top = {{"model.embed_tokens", true, c.vocab + c.hidden, false, "Embedding"},
                                   {"lm_head", true, c.hidden + c.vocab, false, "Linear"},
                                   {"model.norm", false, 0, false, c.norm_kind.c_str()},
                                   {"model", false, 0, false, "the decoder"},
                                   {"model.layers", false, 0, false, "the list of layers"}};
  for (const auto& m : top) select(m.name, m.name, m);
  // peft skips a name that matches nothing as long as another one matches (a Qwen2-MoE without sparse layers has
  // no shared_expert): the ledger does the same and lists them.
  for (std::size_t i = 0; i < t.names.size(); ++i)
    if (!name_used[i] && std::find(out.unmatched.begin(), out.unmatched.end(), t.names[i]) == out.unmatched.end())
      out.unmatched.push_back(t.names[i]);
  if (!t.names.empty() && out.adapted_modules == 0)
    throw SpecError("lora: field 'target_modules': no name matches a module of this " + c.model_type +
                    " model (names such as q_proj, self_attn.q_proj, layers.0.self_attn.q_proj, lm_head)");
  if (!t.regex.empty() && out.adapted_modules == 0)
    throw SpecError("lora: field 'target_modules': the regex '" + t.regex + "' matches no full module name (e.g. model.layers.0.self_attn.q_proj)");
  if (t.all_linear && out.adapted_modules == 0) throw SpecError("lora: field 'target_modules': all-linear selects nothing");
  return out;
}

std::int64_t lora_trainable(const ModelConfig& c, int rank, const std::vector<std::string>& targets) {
  LoraTargets t;
  if (targets.size() == 1 && targets[0] == "all-linear")
    t.all_linear = true;
  else
    t.names = targets;
  if (!t.all_linear && t.names.empty()) throw SpecError("lora: field 'target_modules': empty");
  return lora_count(c, rank, t).trainable;
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
  if (j.contains("name") && !j.at("name").is_string())
    fail(where, "name", std::string("expected a string, got ") + j.at("name").type_name());
  q.name = j.value("name", "");
  const std::int64_t bits = positive_int(j, where, "bits");  // compared before the cast: 2^31 is no int
  if (bits > 16) fail(where, "bits", "more than 16");
  q.bits = static_cast<int>(bits);
  q.block_size = j.contains("block_size") && !j.at("block_size").is_null() ? positive_int(j, where, "block_size") : 0;
  if (q.block_size > 0) {
    const std::int64_t scale_bytes = positive_int(j, where, "scale_bytes");
    if (scale_bytes > std::numeric_limits<int>::max()) fail(where, "scale_bytes", "implausibly large, got " + j.at("scale_bytes").dump());
    q.scale_bytes = static_cast<int>(scale_bytes);
  }
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
  b += static_cast<double>(p.total() - p.embedding - p.lm_head) * qbytes;  // layers, norms included
  return b;
}

// ---- activations --------------------------------------------------------------
std::vector<SavedTensor> saved_per_layer(const ModelConfig& c) {
  const std::int64_t q = c.heads * c.head_dim, kv = c.kv_heads * c.head_dim;
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
  return per_token * static_cast<double>(batch) * static_cast<double>(tokens);
}

double checkpointed_activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, int bpe) {
  return static_cast<double>(c.hidden) * bpe * batch * tokens * c.layers;
}

// ---- inference ---------------------------------------------------------------
std::int64_t kv_cache_bytes_per_token(const ModelConfig& c, int bpe) {
  const std::int64_t heads = ledger_fault("ledger_kv_ignores_gqa") ? c.heads : c.kv_heads;
  return 2 * c.layers * heads * c.head_dim * bpe;
}

HardwareSpec load_hardware_spec(const fs::path& path) { return parse_hardware_spec(read_file(path), path.string()); }

HardwareSpec parse_hardware_spec(const std::string& text, const std::string& file) {
  const json j = parse_text(text, file);
  if (!j.is_object()) fail(file, "(json)", "expected an object (a hardware spec)");
  HardwareSpec h;
  h.file = file;
  if (!j.contains("name") || !j.at("name").is_string()) fail(file, "name", "missing");
  h.name = j.at("name").get<std::string>();
  // A machine's sizes and rates lie far inside [1, 1e30]; beyond it the times and ratios derived overflow (1 / 5e-324).
  auto plausible = [&](const char* key) {
    const double d = positive_number(j, file, key);
    if (d < 1 || d > 1e30) fail(file, key, "implausible, got " + j.at(key).dump() + " (the ledger accepts 1 to 1e30)");
    return d;
  };
  h.memory_bytes = plausible("memory_bytes");
  h.bandwidth = plausible("hbm_bandwidth_bytes_per_s");
  h.peak_flops = plausible("bf16_dense_flops");
  return h;
}

double decode_bytes_per_token(const ModelConfig& c, const DecodeModel& m) {
  const ParamCount p = count_params(c);
  double params = static_cast<double>(p.active());  // a mixture of experts reads the experts a token is routed to
  if (!m.whole_embedding_table) params -= static_cast<double>(p.embedding) - c.hidden;
  return params * m.weight_bytes_per_param +
         static_cast<double>(m.context_tokens) * static_cast<double>(kv_cache_bytes_per_token(c, 2));
}

double prefill_flops(std::int64_t params, std::int64_t tokens) { return 2.0 * params * tokens; }

double gigabytes(double bytes) { return bytes / (ledger_fault("ledger_gib_for_gb") ? 1073741824.0 : 1e9); }
double megabytes(double bytes) { return bytes / (ledger_fault("ledger_gib_for_gb") ? 1048576.0 : 1e6); }

}  // namespace claimcheck::ref
