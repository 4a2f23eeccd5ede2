// Reading a Hugging Face decoder config.json into a ModelConfig, as transformers 5.x's config classes and modeling
// code read it, family by family: the families' table, the keys known to change no count, and parse_model_config
// with one helper per group of fields (dimensions, heads, RoPE width, embeddings, biases, activation, block shape,
// pad token, strictly typed keys, mixture of experts, size, keys not read).
#include "claimcheck/ref/ledger.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "claimcheck/base/json_depth.h"
#include "ledger_internal.h"

namespace claimcheck::ref {
namespace fs = std::filesystem;
using nlohmann::json;

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
const char* const kHarmless[] = {"architectures",
                                 "transformers_version",
                                 "torch_dtype",
                                 "dtype",
                                 "_name_or_path",
                                 "name_or_path",
                                 "use_cache",
                                 "bos_token_id",
                                 "eos_token_id",
                                 "pad_token_id",
                                 "rms_norm_eps",
                                 "initializer_range",
                                 "rope_theta",
                                 "rope_scaling",
                                 "rope_parameters",
                                 "attention_dropout",
                                 "output_hidden_states",
                                 "output_attentions",
                                 "return_dict",
                                 "chunk_size_feed_forward",
                                 "id2label",
                                 "label2id",
                                 "problem_type",
                                 "num_labels",
                                 "attn_implementation",
                                 "_attn_implementation",
                                 "pretraining_tp",
                                 "output_router_logits",
                                 "router_aux_loss_coef",
                                 "router_jitter_noise",
                                 "norm_topk_prob",
                                 "use_bidirectional_attention",
                                 "auto_map",
                                 "bos_token",
                                 "eos_token",
                                 "temperature",
                                 "top_p",
                                 "top_k",
                                 "do_sample",
                                 "max_length",
                                 "num_beams",
                                 "repetition_penalty",
                                 "_commit_hash",
                                 "tokenizer_class",
                                 "prefix",
                                 "task_specific_params",
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
  fail(file, "model_type",
       "'" + t + "' is not a supported decoder-only model (supported: " + list + "; keys read: " + keys + ")");
}

// transformers' config classes are strict dataclasses: an int field given 4096.0 or true is refused.
std::int64_t int_field(const json& j, const std::string& file, const char* key, std::int64_t min, const char* cls) {
  const json& v = j.at(key);
  if (v.is_boolean() || !v.is_number_integer())
    fail(file, key, std::string("expected an integer, got ") + shown(v) + " (" + cls + " accepts int only)");
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxConfigInt))
    fail(file, key, "implausibly large, got " + shown(v) + " (the ledger accepts up to 2^31)");
  const auto n = v.get<std::int64_t>();
  if (n < min) fail(file, key, (min > 0 ? "must be positive, got " : "must be >= 0, got ") + shown(v));
  if (n > kMaxConfigInt) fail(file, key, "implausibly large, got " + shown(v) + " (the ledger accepts up to 2^31)");
  return n;
}
bool present(const json& j, const char* key) { return j.contains(key) && !j.at(key).is_null(); }

}  // namespace

std::int64_t ModelConfig::sparse_layers() const {
  return static_cast<std::int64_t>(std::count(sparse_layer.begin(), sparse_layer.end(), true));
}

// ---- parse_model_config's helpers, in the order it calls them -------------------
namespace {

// What the helpers share: the config, its family, the ModelConfig they fill, and the keys read so far (the keys no
// helper read are listed as ignored at the end).
struct ConfigReader {
  const json& j;
  const std::string& file;
  const Family& f;
  const std::string cls;  // f.cls, for messages
  ModelConfig& c;
  std::vector<std::string> read = {"model_type", "is_encoder_decoder"};

  void note_default(const char* key, const std::string& value, const std::string& why) {
    c.defaults.push_back({key, value, why});
  }
  // The dimensions have class defaults in transformers too, but a config without them describes no published
  // model: the ledger requires them.
  std::int64_t required(const char* key) {
    read.emplace_back(key);
    if (!present(j, key)) fail(file, key, "missing");
    return int_field(j, file, key, 1, f.cls);
  }
  std::int64_t optional(const char* key, std::int64_t dflt, std::int64_t min, const std::string& why) {
    read.emplace_back(key);
    if (present(j, key)) return int_field(j, file, key, min, f.cls);
    note_default(key, std::to_string(dflt), why);
    return dflt;
  }
  bool flag(const char* key, bool dflt) {
    read.emplace_back(key);
    if (!j.contains(key)) return dflt;
    if (!j.at(key).is_boolean())
      fail(file, key,
           std::string("expected true or false, got ") + shown(j.at(key)) + " (" + f.cls + " accepts bool only)");
    return j.at(key).get<bool>();
  }
};

// An encoder-decoder, or a checkpoint quantised already: not what the ledger counts.
void refuse_other_models(const json& j, const std::string& file) {
  if (j.contains("is_encoder_decoder") && j.at("is_encoder_decoder").is_boolean() &&
      j.at("is_encoder_decoder").get<bool>())
    fail(file, "is_encoder_decoder", "true: not a decoder-only model");
  if (present(j, "quantization_config"))
    fail(file, "quantization_config",
         "a pre-quantised checkpoint: the ledger counts unquantised weights (use the "
         "unquantised model's config and --quant for the format)");
}

// vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads: required.
void read_dimensions(ConfigReader& r) {
  ModelConfig& c = r.c;
  c.vocab = r.required("vocab_size");
  c.hidden = r.required("hidden_size");
  c.intermediate = r.required("intermediate_size");
  c.layers = r.required("num_hidden_layers");
  c.heads = r.required("num_attention_heads");
  if (c.layers > (1 << 16))
    fail(r.file, "num_hidden_layers",
         "implausibly large, got " + std::to_string(c.layers) + " (the ledger accepts up to 65536)");
}

// num_key_value_heads and head_dim: given, null or absent, each family its own way.
void read_heads(ConfigReader& r) {
  const json& j = r.j;
  const std::string& file = r.file;
  const Family& f = r.f;
  const std::string& cls = r.cls;
  ModelConfig& c = r.c;
  // null where transformers' class refuses it (a strict int field, or None reaching the attention's arithmetic).
  auto null_refused = [&](const char* key, bool nullable) {
    if (j.contains(key) && j.at(key).is_null() && !nullable)
      fail(file, key, "null: " + cls + " refuses it (give an integer or leave the key out)");
  };
  null_refused("num_key_value_heads", f.kv_nullable);
  null_refused("head_dim", f.head_dim_nullable);
  const bool kv_null = j.contains("num_key_value_heads") && j.at("num_key_value_heads").is_null();
  c.kv_heads = r.optional(
      "num_key_value_heads", f.kv_absent > 0 && !kv_null ? f.kv_absent : c.heads, 1,
      f.kv_absent > 0 && !kv_null ? cls + "'s default" : cls + ": num_attention_heads" + (kv_null ? " (null)" : ""));
  if (c.heads % c.kv_heads != 0)
    fail(file, "num_key_value_heads",
         std::to_string(c.kv_heads) + (present(j, "num_key_value_heads") ? "" : " (" + cls + "'s default)") +
             " does not divide num_attention_heads " + std::to_string(c.heads));
  if (f.hidden_divisible && c.hidden % c.heads != 0)
    fail(file, "hidden_size",
         std::to_string(c.hidden) + " is not a multiple of num_attention_heads " + std::to_string(c.heads) + " (" +
             cls + " refuses it, head_dim or not)");
  const bool explicit_head_dim = present(j, "head_dim");
  if (!explicit_head_dim && f.head_dim_absent < 0 && c.hidden / c.heads == 0)
    fail(file, "hidden_size", "smaller than num_attention_heads and no head_dim is given");
  c.head_dim =
      r.optional("head_dim", f.head_dim_absent > 0 ? f.head_dim_absent : c.hidden / c.heads, 1,
                 f.head_dim_absent > 0 ? cls + "'s default"
                                       : cls + ": hidden_size // num_attention_heads" +
                                             (c.hidden % c.heads ? " (rounded down, as transformers does)" : ""));
}

// transformers 5's validate_rope (RotaryEmbeddingConfigMixin) refuses a fully rotated head of odd width above 4
// (rotate_half splits the head in two). It reads the config's head_dim attribute: the key where given, else what
// the class sets (Llama, Mistral: hidden_size // num_attention_heads, a null too; Qwen3, Gemma, Gemma2: their
// defaults); the classes that set none (Qwen2, Phi-3, OLMo, StarCoder2, Mixtral, Qwen2-MoE) are not checked. The
// rotated width is head_dim x partial_rotary_factor (the key, or rope_parameters' / rope_scaling's), rounded down.
void check_rope_width(const ConfigReader& r) {
  const json& j = r.j;
  const ModelConfig& c = r.c;
  const std::string& cls = r.cls;
  const bool explicit_head_dim = present(j, "head_dim");
  const std::string t = c.model_type;
  const bool computed = t == "llama" || t == "mistral";
  const bool held = explicit_head_dim || computed || (!j.contains("head_dim") && r.f.head_dim_absent > 0);
  double prf = 1.0;
  for (const char* block : {"rope_scaling", "rope_parameters"})
    if (j.contains(block) && j.at(block).is_object() && j.at(block).contains("partial_rotary_factor") &&
        j.at(block).at("partial_rotary_factor").is_number())
      prf = j.at(block).at("partial_rotary_factor").get<double>();
  if (j.contains("partial_rotary_factor") && j.at("partial_rotary_factor").is_number())
    prf = j.at("partial_rotary_factor").get<double>();
  const std::int64_t h = c.head_dim;
  if (held && h > 4 && h % 2 != 0 && static_cast<std::int64_t>(static_cast<double>(h) * prf) == h)
    fail(r.file, "head_dim",
         std::to_string(h) + (explicit_head_dim ? "" : " (" + cls + ": hidden_size // num_attention_heads)") +
             " is odd: RoPE rotates pairs, and " + cls +
             " (transformers 5's validate_rope) refuses a fully "
             "rotated head of odd width above 4");
}

// max_position_embeddings and tie_word_embeddings.
void read_embeddings(ConfigReader& r) {
  const json& j = r.j;
  ModelConfig& c = r.c;
  c.max_position =
      present(j, "max_position_embeddings") ? int_field(j, r.file, "max_position_embeddings", 1, r.f.cls) : 0;
  r.read.emplace_back("max_position_embeddings");
  // (A planted fault reads every family's default as untied: Gemma ties by default.)
  c.tie_embeddings = r.flag("tie_word_embeddings", r.f.tie_default && !ledger_fault("ledger_tie_default_ignored"));
  if (!present(j, "tie_word_embeddings"))
    r.note_default("tie_word_embeddings", r.f.tie_default ? "true" : "false", r.cls + "'s default");
}

// The biases of the attention's and the MLP's linears: which key says so, if any, is the family's.
void read_biases(ConfigReader& r) {
  ModelConfig& c = r.c;
  switch (r.f.bias) {
    case Family::attention_bias_all:
      c.qkv_bias = c.o_bias = r.flag("attention_bias", false);
      break;
    case Family::qkv_always:
      c.qkv_bias = true;
      break;  // Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
    case Family::qkv_key:
      c.qkv_bias = r.flag("qkv_bias", true);
      break;
    case Family::use_bias_all:  // Starcoder2: every Linear of the layer (attention and MLP), not lm_head
      c.qkv_bias = c.o_bias = c.mlp_bias = r.flag("use_bias", true);
      if (!r.j.contains("use_bias")) r.note_default("use_bias", "true", r.cls + "'s default");
      break;
    case Family::none:
      break;
  }
  if (c.model_type == "qwen2" && ledger_fault("ledger_qwen2_no_bias")) c.qkv_bias = false;
  // (A planted fault takes mlp_bias as true where a config leaves it out, as Llama's do.)
  if (r.f.mlp_bias_read) c.mlp_bias = r.flag("mlp_bias", ledger_fault("ledger_mlp_bias_default_true"));
  c.qk_norm = r.f.qk_norm;
}

// The MLP's activation (hidden_act, Gemma2's hidden_activation): one transformers knows, without parameters.
void read_activation(ConfigReader& r) {
  const json& j = r.j;
  const std::string& file = r.file;
  ModelConfig& c = r.c;
  const char* act = r.f.act_key;
  r.read.emplace_back(act);
  c.hidden_act = r.f.act_default;
  if (j.contains(act)) {
    if (!j.at(act).is_string()) fail(file, act, "expected a string, got " + shown(j.at(act)));
    c.hidden_act = j.at(act).get<std::string>();
    static const std::vector<std::string> acts = {"gelu",
                                                  "gelu_10",
                                                  "gelu_accurate",
                                                  "gelu_fast",
                                                  "gelu_new",
                                                  "gelu_python",
                                                  "gelu_python_tanh",
                                                  "gelu_pytorch_tanh",
                                                  "hardswish",
                                                  "laplace",
                                                  "leaky_relu",
                                                  "linear",
                                                  "mish",
                                                  "quick_gelu",
                                                  "relu",
                                                  "relu2",
                                                  "relu6",
                                                  "sigmoid",
                                                  "silu",
                                                  "sqrtsoftplus",
                                                  "swish",
                                                  "tanh"};
    if (c.hidden_act == "prelu" || c.hidden_act == "xielu")
      fail(file, act, "'" + c.hidden_act + "' has learnable parameters the ledger does not count");
    if (std::find(acts.begin(), acts.end(), c.hidden_act) == acts.end())
      fail(file, act, "'" + c.hidden_act + "' is not an activation transformers knows (ACT2FN)");
  } else {
    r.note_default(act, c.hidden_act, r.cls + "'s default");
  }
}

// The block's shape: fused or separate projections, the MLP's kind and the norms, all the family's.
void set_block_shape(ConfigReader& r) {
  ModelConfig& c = r.c;
  c.fused_qkv = r.f.fused_qkv;
  c.mlp = r.f.mlp;
  switch (r.f.norm) {
    case Family::rms:
      break;
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
}

// nn.Embedding(vocab_size, hidden_size, padding_idx=pad_token_id) asserts -vocab_size <= padding_idx < vocab_size.
void check_pad_token(ConfigReader& r) {
  const json& j = r.j;
  const std::string& file = r.file;
  const std::string& cls = r.cls;
  const ModelConfig& c = r.c;
  r.read.emplace_back("pad_token_id");
  if (present(j, "pad_token_id")) {
    const json& v = j.at("pad_token_id");
    if (v.is_boolean() || !v.is_number_integer())
      fail(file, "pad_token_id", "expected an integer or null, got " + shown(v) + " (" + cls + " accepts int only)");
    if (v.is_number_unsigned() ? v.get<std::uint64_t>() >= static_cast<std::uint64_t>(c.vocab)
                               : (v.get<std::int64_t>() >= c.vocab || v.get<std::int64_t>() < -c.vocab))
      fail(file, "pad_token_id",
           shown(v) + " is outside the embedding's " + std::to_string(c.vocab) +
               " rows (nn.Embedding's padding_idx must lie in [-vocab_size, vocab_size))");
  } else if (!j.contains("pad_token_id") && r.f.pad_default >= c.vocab) {
    fail(file, "pad_token_id",
         "absent: " + cls + "'s default " + std::to_string(r.f.pad_default) + " is outside the embedding's " +
             std::to_string(c.vocab) + " rows (nn.Embedding's padding_idx; give pad_token_id)");
  }
}

// The family's harmless keys that its strict config class types (kTypedKeys).
void check_typed_keys(const ConfigReader& r) {
  for (const auto& t : kTypedKeys) {
    if (r.c.model_type != t.type || !r.j.contains(t.key)) continue;
    const json& v = r.j.at(t.key);
    if (t.kind == TypedKey::integer && (v.is_boolean() || !v.is_number_integer()))
      fail(r.file, t.key, "expected an integer, got " + shown(v) + " (" + r.cls + " accepts int only)");
    if (t.kind == TypedKey::float_or_null && !v.is_null() && !v.is_number_float())
      fail(r.file, t.key, "expected a float or null, got " + shown(v) + " (" + r.cls + " accepts float or None only)");
  }
}

// Mixture of experts.
void read_experts(ConfigReader& r) {
  const json& j = r.j;
  const std::string& file = r.file;
  const std::string& cls = r.cls;
  ModelConfig& c = r.c;
  if (r.f.moe == Family::mixtral) {
    c.experts = r.optional("num_local_experts", 8, 1, cls + "'s default");
    c.experts_per_token = r.optional("num_experts_per_tok", 2, 1, cls + "'s default");
    c.moe_intermediate = c.intermediate;  // MixtralExperts: every expert is intermediate_size wide
    c.sparse_layer.assign(static_cast<std::size_t>(c.layers), true);
    c.peft_all_linear_experts = true;
  } else if (r.f.moe == Family::qwen2_moe) {
    c.experts = r.optional("num_experts", 60, 0, cls + "'s default");
    c.experts_per_token = r.optional("num_experts_per_tok", 4, 1, cls + "'s default");
    c.moe_intermediate = r.optional("moe_intermediate_size", 1408, 1, cls + "'s default");
    c.shared_expert_intermediate = r.optional("shared_expert_intermediate_size", 5632, 0, cls + "'s default");
    const std::int64_t step = r.optional("decoder_sparse_step", 1, 1, cls + "'s default");
    r.read.emplace_back("mlp_only_layers");
    std::vector<std::int64_t> mlp_only;
    if (present(j, "mlp_only_layers")) {
      if (!j.at("mlp_only_layers").is_array()) fail(file, "mlp_only_layers", "expected a list of layer indices");
      for (const auto& v : j.at("mlp_only_layers")) {
        if (v.is_boolean() || !v.is_number_integer())
          fail(file, "mlp_only_layers", "expected integers, got " + shown(v));
        mlp_only.push_back(v.get<std::int64_t>());
      }
    }
    c.sparse_layer.resize(static_cast<std::size_t>(c.layers));
    for (std::int64_t i = 0; i < c.layers; ++i)  // Qwen2MoeDecoderLayer
      c.sparse_layer[i] =
          std::find(mlp_only.begin(), mlp_only.end(), i) == mlp_only.end() && c.experts > 0 && (i + 1) % step == 0;
    if (c.experts == 0) c.experts_per_token = 0;
  }
  if (c.experts > 0 && c.experts_per_token > c.experts)
    fail(file, "num_experts_per_tok",
         std::to_string(c.experts_per_token) + " is more than the " + std::to_string(c.experts) + " experts");
}

// Every count below is an int64 and every byte count a double: a model past 2^50 parameters (a thousand times
// the largest published) is a typo, not a config.
void check_size(const ModelConfig& c, const std::string& file) {
  const double rough =
      2.0 * c.vocab * c.hidden +
      static_cast<double>(c.layers) *
          (2.0 * c.hidden * (c.heads + c.kv_heads) * c.head_dim + 3.0 * c.hidden * c.intermediate +
           3.0 * c.hidden * c.moe_intermediate * c.experts + 3.0 * c.hidden * c.shared_expert_intermediate);
  if (!(rough < std::ldexp(1.0, 50)))
    fail(file, "num_hidden_layers",
         "implausibly large model: about " + std::to_string(static_cast<long long>(rough / 1e12)) +
             " trillion parameters (more than 2^50)");
}

// The keys not read: harmless ones by name, the biases this family's modeling code never builds, the rest unknown.
void list_ignored_keys(ConfigReader& r) {
  ModelConfig& c = r.c;
  const std::string& cls = r.cls;
  auto in = [](const auto& list, const std::string& k) {
    return std::find(std::begin(list), std::end(list), k) != std::end(list);
  };
  for (auto it = r.j.begin(); it != r.j.end(); ++it) {
    const std::string& k = it.key();
    if (in(r.read, k)) continue;
    if (!k.empty() && k[0] == '_' && k != "_name_or_path" && k != "_attn_implementation" && k != "_commit_hash")
      c.ignored.push_back({k, true, "a comment (leading underscore)"});
    else if (const auto fk = std::find_if(std::begin(kFamilyHarmless), std::end(kFamilyHarmless),
                                          [&](const FamilyKey& x) { return c.model_type == x.type && k == x.key; });
             fk != std::end(kFamilyHarmless))
      c.ignored.push_back({k, true, fk->why});
    else if (in(kHarmless, k))
      c.ignored.push_back({k, true, "read by transformers for nothing counted here"});
    else if (in(kWindow, k))
      c.ignored.push_back({k, true,
                           "sliding-window attention: bounds the KV cache of such layers at the window; "
                           "the per-token figure holds up to it"});
    else if (k == "attention_bias" || k == "mlp_bias" || k == "qkv_bias" || k == "use_bias")
      c.ignored.push_back(
          {k, true, cls + " has no such field: " + c.model_type + "'s modeling code builds no such bias"});
    else
      c.ignored.push_back(
          {k, false,
           "unknown to the ledger (transformers keeps it as an attribute " + cls + "'s modeling code does not read)"});
  }
}

}  // namespace

ModelConfig parse_model_config(const std::string& text, const std::string& file) {
  const json j = parse_text(text, file);
  if (!j.is_object()) fail(file, "(json)", "expected an object (a Hugging Face config.json)");
  const Family& f = family_of(j, file);
  ModelConfig c;
  c.file = file;
  c.model_type = f.type;
  ConfigReader r{j, file, f, f.cls, c};
  refuse_other_models(j, file);
  read_dimensions(r);
  read_heads(r);
  check_rope_width(r);
  read_embeddings(r);
  read_biases(r);
  read_activation(r);
  set_block_shape(r);
  check_pad_token(r);
  check_typed_keys(r);
  read_experts(r);
  check_size(c, file);
  list_ignored_keys(r);
  return c;
}

ModelConfig load_model_config(const fs::path& file) { return parse_model_config(read_file(file), file.string()); }

}  // namespace claimcheck::ref
