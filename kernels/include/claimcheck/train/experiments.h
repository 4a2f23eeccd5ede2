// The LibTorch training code under test (chapters 3, 5, 6), behind plain types so that checks stay light:
// only kernels/train/*.cpp include <torch/torch.h>.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "claimcheck/train/chat.h"
#include "claimcheck/train/schedule.h"

namespace claimcheck::train {

// ---- data ---------------------------------------------------------------------
struct Corpus {
  std::string source;                  // where it came from
  std::string sha256;                  // the data revision
  std::vector<std::uint8_t> train, val;  // ASCII (V = 128), 95 % / 5 %
  std::int64_t files = 0;
};
// The English text of the Debian `fortunes` package (every plain-text file under dir, sorted), folded
// to 7-bit ASCII. Throws with the path when there is none.
Corpus load_fortunes_corpus(const std::filesystem::path& dir);

// ---- the tiny character Transformer --------------------------------------------
struct TinyConfig {
  int vocab = 128, d_model = 128, n_layer = 4, n_head = 4, d_ff = 512, context = 128;
  double init_std = 0.02;  // GPT-2's
};
// Counted on the built module. Planted fault "extra_layer": one block more than the config says.
std::int64_t tiny_param_count(const TinyConfig& c, const std::string& fault = "");

struct TrainOptions {
  ScheduleConfig schedule;
  int batch = 16;
  long steps = 100;
  double weight_decay = 0.1, clip = 1.0;
  std::uint64_t seed = 1;
  int eval_every = 25, eval_batches = 8;
  std::string fault;  // planted by tests: "schedule_off_by_one", "no_zero_grad", "frozen" (lr = 0)
  std::string checkpoint;  // where to save the trained model (torch::save), "" for none
};
struct TrainResult {
  std::vector<double> losses;           // per step
  std::vector<long> eval_steps;
  std::vector<double> eval_ppl;         // exp(mean validation loss), at eval_steps (step 0 = before training)
  double seconds = 0, tokens_per_s = 0;
  std::vector<double> lrs;              // per step: the learning rate read from the optimizer before its step
  std::string weights_sha256;           // of every parameter's bytes after training
};
double tiny_first_loss(const TinyConfig& c, const Corpus& data, std::uint64_t seed, int batch);
TrainResult train_tiny(const TinyConfig& c, const Corpus& data, const TrainOptions& o);

// ---- autograd and memory (chapter 3) ------------------------------------------
struct GradAccumResult {
  double two_backwards_err = 0;   // max |grad after two backwards - 2 x grad after one|
  double microbatch_err = 0;      // max |sum of k micro-batch grads of loss/k - one big batch's grad|
  double grad_scale = 0;          // max |grad| (for scale)
};
GradAccumResult grad_accumulation(std::uint64_t seed, int micro_batches, const std::string& fault);

struct RetainedMemory {
  std::vector<double> with_grad_bytes, no_grad_bytes;  // live bytes after each evaluated batch
};
// fault "no_grad_everywhere": the evaluation loop runs under no_grad in both passes (the bug never shows).
RetainedMemory evaluation_memory(std::uint64_t seed, int batches, const std::string& fault = "");

struct Bf16Timing {
  double fp32_s = 0, bf16_autocast_s = 0;
  std::string dtype_inside_autocast;
};
// `threads` > 0: LibTorch's intra-op threads for both timings (restored after), 0: as they are.
// fault "autocast_off": the autocast region never engages (the guard is set to false); "onednn_off": oneDNN is
// switched off inside it, so the bf16 matmul runs ATen's emulating loops even where the CPU has bf16 instructions.
Bf16Timing cpu_bf16_autocast(std::uint64_t seed, int size, int repeats, const std::string& fault = "", int threads = 0);

// The project's residual add (same_shape_add, what TinyGPT's blocks use) fed the series' example, ones(3) + ones(3, 1):
// whether its shape assertion stopped it, and the shape it returned when it did not. fault "skip_shape_assertion":
// the add without its assertion.
struct ShapeGuardResult {
  bool caught = false;
  std::vector<long> shape;
};
ShapeGuardResult shape_guard_demo(const std::string& fault = "");

struct LossPrecision {
  double fp32_err = 0, bf16_err = 0, project_err = 0;  // |loss - fp64 loss| for fp32 logits, bf16 logits,
                                                       // and the project's loss helper on bf16 logits
};
LossPrecision loss_precision(std::uint64_t seed, const std::string& fault);

// ---- counting allocator ------------------------------------------------------------
// Installs (once) a CPU allocator that counts live and peak bytes of every LibTorch CPU tensor.
void install_counting_allocator();
std::int64_t live_bytes();
std::int64_t peak_bytes();
void reset_peak();
// Chapter 4's timeline: each allocation remembers the phase tag current when it was made; a cap > 0 makes a
// request that would cross it throw PyTorch's out-of-memory error (c10::OutOfMemoryError); 0 lifts it.
struct LiveAllocation {
  const void* ptr;
  std::int64_t bytes;
  int phase;
};
void set_allocation_phase(int phase);
int allocation_phase();
void set_allocation_cap(std::int64_t bytes);
std::vector<LiveAllocation> live_allocations();
// The live allocations (and the request) at the moment the cap was last crossed.
std::vector<LiveAllocation> allocations_at_last_oom(std::int64_t* requested);

// ---- Qwen2-architecture decoder from config.json, and LoRA (chapter 5) ----------------
struct LoraSpec {
  int r = 16;
  double alpha = 32;
  std::vector<std::string> targets;
};
struct QwenLoraMeasure {
  std::int64_t params = 0;           // base model, counted on the built module
  std::int64_t trainable = 0;        // requires_grad after LoRA
  std::int64_t total_after_lora = 0;
  std::int64_t state_bytes = 0;      // allocator: live bytes added by LoRA params, grads and AdamW state
  std::int64_t grad_bytes = 0, optimizer_bytes = 0, lora_param_bytes = 0;
  double build_seconds = 0, step_seconds = 0;
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
DecoderExport export_decoder_run(const std::filesystem::path& config, const std::string& dtype, std::uint64_t seed,
                                 int batch, int seq, const std::filesystem::path& dir, const std::string& fault = "");

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
void export_lora_run(const LoraCase& k, std::uint64_t seed, const std::filesystem::path& file, const std::string& fault = "");

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
// rows' targets not shifted).
LossMaskResult loss_mask(const std::vector<Conversation>& convs, std::uint64_t seed, const std::string& fault);

struct SftResult {
  std::vector<double> losses;
  double stop_rate = 0;                // share of greedy generations that emit <|im_end|>
  std::vector<std::string> samples;    // a few generations, decoded
  double seconds = 0;
};
struct SftOptions {
  int steps = 20, batch = 8;
  double lr = 3e-3;
  bool eos_in_loss = true;
  std::uint64_t seed = 1;
  int max_new_tokens = 48;
  int generate = 0;  // how many held-out prompts to generate from (0: none)
  std::string fault;  // planted by tests: "frozen" (the optimizer's rate is 0: nothing learns)
};
SftResult sft_train(const std::vector<Conversation>& train, const std::vector<Conversation>& held_out,
                    const SftOptions& o);

// ---- reproducibility (chapter 6) ----------------------------------------------------
// A short seeded run of the tiny model (deterministic algorithms, fixed threads): losses and weight hash.
// fault (tests only): "seed_ignored" drops the seed it was given (the options' default seed trains).
TrainResult seeded_run(const Corpus& data, std::uint64_t seed, long steps, const std::string& fault = "");

}  // namespace claimcheck::train
