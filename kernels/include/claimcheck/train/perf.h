// Chapter 6 in LibTorch, in plain types for the checks: a Llama-shaped block's training step timed per phase
// (backward vs forward, model FLOPs utilisation), the same step profiled through PyTorch's RecordFunction
// observers and its time put into the series' buckets, and a KV cache allocated for a config.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "claimcheck/train/tiny.h"

namespace claimcheck::train {

// The decoder layers of `config` (fp32, no embedding, no head) on a random [batch, tokens, hidden] input that
// requires grad; the loss is a fixed random projection of the output. Best of `repeats` interleaved runs of each
// phase. FLOPs are counted from the built modules: 2 per weight per token in every Linear, plus causal
// attention's QK^T and PV (2 x 2 x heads x head_dim x T(T+1)/2 per sequence and layer).
struct BlockStepCapture;
struct BlockStepTiming {
  double forward_s = 0, backward_s = 0;
  double backward_over_forward = 0;  // the median over the repeats of each one's backward / forward (one step's two
                                     // phases back to back: a slow spell moves both, and the median drops a burst)
  double step_s = 0;                 // forward + backward + AdamW step, timed as one
  double step_threads_busy = 0;  // CPU: the process's CPU seconds over the wall seconds of the same step, the median
                                 // over the repeats (how many threads the step kept busy); 0 on CUDA
  double forward_flops = 0;      // the model's forward FLOPs (the backward's are twice: dX and dW)
  std::int64_t params = 0;       // in the layers' Linear weights
  std::int64_t step_peak_bytes = 0;  // the allocator's peak over one step: weights, gradients, AdamW state,
                                     // saved activations and temporaries (each touched at least once)
  int batch = 0, tokens = 0, layers = 0, threads = 0;
  std::int64_t hidden = 0, intermediate = 0;
  std::string device = "cpu", dtype = "float32";
  std::shared_ptr<const BlockStepCapture> capture;  // BlockStepOn::capture: what the last timed step computed
};
// A tensor of the timed step, fp32 on the host, under its Hugging Face name ("model.layers.0.self_attn.q_proj.weight";
// "input" for the block's input).
struct StepTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};
// What the last timed step computed, for a reference to be held against: the weights it ran with (before its AdamW
// update), its input and the projection its loss reads (loss = sum(output * proj)), the loss, and the gradients
// the step's backward left: one per weight that has one, and the input's ("input"), each under its tensor's name.
struct BlockStepCapture {
  std::vector<StepTensor> weights, grads;
  StepTensor input, proj;
  double loss = 0;
  // The last timed step's AdamW update: each weight's first and second moments before it (named as the weights), the
  // weights after it, the step count it ran as, and the optimizer's settings.
  std::vector<StepTensor> exp_avg, exp_avg_sq, updated;
  std::int64_t adam_step = 0;
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
};
// Where the step runs: the CPU in fp32 (the default), or the CUDA device (LibTorch CUDA) with bf16 weights, data
// and AdamW state, each phase timed with the queue drained around it. layers > 0 takes the config's first `layers`
// layers (a Llama-3-8B layer or two on a GPU). step_peak_bytes is the counting allocator's (the CPU's); 0 on CUDA.
// On the CPU, `threads` > 0 runs the step on that many intra-op threads (restored after), and `cpu_clock` times
// each phase by the process's CPU time, not the wall clock: a phase's cost in CPU seconds, which a neighbour that
// takes the core for a while does not inflate (with one thread, the work itself).
struct BlockStepOn {
  bool cuda = false;
  bool bf16 = false;
  int layers = 0;
  int threads = 0;
  bool cpu_clock = false;
  bool capture = false;  // keep the last timed step's weights, input, loss, gradients and AdamW update
                         // (BlockStepTiming::capture)
};
// fault (tests): "backward_recomputes" (each layer is recomputed in backward, as checkpointing does),
// "flops_per_token_only" (forward_flops counts one token, not the step's), "step_one_thread" (the CPU step on one
// intra-op thread, whatever `threads` says), "step_input_no_grad" (the input is handed over without requires_grad:
// the backward never computes the first layer's dX), "step_skips_update" (the timed step runs no AdamW update),
// "block_rope_interleaved" (the RoPE tables laid out as
// interleaved pairs while the layers rotate halves); any other fault is the decoder layer's (DecoderConfig::fault:
// "gqa_tiled", "rope_half_swapped", "rmsnorm_no_rsqrt", ...).
// Throws std::runtime_error (the reason) where on.cuda and LibTorch sees no CUDA device.
BlockStepTiming time_block_step(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                int repeats, const std::string& fault = "", const BlockStepOn& on = {});
// The forward FLOPs time_block_step counts for `config`'s layers at batch x tokens (the layers built, not run);
// the same faults.
double block_forward_flops(const std::filesystem::path& config, int batch, int tokens, const std::string& fault = "");

// Chapter 3's training step (the tiny character Transformer, AdamW), timed: best of `repeats`.
struct TinyStepTiming {
  double step_s = 0;
  double flops = 0;  // 6 x parameters x tokens + causal attention, counted from the built module
  std::int64_t params = 0;
  int batch = 0, tokens = 0;
  std::vector<double> losses;  // each step's loss, in order (the same batch every step, the warm-up's first)
  // The warm-up step's logits [batch][tokens][vocab] and the batch's token ids [batch][tokens + 1] (the inputs, then
  // the next token): what its loss was computed from, for the answer key to recompute it.
  std::vector<float> first_logits;
  std::vector<std::vector<std::int64_t>> ids;
  std::int64_t vocab = 0;
  // The last step's logits, the head's input [batch][tokens][width] and the head's weight gradient [vocab][width] as
  // its update read it (empty where the step ran no backward): for the answer key to recompute that gradient.
  std::vector<float> last_logits, last_hidden, last_head_grad;
  std::int64_t width = 0;
};
// fault "flops_per_token_only" (planted): the step's FLOPs counted for one token per sequence; "tiny_step_no_backward":
// the step timed without its backward; "tiny_step_targets_inputs": the loss taken against the inputs themselves;
// "tiny_step_no_zero_grad": no zero_grad between the steps.
// On chapter 3's model (TinyConfig's defaults) unless another shape is given.
TinyStepTiming time_tiny_step(std::uint64_t seed, int batch, int repeats, const std::string& fault = "",
                              const TinyConfig& shape = TinyConfig{});

// A profiled training step: every operator RecordFunction reports, its self time (its time
// minus its children's) put in one bucket by its name and its ancestors': "gemm" (mm, addmm, bmm, ...),
// "attention" (inside scaled_dot_product_attention and its backward), "copy_" (copy_, to, contiguous, clone),
// "other_ops" (every other operator), and "gaps": the time outside any top-level operator, timed as the intervals
// between them (launch overhead / idle: on a CPU, the C++ between operators).
struct ProfiledOp {
  std::vector<std::string> frames;  // the operator's ancestors' names, outermost first, then its own
  std::string bucket;               // where its self time went ("" where no bucket took it)
  double self_s = 0;                // summed over its calls at this place
  int calls = 0;
};
struct ProfileBuckets {
  std::map<std::string, double> seconds;                // by bucket
  double wall_s = 0;                                    // the step, timed around the profiled region
  int operators = 0;                                    // events recorded
  std::vector<std::pair<std::string, double>> top_ops;  // the largest self times, by operator name
  std::vector<ProfiledOp> ops;                          // every event, by its place in the call tree and its bucket
  std::string api;                                      // how the events were collected
};
// Chapter 3's step (the tiny character Transformer, batch x 128 tokens: forward, cross-entropy, backward, AdamW).
// fault (tests): "buckets_drop_copy" (the bucket map has no copy_ bucket: its time is lost),
// "buckets_gemm_forward_only" (backward's aten::mm is not a GEMM), "buckets_copy_in_other" (copies filed under
// other_ops).
ProfileBuckets profile_step(std::uint64_t seed, int batch, const std::string& fault = "");
const std::vector<std::string>& profile_bucket_names();  // gemm, attention, copy_, other_ops, gaps
// The bucket profile_step files an event of operator `op` under, inside a fused attention call (or its backward) or
// not: "" where no bucket takes it. fault: profile_step's, and "buckets_no_bmm" (batched products not GEMMs).
std::string profile_bucket_of(const std::string& op, bool in_attention, const std::string& fault = "");

// A bf16 KV cache for `tokens` tokens of `config`'s decoder (K and V per layer: [1, kv_heads, tokens, head_dim]),
// allocated through the counting allocator.
struct KvCacheMeasure {
  std::int64_t bytes = 0;  // the allocator's count for the whole cache
  int tokens = 0;
  std::int64_t layers = 0, kv_heads = 0, head_dim = 0;
  std::int64_t tensors = 0;
};
// fault (tests): "kv_full_heads" (one cached head per query head, as if there were no GQA).
KvCacheMeasure allocate_kv_cache(const std::filesystem::path& config, int tokens, const std::string& fault = "");

// Chapter 3's loss.item() on a GPU (LibTorch CUDA): a small MLP (width x width Linear layers, ReLU, AdamW, cross
// entropy on a fixed random batch) trained on the CUDA device, the loss read back to the host with .item() after
// every step, and after every `rare`-th step only. Per-step times: the median over `rounds` interleaved rounds of
// `steps` steps each (host clock, the queue drained before and after each round). Throws std::runtime_error with
// the reason where LibTorch sees no CUDA device (a CPU-only LibTorch, or no GPU).
struct ItemSyncTiming {
  double every_step_s = 0;  // per step, .item() after each step
  double rare_step_s = 0;   // per step, .item() after every rare-th step
  int steps = 0, rare = 0, rounds = 0, width = 0, layers = 0, batch = 0;
  std::string device;
  // The profiler's view (LibTorch's Kineto profiler, CUDA activity) of `rounds` more interleaved rounds of each: the
  // share of the span from the first GPU activity to the last in which no kernel, copy or memset ran, medians. -1
  // where the profiler recorded no GPU activity (no CUPTI); profiled_gpu_events counts what it recorded.
  double idle_every = -1, idle_rare = -1;
  long profiled_gpu_events = 0;
};
// fault (tests): "item_every_step" (the rare loop reads the loss after every step too).
ItemSyncTiming item_sync_timing(std::uint64_t seed, int steps, int rare, int rounds, const std::string& fault = "");
// Whether LibTorch sees a CUDA device; *why says why not.
bool torch_cuda_available(std::string* why);

}  // namespace claimcheck::train
