// The memory and latency ledger of a decoder-only Transformer (reference, analytic).
//
// Everything here is arithmetic on a Hugging Face `config.json` and a hardware spec;
// no figure of the series is written in this code. Plain types only: this header
// is included by checks and by the CLI, and must stay light.
#pragma once
#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace claimcheck::ref {

// "<file>: field '<field>': <what>" — bad configs, hardware specs, formats.
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- model config -------------------------------------------------------------
struct ModelConfig {
  std::string file;
  std::string model_type;  // llama | mistral | qwen2 | qwen3
  std::int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool tie_embeddings = false;
  bool qkv_bias = false;  // qwen2: always; llama/mistral: attention_bias
  bool o_bias = false;    // llama: attention_bias also covers o_proj
  bool mlp_bias = false;
  bool qk_norm = false;   // qwen3: RMSNorm over each head's q and k
  std::int64_t max_position = 0;
};
// Reads and validates a Hugging Face decoder config. Throws SpecError naming the file and field.
ModelConfig load_model_config(const std::filesystem::path& file);
ModelConfig parse_model_config(const std::string& json_text, const std::string& file);

struct Linear {
  std::string name;  // q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj
  std::int64_t in = 0, out = 0;
  bool bias = false;
  std::int64_t params() const { return in * out + (bias ? out : 0); }
};
std::vector<Linear> layer_linears(const ModelConfig& c);

struct ParamCount {
  std::int64_t embedding = 0, lm_head = 0;  // lm_head = 0 when tied
  std::int64_t attention_per_layer = 0, mlp_per_layer = 0, norms_per_layer = 0, final_norm = 0;
  std::int64_t layers = 0;
  std::int64_t per_layer() const { return attention_per_layer + mlp_per_layer + norms_per_layer; }
  std::int64_t total() const { return embedding + lm_head + layers * per_layer() + final_norm; }
  std::int64_t linear_total() const { return layers * (attention_per_layer + mlp_per_layer) + lm_head; }
};
ParamCount count_params(const ModelConfig& c);

// LoRA: each targeted linear gets A (r x in) and B (out x r).
std::vector<std::string> all_linear_targets();
std::int64_t lora_trainable(const ModelConfig& c, int rank, const std::vector<std::string>& targets);

// ---- training state -----------------------------------------------------------
std::int64_t dtype_bytes(const std::string& dtype);  // fp32 4, bf16 2, fp16 2, fp64 8, int8 1; throws on others

struct StateTerm {
  std::string role, dtype;
};
// Mixed precision with AdamW: bf16 weight copy, bf16 gradient, fp32 master weight, fp32 m and v.
std::vector<StateTerm> mixed_precision_adamw_state();
std::int64_t bytes_per_param(const std::vector<StateTerm>& terms);
// The same, less the bf16 weight copy: what a LoRA adapter's parameter costs when the
// adapter is kept in fp32 and cast on the fly.
std::vector<StateTerm> lora_adapter_state();

// ---- quantisation -------------------------------------------------------------
struct QuantFormat {
  std::string name;
  int bits = 4;
  std::int64_t block_size = 0;  // 0: no per-block scale
  int scale_bytes = 0;          // bytes per block scale (fp32 absmax: 4)
  bool double_quant = false;    // scales quantised to 8 bit, one fp32 scale per dq_block_size scales
  std::int64_t dq_block_size = 256;
  std::vector<std::string> keep_bf16;  // modules left in bf16: "embed_tokens", "lm_head"
  double bits_per_param() const;       // including scales
};
QuantFormat parse_quant_format(const std::string& json_text, const std::string& where);
QuantFormat load_quant_format(const std::filesystem::path& file);
// Bytes of the base model's weights in this format (unquantised modules in bf16, norms in bf16).
double quantized_weight_bytes(const ModelConfig& c, const QuantFormat& q);

// ---- activations --------------------------------------------------------------
// Tensors a Llama-style block saves for backward, per token, in elements. Assumptions:
// FlashAttention-style attention (no T x T probabilities kept), no dropout, RMSNorm saving
// its input, SwiGLU saving gate and up outputs and the product fed to down_proj.
struct SavedTensor {
  std::string name;
  std::int64_t elements_per_token = 0;
};
std::vector<SavedTensor> saved_per_layer(const ModelConfig& c);
struct ActivationOptions {
  int bytes_per_element = 2;           // bf16 activations
  bool eager_attention_probs = false;  // keep the T x T softmax per head (eager attention)
  bool silu_output_saved = false;      // eager SiLU keeps its output as well as its input
};
// Bytes for B sequences of T tokens over all layers, without and with checkpointing (layer inputs only).
double activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, const ActivationOptions& o);
double checkpointed_activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, int bytes_per_element);

// ---- inference ---------------------------------------------------------------
std::int64_t kv_cache_bytes_per_token(const ModelConfig& c, int bytes_per_element = 2);

struct HardwareSpec {
  std::string file, name;
  double memory_bytes = 0;
  double bandwidth = 0;   // bytes/s
  double peak_flops = 0;  // dense bf16 FLOP/s
  double ridge() const { return peak_flops / bandwidth; }  // FLOP/byte
};
HardwareSpec load_hardware_spec(const std::filesystem::path& file);

// Decode: every weight is read once per token (the series' model: all parameters, the
// embedding table included); optionally the KV cache at a context length.
struct DecodeModel {
  bool whole_embedding_table = true;  // false: the lookup reads one row
  std::int64_t context_tokens = 0;    // KV cache read per token
  double weight_bytes_per_param = 2;
};
double decode_bytes_per_token(const ModelConfig& c, const DecodeModel& m);
double prefill_flops(std::int64_t params, std::int64_t tokens);  // 2 x params x tokens

}  // namespace claimcheck::ref
