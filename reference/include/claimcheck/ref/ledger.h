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
// A key of the config the ledger does not compute with, and why that is harmless (or that nothing is known of it).
struct IgnoredKey {
  std::string key;
  bool known = false;  // true: transformers' class of this family reads it for nothing that is counted here
  std::string why;
};
// A key absent from the config (or null) whose value comes from transformers' config class of the family.
struct DefaultedKey {
  std::string key, value, why;
};

// The families read, as transformers 5.x builds them (configuration_<family>.py and modeling_<family>.py):
// llama, mistral, qwen2, qwen3, gemma, gemma2, phi3, olmo, starcoder2 (dense); mixtral, qwen2_moe (mixture of
// experts).

struct ModelConfig {
  std::string file;
  std::string model_type;  // one of the families above
  std::int64_t vocab = 0, hidden = 0, intermediate = 0, layers = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0;
  bool tie_embeddings = false;
  bool qkv_bias = false;  // qwen2: always; qwen2_moe: qkv_bias; llama/qwen3/gemma/gemma2/olmo: attention_bias;
                          // starcoder2: use_bias
  bool o_bias = false;    // llama/qwen3/gemma/gemma2/olmo: attention_bias also covers o_proj; starcoder2: use_bias
  bool mlp_bias = false;  // llama: mlp_bias; starcoder2: use_bias (the other families' MLPs have no bias)
  bool qk_norm = false;   // qwen3: RMSNorm over each head's q and k
  // The block's shape. Attention: q/k/v_proj, or phi3's one qkv_proj (hidden -> (heads + 2 kv_heads) x head_dim).
  // MLP: gated (gate_proj, up_proj, down_proj), gated and fused (phi3: gate_up_proj hidden -> 2 x intermediate,
  // down_proj), or plain (starcoder2: c_fc, activation, c_proj).
  bool fused_qkv = false;
  enum class Mlp { gated, gated_fused, plain };
  Mlp mlp = Mlp::gated;
  // The norms of a layer by name (gemma2 has four: input, post_attention, pre_feedforward, post_feedforward), and
  // the parameters of a norm per hidden unit: RMSNorm 1 (weight), LayerNorm 2 (weight and bias; starcoder2),
  // OLMo's LayerNorm 0 (no affine parameters). The final norm is of the same kind.
  std::vector<std::string> layer_norms = {"input_layernorm", "post_attention_layernorm"};
  std::int64_t norm_params_per_unit = 1;
  std::string norm_kind = "an RMSNorm";  // for messages
  std::int64_t max_position = 0;
  std::string hidden_act;
  // Mixture of experts (experts == 0: dense). A sparse layer's MLP is a router (experts x hidden, no bias),
  // `experts` SwiGLU experts of width moe_intermediate and, where shared_expert_intermediate > 0, a shared expert
  // with its sigmoid gate (hidden -> 1). Qwen2-MoE's dense layers (mlp_only_layers, decoder_sparse_step) keep
  // the dense MLP of width `intermediate`.
  std::int64_t experts = 0, experts_per_token = 0, moe_intermediate = 0, shared_expert_intermediate = 0;
  std::vector<bool> sparse_layer;  // per layer: true where the MLP is the sparse block (empty when dense)
  std::int64_t sparse_layers() const;
  bool peft_all_linear_experts = false;  // mixtral: peft's "all-linear" also adapts the router and fused experts
  std::vector<DefaultedKey> defaults;
  std::vector<IgnoredKey> ignored;
};
// Reads and validates a Hugging Face decoder config. Throws SpecError naming the file and field.
ModelConfig load_model_config(const std::filesystem::path& file);
ModelConfig parse_model_config(const std::string& json_text, const std::string& file);

struct Linear {
  std::string
      name;  // q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj; qkv_proj, gate_up_proj; c_fc, c_proj
  std::int64_t in = 0, out = 0;
  bool bias = false;
  std::string block = "self_attn";  // the submodule of the layer holding it: self_attn or mlp
  std::int64_t params() const { return in * out + (bias ? out : 0); }
};
// The linears of a dense layer, attention first (a sparse layer's attention is the same; its MLP is in ParamCount's
// MoE terms).
std::vector<Linear> layer_linears(const ModelConfig& c);

struct ParamCount {
  std::int64_t embedding = 0, lm_head = 0;  // lm_head = 0 when tied
  std::int64_t attention_per_layer = 0, mlp_per_layer = 0, norms_per_layer = 0, final_norm = 0;
  std::int64_t layers = 0;
  // Mixture of experts: sparse_layers of the layers have the sparse block instead of the dense MLP.
  std::int64_t sparse_layers = 0, experts = 0, experts_per_token = 0;
  std::int64_t expert_params = 0, router_per_layer = 0,
               shared_expert_per_layer = 0;  // one expert; router; shared + its gate
  std::int64_t sparse_block() const { return router_per_layer + experts * expert_params + shared_expert_per_layer; }
  std::int64_t sparse_block_active() const {
    return router_per_layer + experts_per_token * expert_params + shared_expert_per_layer;
  }
  std::int64_t per_layer() const { return attention_per_layer + mlp_per_layer + norms_per_layer; }  // a dense layer
  std::int64_t total() const {
    return embedding + lm_head + layers * (attention_per_layer + norms_per_layer) +
           (layers - sparse_layers) * mlp_per_layer + sparse_layers * sparse_block() + final_norm;
  }
  // Parameters one token goes through: the top-k experts of each sparse layer (== total() for a dense model).
  std::int64_t active() const { return total() - sparse_layers * (sparse_block() - sparse_block_active()); }
  std::int64_t linear_total() const {
    return layers * attention_per_layer + (layers - sparse_layers) * mlp_per_layer + sparse_layers * sparse_block() +
           lm_head;
  }
};
ParamCount count_params(const ModelConfig& c);

// A GPT-2-style character model (chapter 3's tiny Transformer): learned token and position embeddings, pre-LN
// blocks (LayerNorm with weight and bias, fused qkv and output projection, two-layer MLP, every Linear with a bias),
// a final LayerNorm and an untied lm_head without bias. Throws SpecError naming `where` and the field on a
// non-positive size, d_model not divisible by n_head, or a count past 2^62.
struct GptShape {
  std::int64_t vocab = 0, d_model = 0, n_layer = 0, n_head = 0, d_ff = 0, context = 0;
};
GptShape parse_gpt_shape(const std::string& json_text, const std::string& where);
std::int64_t gpt_params(const GptShape& s);
// Its parameter tensors: token and position embeddings, 12 per block (two LayerNorms, qkv, output projection and the
// two MLP layers, each a weight and a bias), the final LayerNorm's two and lm_head's weight: what an optimizer steps.
std::int64_t gpt_parameter_tensors(const GptShape& s);

// LoRA as peft 0.21 places it (LoraConfig.target_modules): each adapted Linear or Embedding gets A (r x in) and
// B (out x r); a fused expert tensor (Mixtral under "all-linear") A (r*E x in) and B (out x r*E).
// Spellings: "all-linear" (every Linear of the layers, not lm_head); a list of module names, each matching a module
// whose full name ("model.layers.3.self_attn.q_proj") equals it or ends with "." + it ("q_proj",
// "self_attn.q_proj", "layers.0.self_attn.q_proj", "lm_head", "embed_tokens"); or one regular expression matched
// against the whole full name (peft's string form). A module selected twice counts once; a name matching nothing is
// skipped (and listed) while another matches, as peft does. Refused, naming the field: nothing matched, a module
// peft cannot adapt (norms, blocks, experts by name, Qwen2-MoE's router), "all-linear" inside a list.
struct LoraTargets {
  bool all_linear = false;
  std::vector<std::string> names;
  std::string regex;  // non-empty: peft's string form
};
// "all-linear"; a string with regex metacharacters (*+?()[]{}|^$\) is one regex; else comma-separated names.
LoraTargets parse_lora_targets(const std::string& spelling);
struct LoraCount {
  std::int64_t trainable = 0;
  std::vector<std::string> modules;    // the selected modules' names within a layer (or top level), once each
  std::int64_t adapted_modules = 0;    // over all layers
  std::vector<std::string> unmatched;  // names that matched nothing (peft skips them while another one matches)
};
LoraCount lora_count(const ModelConfig& c, int rank, const LoraTargets& targets);
std::vector<std::string> all_linear_targets();  // the seven projections of a Llama layer (the series' "all linear")
// A list of names, or {"all-linear"}.
LoraTargets lora_targets_of(const std::vector<std::string>& targets);
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
// its input, SwiGLU saving gate and up outputs and the product fed to down_proj. A plain MLP (starcoder2) saves
// c_fc's output and the activation's; gemma2's two extra norms save their inputs too.
struct SavedTensor {
  std::string name;
  std::int64_t elements_per_token = 0;
};
std::vector<SavedTensor> saved_per_layer(const ModelConfig& c);
// A sparse (mixture-of-experts) layer of `c`, as transformers' eager MoE blocks run it: the attention part as above;
// the router's logits and the softmax over them (experts per token), the top-k routing weights; for each of the k
// experts a token is routed to, the gathered copy of its input, gate and up outputs, their SwiGLU product and the
// expert's output scaled by its weight; a shared expert (Qwen2-MoE) saves its own SwiGLU tensors, its sigmoid gate
// and its output. Equals saved_per_layer(c) for a dense config.
std::vector<SavedTensor> saved_per_sparse_layer(const ModelConfig& c);
// What a plain PyTorch layer (transformers' eager modules: RMSNorm in fp32, GQA by repeat_interleave, SiLU as its own
// op, fused SDPA) keeps beyond saved_per_layer's minimal list, in BYTES per token (elements_per_token holds bytes):
// each norm's input widened to fp32 and its fp32 reciprocal RMS, k and v repeated to every query head, SDPA's fp32
// logsumexp per head, SiLU's output. A dense gated layer only (empty otherwise).
std::vector<SavedTensor> plain_layer_extra_bytes(const ModelConfig& c);
// What a LoRA run of that plain layer (the base and its norms frozen, adapters of rank r on `targets` of its
// projections) keeps beyond it, in BYTES per token (negative: kept no longer): each norm's bf16 output, the factor
// its weight's gradient needs, goes (the weight is frozen); each adapter keeps its bf16 x A^T (its B's input; its own
// input x is the projection's, already kept). A dense gated layer only (empty otherwise).
std::vector<SavedTensor> lora_layer_saved_change_bytes(const ModelConfig& c, std::int64_t r, std::int64_t targets);
struct ActivationOptions {
  int bytes_per_element = 2;           // bf16 activations
  bool eager_attention_probs = false;  // keep the T x T softmax per head (eager attention)
  bool silu_output_saved = false;      // eager SiLU keeps its output as well as its input
};
// Bytes for B sequences of T tokens over all layers (dense and sparse ones each with their own tensors), without and
// with checkpointing (layer inputs only).
double activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens, const ActivationOptions& o);
double checkpointed_activation_bytes(const ModelConfig& c, std::int64_t batch, std::int64_t tokens,
                                     int bytes_per_element);

// ---- inference ---------------------------------------------------------------
std::int64_t kv_cache_bytes_per_token(const ModelConfig& c, int bytes_per_element = 2);

struct HardwareSpec {
  std::string file, name;
  double memory_bytes = 0;
  double bandwidth = 0;                                    // bytes/s
  double peak_flops = 0;                                   // dense bf16 FLOP/s
  double ridge() const { return peak_flops / bandwidth; }  // FLOP/byte
};
HardwareSpec load_hardware_spec(const std::filesystem::path& file);
HardwareSpec parse_hardware_spec(const std::string& json_text, const std::string& file);

// Decode: every weight a token goes through is read once per token (the series' model: all parameters, the
// embedding table included; for a mixture of experts the active ones: attention, router, top-k and shared
// experts); optionally the KV cache at a context length.
struct DecodeModel {
  bool whole_embedding_table = true;  // false: the lookup reads one row
  std::int64_t context_tokens = 0;    // KV cache read per token
  double weight_bytes_per_param = 2;
};
double decode_bytes_per_token(const ModelConfig& c, const DecodeModel& m);
double prefill_flops(std::int64_t params, std::int64_t tokens);  // 2 x params x tokens
// A forward pass's FLOPs as MFU counts them (a training step: 3 x these): 2 per Linear weight per token, plus causal
// attention's QK^T and PV, 2 FLOP per multiply-add over the T (T + 1) / 2 query-key pairs of each sequence and each
// query head's dimensions, in every layer. For a dense decoder's first `layers` layers (its embedding and head are
// not a block's), and for chapter 3's GPT (its layers and the lm_head).
double decoder_forward_flops(const ModelConfig& c, std::int64_t layers, std::int64_t batch, std::int64_t tokens);
double gpt_forward_flops(const GptShape& s, std::int64_t batch, std::int64_t tokens);

// ---- units --------------------------------------------------------------------
// The series' GB and MB are decimal (10^9 and 10^6 bytes), as are transformers' and the GPU makers' figures.
double gigabytes(double bytes);
double megabytes(double bytes);

}  // namespace claimcheck::ref
