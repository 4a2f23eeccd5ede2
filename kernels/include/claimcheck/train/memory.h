// Chapter 4 measured: training memory counted by the allocator and attributed to what holds it, on a
// Llama-shaped decoder built from a config.json (kernels/train/decoder.h), in plain types for the checks.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace claimcheck::train {

// The categories of the timeline, in the order reports stack them.
const std::vector<std::string>& memory_categories();  // parameters, gradients, optimizer_state, master_weights,
                                                      // autocast_copies, saved_activations, temporaries

// Live bytes after a phase, by category (allocations made before the model was built are not counted).
struct MemorySnapshot {
  std::string phase;  // load, forward, backward, step
  std::map<std::string, std::int64_t> bytes;
  std::int64_t live = 0;  // the sum
  std::int64_t peak = 0;  // the highest live total during the phase
};

// One training step. mode "autocast": fp32 parameters, bf16 autocast around the forward, torch::optim::AdamW
// (PyTorch as people run it). mode "bf16_master": the series' table: bf16 parameters and gradients, an optimizer
// that keeps an fp32 master copy and fp32 Adam m, v. Roles: the bytes of each piece of state after the step.
struct StepMemory {
  std::string mode;
  std::int64_t trainable = 0;
  std::vector<MemorySnapshot> timeline;
  std::vector<std::pair<std::string, std::int64_t>> roles;
  double seconds = 0;
  // The step's loss, the tokens it ran on and the logits it computed ([tokens][vocab], fp32): the loss must be the
  // mean next-token NLL of those logits.
  double loss = 0;
  std::vector<std::int64_t> ids;
  std::vector<float> logits;
  std::int64_t vocab = 0;
};
// fault (tests): "alloc_drops_optimizer_state" (the attribution forgets Adam's state), "loss_labels_unshifted" (each
// position's target its own token), "autocast_off" (the autocast mode's forward without autocast).
StepMemory measure_training_step(const std::filesystem::path& config, const std::string& mode, std::uint64_t seed,
                                 int tokens, const std::string& fault = "");

// The series-table optimizer alone (bf16 parameters, fp32 master, fp32 Adam m and v, the update applied in fp32):
// two bf16 parameters made from w0 (rounded; its first half a matrix of rows of 64, the rest a vector; the size a
// multiple of 128), then one step per entry of `grads` with that gradient (bf16, rounded). Returns the fp32 masters
// and the bf16 parameters' bits after the last step, in w0's order.
// fault (tests): "adamw_coupled_decay" (the decay added to the gradient, Adam with L2, instead of decoupled),
// "adamw_no_bias_correction" (m and v used without 1 - beta^t), "master_written_truncated" (the master written back
// to the bf16 weights with its low 16 bits dropped, not rounded), "master_beta2_099", "master_decay_vectors_only"
// (the decay on 1-D tensors only).
struct MasterAdamWRun {
  std::vector<float> master;
  std::vector<std::uint16_t> weights_bf16;
};
MasterAdamWRun master_adamw_steps(const std::vector<float>& w0, const std::vector<std::vector<float>>& grads,
                                  const std::string& fault = "");

// The dtypes seen during a step under CPU bf16 autocast: each named intermediate of layer 0 (matmul outputs,
// softmax, RMSNorm, residual stream), logits, loss, and the parameters and gradients after the step.
// fault (tests): "autocast_casts_params" (the model is converted to bf16 first).
std::map<std::string, std::string> autocast_dtypes(const std::filesystem::path& config, std::uint64_t seed,
                                                   const std::string& fault = "");

// Saved-activation bytes of the layers: (bytes the forward leaves live with autograd - without), per token and
// layer, through the embedding and every layer (no final norm, head or loss). precision "bf16": the model in bf16
// (the series' setting); "autocast": fp32 weights under bf16 autocast (the residual stream stays fp32).
struct ActivationMeasure {
  int tokens = 0;
  bool eager_attention = false;
  double bytes_per_token_layer = 0;  // (all layers - one layer) / (layers - 1): shared tensors drop out
  double shared_bytes = 0;           // what the layers share (RoPE's cos and sin), in bytes
  std::vector<std::pair<std::string, double>> segments;  // bytes per token saved by each segment of layer 0
  std::vector<float> output;  // what the layers computed (the no-grad pass through all of them), as fp32
};
// lora_r > 0: a LoRA run (the base frozen, adapters of rank lora_r and alpha 2 lora_r on the seven projections).
// fault (tests): "activations_batch_ignored" (bytes divided by one row's tokens, not batch x tokens), the attention's
// ("attention_not_fused", ...) and LoRA's ("lora_input_copied", ...).
ActivationMeasure saved_activations(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                    bool eager_attention, bool by_segment, const std::string& precision,
                                    const std::string& fault = "", int lora_r = 0);

// Gradient checkpointing (the project's own, kernels/train/decoder.cpp) against the plain model on the layers:
// saved bytes after the forward, step time (forward + backward, best of `repeats`), and the gradients.
// precision: fp32, bf16 (model in bf16) or autocast. repeats = 0: the memory only (no steps are timed).
struct CheckpointMeasure {
  double saved_plain = 0, saved_checkpointed = 0;  // bytes per token per layer (shared tensors excluded)
  double step_plain_s = 0, step_checkpointed_s = 0;
  double grad_max_abs_diff = 0, grad_scale = 0;
  bool grads_bitwise_equal = false;
  std::string precision;
};
// fault (tests): "ckpt_saves_layer", "ckpt_no_recompute", "ckpt_recompute_without_autocast",
// "activations_batch_ignored" (the saved bytes divided by one row's tokens).
CheckpointMeasure checkpointing(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                int repeats, const std::string& precision, const std::string& fault = "");

// A run under an allocator cap until PyTorch's out-of-memory error (or the end of one step).
// scenario "full": full fine-tune (autocast, AdamW) at `tokens`; "lora": frozen base, LoRA r = 16 on the seven
// projections, at `tokens`. Reports the phase the error came in and the timeline up to it.
struct OomRun {
  std::string scenario;
  std::int64_t cap = 0;
  bool oom = false;
  std::string phase;    // where the error was thrown: load, forward, backward, step ("" without one)
  std::string message;  // its first line
  std::int64_t requested = 0;
  std::int64_t live_at_oom = 0;          // the allocator's live bytes when the request was refused
  std::int64_t trainable = 0;            // elements the optimizer was given (0 where the load itself failed)
  std::vector<MemorySnapshot> timeline;  // completed phases, then the state at the error ("at OOM")
};
// Throws std::invalid_argument for a cap <= 0. fault (tests): "oom_cap_ignored", "oom_lora_base_trainable" (the lora
// scenario's base weights left trainable), "oom_step_unphased" (the step's allocations tagged as the backward's).
OomRun oom_run(const std::filesystem::path& config, const std::string& scenario, std::int64_t cap_bytes,
               std::uint64_t seed, int tokens, const std::string& fault = "");

}  // namespace claimcheck::train
