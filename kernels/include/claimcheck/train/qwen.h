// The Qwen2-architecture decoder built from config.json, LoRA, and their export for transformers and peft
// (chapter 5), behind plain types. Only kernels/train/*.cpp include <torch/torch.h>.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "claimcheck/train/chat.h"
#include "claimcheck/train/schedule.h"
#include "claimcheck/train/tiny.h"

namespace claimcheck::train {
// ---- Qwen2-architecture decoder from config.json, and LoRA (chapter 5) ----------------
struct LoraSpec {
  int r = 16;
  double alpha = 32;
  std::vector<std::string> targets;
};
struct QwenLoraMeasure {
  std::int64_t params = 0;     // base model, counted on the built module
  std::int64_t trainable = 0;  // requires_grad after LoRA
  std::int64_t total_after_lora = 0;
  std::int64_t state_bytes = 0;  // allocator: live bytes added by LoRA params, grads and AdamW state
  std::int64_t grad_bytes = 0, optimizer_bytes = 0, lora_param_bytes = 0;
  double build_seconds = 0, step_seconds = 0;
  // The model as drawn, before LoRA: the largest |gain - 1| of its norms, the standard deviation of its matrices
  // (the first 65,536 entries of each), the largest |bias|.
  double init_norm_max_dev = 0, init_matrix_std = 0, init_bias_max_abs = 0;
};
// Builds the decoder from config.json (read here, as Hugging Face's modeling code reads it) with random
// initialisation (no weights), wraps `targets` with LoRA, runs one AdamW step on a short random sequence, and
// measures. A planted `fault` (tests only): "qkv_bias_missing" builds Qwen2's q/k/v projections without bias.
QwenLoraMeasure qwen_lora_measure(const std::filesystem::path& config, const LoraSpec& lora, std::uint64_t seed,
                                  int seq_len, const std::string& fault = "");

struct LoraDeltaResult {
  double init_err = 0;     // max |LoRA(x) - base(x)| at initialisation (B = 0)
  double formula_err = 0;  // max |LoRA(x) - x (W + (alpha/r) B A)^T| after B is trained away from 0
  double merged_err = 0;   // max |merged(x) - LoRA(x)|
  double output_scale = 0;
};
LoraDeltaResult lora_delta(std::uint64_t seed, const std::string& fault);

// ---- the decoder and LoRA exported for transformers and peft (the answer key compares) ----------------
struct DecoderExport {
  std::int64_t params = 0, tensors = 0;
  double loss = 0;
};
// Builds the decoder from config.json (seeded random weights; norm weights and biases moved off 1 and 0), in "fp32"
// or "bf16", runs random ids [batch, seq] forward and the shifted cross-entropy backward, and writes
// dir/model.safetensors (the parameters under transformers' names) and dir/run.safetensors (input_ids, logits,
// loss, grad.<name>). fault (tests only): the decoder's planted faults (DecoderConfig::fault), "qkv_bias_missing",
// "tie_word_embeddings_ignored", "attention_bias_misread" (q, k, v and o biases where the config has none, or none).
// left_pad > 0: the last row's first left_pad tokens are padding, and run.safetensors also holds attention_mask and
// position_ids (as transformers' generate makes them for a left-padded batch); its loss skips the padding.
DecoderExport export_decoder_run(const std::filesystem::path& config, const std::string& dtype, std::uint64_t seed,
                                 int batch, int seq, const std::filesystem::path& dir, const std::string& fault = "",
                                 int left_pad = 0);

// Greedy decoding with the decoder's KV cache (Decoder::forward_cached), fp32: a random prompt of prompt_len tokens,
// prefilled in two calls (its last min(48, prompt_len / 2) tokens second; one call of one token), then `steps` tokens
// one at a time, each the argmax of the previous logits. Writes dir/model.safetensors (as export_decoder_run) and
// dir/run.safetensors: input_ids [1, prompt_len], generated [steps] (the tokens fed), logits [steps + 1, vocab] (after
// the prompt, then after each token fed), chunk_logits [chunk, vocab] (every position of the prompt's last call),
// cache_bytes_per_token [1] (the bytes the cache's tensors hold over the tokens in it, at the end). Planted faults:
// "kv_positions_restart", "kv_cache_not_appended", "kv_chunk_unmasked" (DecoderImpl::forward_cached).
struct GenerationExport {
  std::int64_t tokens = 0;
  double cache_bytes_per_token = 0;
};
GenerationExport export_decoder_generation(const std::filesystem::path& config, std::uint64_t seed, int prompt_len,
                                           int steps, const std::filesystem::path& dir, const std::string& fault = "");

// LoRA on the whole decoder, for peft's get_peft_model on transformers' model (the answer key compares): the decoder
// from config.json in fp32 (norm weights and biases off 1 and 0), every layer's `targets` wrapped with the project's
// LoRA (r, alpha); each B then moved off zero (N(0, 0.02), as if trained, so that the adapters change the output);
// random ids [batch, seq], the shifted cross-entropy, backward, one AdamW step (lr, weight_decay) on the adapters.
// Writes dir/model.safetensors (the base parameters under transformers' names), dir/lora.safetensors (<module>.lora_A
// and .lora_B, module as transformers names it, e.g. model.layers.0.self_attn.q_proj) and dir/run.safetensors
// (input_ids, logits, loss, grad.<module>.lora_A / _B, after.<module>.lora_A / _B, trainable: the count).
// fault (tests only): the decoder's and enable_lora's planted faults, "lora_skips_last_layer".
struct LoraModelExport {
  std::int64_t trainable = 0, adapted = 0;
};
LoraModelExport export_lora_model_run(const std::filesystem::path& config, const LoraSpec& lora, double lr,
                                      double weight_decay, std::uint64_t seed, int batch, int seq,
                                      const std::filesystem::path& dir, const std::string& fault = "");

// Chapter 5's six-line LoRA SFT as the project runs it, for transformers' Trainer with peft (the answer key runs the
// six lines on the same start): the decoder from config.json in fp32 (norm weights and biases off 1 and 0), every
// layer's `targets` wrapped with the project's LoRA (A as peft draws it, B zero); the conversations rendered with the
// project's ChatML template (encode_chat), padded on the right to the longest (<|im_end|>, label -100), `batch` of
// them per step in order, wrapping; `steps` AdamW steps (weight_decay) at lr decayed linearly to 0 over them, the
// gradients clipped to `clip`, as Trainer's defaults do. Writes dir/model.safetensors, dir/lora.safetensors (the
// adapters before step 0), dir/adapter (the trained adapter as peft saves one) and dir/run.safetensors: input_ids and
// labels [steps x batch, length] (the rows in the order trained; labels aligned with input_ids, as transformers
// takes them), losses [steps], after.<module>.lora_A / _B, and trained.logits (the first row after training).
// Planted faults (tests only): enable_lora's, the template's ("mask_label_0"), "adapter_saved_alpha_as_r",
// "lora_sft_no_clip", "lora_sft_b_frozen" (B never trained).
struct LoraSftExport {
  std::vector<double> losses;   // each step's, on its own rows
  double first_rows_after = 0;  // the first step's rows again, after the last step (no update)
  std::int64_t rows = 0, length = 0;
};
LoraSftExport export_lora_sft_run(const std::filesystem::path& config, const LoraSpec& lora,
                                  const std::vector<Conversation>& convs, int steps, int batch, double lr,
                                  double weight_decay, double clip, std::uint64_t seed,
                                  const std::filesystem::path& dir, const std::string& fault = "");

struct LoraCase {
  std::int64_t in = 256, out = 192;
  int r = 8;
  double alpha = 16;
  bool rslora = false;
  double lr = 1e-2, weight_decay = 1e-2;  // AdamW
};
// One LoRA linear (with bias) of the code under test, written to `file` (safetensors): x, the cotangent g, the
// base weight and bias, A, B at init and "trained", the outputs at init and after, the merged weight, A and B after
// one AdamW step on sum(y * g), and a fresh adapter's delta weight after one step from its own initialisation.
// fault (tests only): ProjImpl::enable_lora's planted faults.
void export_lora_run(const LoraCase& k, std::uint64_t seed, const std::filesystem::path& file,
                     const std::string& fault = "");

struct LossMaskResult {
  double loss = 0;  // the project's masked loss over its batch
  std::int64_t rows = 0, positions = 0, vocab = 0;
  std::vector<float> logits;    // [rows][positions][vocab]: the random logits the loss saw (row r is conversation r)
  std::vector<float> grad_max;  // [rows][positions]: max over the vocabulary of |d loss / d logit|
  std::vector<std::vector<std::int64_t>> tokens, labels;  // what the template produced, per conversation
};
// The project's template, batching (all conversations in one batch, padded to the longest, targets shifted) and
// loss on `convs` with random logits. Planted faults (tests only): "mask_label_0" (masked labels are 0),
// "template_last_answer_only", "no_default_system" (TemplateOptions::fault), "pad_targets_unshifted" (the padded
// rows' targets not shifted). context > 0: the batch cut as SFT's batches are (each row to at most context + 1
// tokens: context input positions, as sft_train batches them), not padded to the longest conversation.
LossMaskResult loss_mask(const std::vector<Conversation>& convs, std::uint64_t seed, const std::string& fault,
                         int context = 0);

struct SftResult {
  std::vector<double> losses;
  double stop_rate = 0;                                // share of greedy generations that emit <|im_end|>
  std::vector<std::string> samples;                    // a few generations, decoded
  std::vector<std::vector<std::int64_t>> generations;  // every generation's new tokens, as generated
  std::vector<double> evaluated;  // after training: the mean answer loss of each set of SftOptions::evaluate
  std::string init_sha256;        // the parameters as drawn, before step 0
  double seconds = 0;
};
// The model sft_train trains by default: chapter 3's character model on the chat vocabulary (258 tokens), a context
// of 256, 2 layers.
TinyConfig sft_model_config();
struct SftOptions {
  TinyConfig model = sft_model_config();  // its sizes (its vocabulary is the chat tokenizer's whatever this says)
  int steps = 20, batch = 8;
  double lr = 3e-3;
  bool eos_in_loss = true;
  std::uint64_t seed = 1;
  int max_new_tokens = 48;
  int generate = 0;  // how many held-out prompts to generate from (0: none)
  // Sets of conversations whose answer loss the trained model is asked for (one batch each, rendered and batched as
  // in training, no gradient).
  std::vector<std::vector<Conversation>> evaluate;
  // planted by tests: "frozen" (the optimizer's rate is 0: nothing learns), "mask_inputs" (the loss mask applied to
  // the inputs too: every token that is not an answer's reaches the model as <|im_end|>, so it never sees a prompt),
  // "sft_no_clip" (the gradient never clipped), "sft_pad_learned" (padding's labels are the pad token, not -100),
  // "sft_batch_repeats" (every step trains on the first batch), "sft_large_init" (weights drawn with std 1, not 0.02),
  // "sft_seed_ignored" (the model drawn under seed 1 whatever the seed), "sft_extra_layer" (a block more than asked)
  std::string fault;
  // For the answer key's reference (reference/python/sft_reference.py): export_dir/model.safetensors (the parameters
  // before step 0) and export_dir/run.safetensors (each step's x.s and y.s, its loss and pre-clip gradient norm, and
  // the parameters after the last exported step: after.<name>). Empty: no export.
  std::filesystem::path export_dir;
  int export_steps = 5;  // the first steps exported (fp32 rounding grows over a loop: the later ones drift apart)
};
SftResult sft_train(const std::vector<Conversation>& train, const std::vector<Conversation>& held_out,
                    const SftOptions& o);

}  // namespace claimcheck::train
