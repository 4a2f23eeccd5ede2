// The LibTorch training code under test of chapter 3 (and the seeds of chapter 6), behind plain types: the corpus,
// the tiny character Transformer, autograd and memory, bf16 autocast on the CPU, the shape guard and the loss's
// precision; the reproducibility runs of chapter 6. Only kernels/train/*.cpp include <torch/torch.h>.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "claimcheck/train/schedule.h"

namespace claimcheck::train {

// ---- data ---------------------------------------------------------------------
struct Corpus {
  std::string source;                    // where it came from
  std::string sha256;                    // the data revision
  std::vector<std::uint8_t> train, val;  // ASCII (V = 128), 95 % / 5 %
  std::int64_t files = 0;
};
// The English text of the Debian `fortunes` package (every plain-text file under dir, sorted), folded
// to 7-bit ASCII. Throws with the path when there is none.
// Planted fault "split_96": the training text the first 96 %, a point of the held-out text trained on.
Corpus load_fortunes_corpus(const std::filesystem::path& dir, const std::string& fault = "");

// ---- the tiny character Transformer --------------------------------------------
struct TinyConfig {
  int vocab = 128, d_model = 128, n_layer = 4, n_head = 4, d_ff = 512, context = 128;
  double init_std = 0.02;   // GPT-2's
  bool zero_biases = true;  // GPT-2's (false: LibTorch's default draw, a planted fault's)
  bool draw_norms = false;  // LayerNorm's gains 1 and shifts 0 (true: drawn as the matrices are, a planted fault's)
};
// The model chapter 3's runs train: the series' character Transformer (TinyConfig's defaults). Planted fault
// "tiny_byte_vocab": a vocabulary of 256 (bytes), where the series' is 128 (7-bit ASCII).
TinyConfig tiny_model_config(const std::string& fault = "");
// Counted on the built module. Planted fault "extra_layer": one block more than the config says.
std::int64_t tiny_param_count(const TinyConfig& c, const std::string& fault = "");

struct TrainOptions {
  ScheduleConfig schedule;
  int batch = 16;
  long steps = 100;
  double weight_decay = 0.1, clip = 1.0;
  std::uint64_t seed = 1;
  int eval_every = 25, eval_batches = 8;
  // planted by tests: "schedule_off_by_one", "no_zero_grad", "frozen" (lr = 0), "windows_half_stride" (the training
  // windows start every context / 2), "loss_label_smoothing" (0.1), "clip_per_parameter" (each tensor to the bound),
  // "extra_layer" (one block more than the config says), "seed_model_constant" (the model drawn under seed 0)
  std::string fault;
  std::string checkpoint;  // where to save the trained model (torch::save), "" for none
  // The first export_steps steps of this very loop, written to export_dir for the answer key's PyTorch reference
  // (reference/python/char_reference.py): model.safetensors (the parameters before step 0, under the module's
  // names) and run.safetensors: per step s < export_steps the batch as the loader stacked it (x.s, y.s, int64
  // [batch, context]); at step 0 the logits and every parameter's gradient (grad.<name>, before clipping); per step
  // the loss, the total gradient norm clip_grad_norm_ returned, the learning rate applied (loss, grad_norm, lr,
  // float64 [export_steps]); and the parameters after the last of them (after.<name>). Empty: nothing written.
  std::filesystem::path export_dir;
  int export_steps = 0;
};
struct TrainResult {
  std::vector<double> losses;  // per step
  std::vector<long> eval_steps;
  std::vector<double> eval_ppl;  // exp(mean validation loss), at eval_steps (step 0 = before training)
  double seconds = 0, tokens_per_s = 0;
  std::vector<double> lrs;                // per step: the learning rate read from the optimizer before its step
  std::string weights_sha256;             // of every parameter's bytes after training
  std::string init_weights_sha256;        // the same before the first step (the seed's draw)
  std::string first_batches_sha256;       // of the first four batches' input windows (the seed's data order)
  bool deterministic_algorithms = false;  // LibTorch's deterministic algorithms on (not warn-only) as training starts
};
struct FirstLoss {
  double loss = 0;                  // nats, on `batch` training windows, before any step
  std::vector<float> init_weights;  // every matrix of the fresh model as drawn (embeddings, projections; no norms)
  std::vector<std::size_t> init_weight_sizes;  // each matrix's elements, in init_weights' order
  std::vector<float> init_biases;              // every bias of its Linear layers as initialised (not the norms')
  std::vector<float> init_norm_gains, init_norm_shifts;  // every LayerNorm's weight and bias as initialised
};
// Planted faults "large_init": weights drawn with std 1, not the config's; "biases_drawn": biases not zeroed;
// "norms_drawn": the LayerNorms' gains and shifts drawn N(0, init_std) as the matrices are; "head_zero_init": the
// output head's matrix zeroed (the first loss is then ln V exactly).
FirstLoss tiny_first_loss(const TinyConfig& c, const Corpus& data, std::uint64_t seed, int batch,
                          const std::string& fault = "");
TrainResult train_tiny(const TinyConfig& c, const Corpus& data, const TrainOptions& o);

// ---- autograd and memory (chapter 3) ------------------------------------------
struct GradAccumResult {
  double two_backwards_err = 0;  // max |grad after two backwards - 2 x grad after one|
  double microbatch_err = 0;     // max |sum of k micro-batch grads of loss/k - one big batch's grad|
  double grad_scale = 0;         // max |grad| (for scale)
};
GradAccumResult grad_accumulation(std::uint64_t seed, int micro_batches, const std::string& fault);

struct RetainedMemory {
  std::vector<double> with_grad_bytes, no_grad_bytes;  // live bytes after each evaluated batch
};
// fault "no_grad_everywhere": the evaluation loop runs under no_grad in both passes (the bug never shows).
RetainedMemory evaluation_memory(std::uint64_t seed, int batches, const std::string& fault = "");
// The project's own evaluation (the perplexity train_tiny reports, on a small model and a generated text): the
// counting allocator's peak over one evaluation as the training loop calls it, and inside a caller's NoGradGuard
// (the control: what an evaluation that builds no graph peaks at). fault "eval_no_grad_missing": the evaluation
// without its own guard.
struct EvalPeaks {
  double as_called = 0, under_outer_guard = 0;  // bytes above the live bytes before
};
EvalPeaks evaluation_peaks(std::uint64_t seed, const std::string& fault = "");

struct Bf16Timing {
  double fp32_s = 0, bf16_autocast_s = 0;
  std::string dtype_inside_autocast;
  // The process's CPU seconds over the wall seconds of each timed loop, the larger: the threads the matmuls kept busy.
  double cpu_over_wall = 0;
  // The inputs (row-major n x n, fp32) and what the last timed matmul of each side computed (widened to fp32).
  int n = 0;
  std::vector<float> a, b, fp32_out, bf16_out;
};
// `threads` > 0: LibTorch's intra-op threads for both timings (restored after), 0: as they are.
// fault "autocast_off": the autocast region never engages (the guard is set to false); "onednn_off": oneDNN is
// switched off inside it, so the bf16 matmul runs ATen's emulating loops even where the CPU has bf16 instructions;
// "autocast_threads_ignored": the threads asked for are not set (LibTorch's own count runs both);
// "autocast_matmul_transposed" / "fp32_matmul_transposed": that side multiplies by b's transpose.
Bf16Timing cpu_bf16_autocast(std::uint64_t seed, int size, int repeats, const std::string& fault = "", int threads = 0);

// The project's residual add (same_shape_add, what TinyGPT's blocks use) fed the series' example, ones(3) + ones(3, 1):
// whether its shape assertion stopped it, and the shape it returned when it did not. fault "skip_shape_assertion":
// the add without its assertion.
struct ShapeGuardResult {
  bool caught = false;
  std::vector<long> shape;
};
ShapeGuardResult shape_guard_demo(const std::string& fault = "");
// The guarded add on each pair of shapes (ones of those shapes): whether it stopped each. fault "skip_shape_assertion"
// (no guard), "shape_guard_dims_only" (the ranks compared, not the shapes).
std::vector<bool> shape_guard_cases(const std::vector<std::pair<std::vector<long>, std::vector<long>>>& pairs,
                                    const std::string& fault = "");

struct LossPrecision {
  double fp32_err = 0, bf16_err = 0, project_err = 0;  // |loss - fp64 loss| for fp32 logits, bf16 logits,
                                                       // and the project's loss helper on bf16 logits
};
LossPrecision loss_precision(std::uint64_t seed, const std::string& fault);

// ---- reproducibility (chapter 6) ----------------------------------------------------
// A short seeded run of the tiny model (deterministic algorithms, fixed threads): losses and weight hash.
// fault (tests only): "seed_ignored" drops the seed it was given (the options' default seed trains).
TrainResult seeded_run(const Corpus& data, std::uint64_t seed, long steps, const std::string& fault = "");

}  // namespace claimcheck::train
