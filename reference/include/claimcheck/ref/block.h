// The answer key's Llama decoder layers, for holding a timed training step against (chapter 6's backward / forward
// and MFU): written here from the definitions (RMSNorm, rotate-half RoPE, grouped-query causal attention by
// softmax, SwiGLU), in fp64, with LibTorch's autograd for the gradients (reference/src/torch/block_torch.cpp). It
// shares no code with the decoder under test (kernels/train/decoder.h): the weights are handed over by name.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace claimcheck::ref {

// A decoder layer's shape and constants from a Hugging Face config (llama, mistral, qwen2: the families whose layer
// is the one above).
struct BlockSpec {
  std::string file, model_type;
  std::int64_t layers = 0, hidden = 0, intermediate = 0, heads = 0, kv_heads = 0, head_dim = 0;
  bool qkv_bias = false, o_bias = false, mlp_bias = false;
  double rms_eps = 1e-6, rope_theta = 10000.0;
};
// Reads the config as load_model_config does, then rms_norm_eps and rope_theta (transformers' defaults 1e-6 and
// 10000; transformers 5's rope_parameters.rope_theta too). Throws SpecError naming the file and field for another
// family, a qk-norm, a fused projection or a rope_scaling other than the default (the reference has no other).
BlockSpec load_block_spec(const std::filesystem::path& file);

// A tensor handed over by name (Hugging Face's: "model.layers.0.self_attn.q_proj.weight"; "input"), fp32, row-major.
struct TensorRef {
  std::string name;
  std::vector<std::int64_t> shape;
  const float* values = nullptr;
};
// A training step's loss and gradients against the reference's, on the same weights and input.
struct BlockStepComparison {
  double reference_loss = 0;
  // |loss - reference| over the sum of |output x proj| (the scale of the sum's rounding).
  double loss_error = 0;
  // The worst over the weights and the input of max |g - g_ref| / max |g_ref|: a gradient missing, of another
  // shape or not finite reads the largest double (as a loss that is not finite does), and worst_grad says which and
  // why.
  double grad_error = 0;
  std::string worst_grad;
  int grads_compared = 0;
};
// The first spec.layers layers on `weights` (each layer's q/k/v/o_proj, gate/up/down_proj, input_layernorm and
// post_attention_layernorm, with biases where the spec has them; a weight missing or of the wrong shape throws
// std::invalid_argument naming it), input [B, T, hidden], loss = sum(output x proj), in fp64: its loss and every
// gradient, against `loss` and `grads` (one per weight and "input"). Throws std::runtime_error without LibTorch.
BlockStepComparison compare_block_step_fp64(const BlockSpec& spec, const std::vector<TensorRef>& weights,
                                            const TensorRef& input, const TensorRef& proj, double loss,
                                            const std::vector<TensorRef>& grads);

// A training step's AdamW update (torch.optim.AdamW's algorithm: decoupled weight decay, bias-corrected moments)
// recomputed in fp64 from each weight before it, its gradient and its moments before it, against the weights after:
// the largest error of the update (after - before) over the largest |update| of the reference, the worst tensor's.
struct AdamWSettingsAt {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weight_decay = 0;
  long long step = 0;  // the step count the update runs as (1 for the first)
};
struct AdamWUpdateComparison {
  double update_error = 0;
  // The update's departure from the reference along the weights themselves (the least-squares slope of the error on
  // w, over every element) in units of lr x weight_decay: 0 where the decay is as stated, 1 where it is left out, -1
  // where it is doubled. Rounding, which does not follow w's sign, averages out of it; 0 where lr x wd is 0.
  double decay_error = 0;
  int tensors = 0;
  std::string worst;  // the tensor the error is from
};
// weights, grads, exp_avg, exp_avg_sq and updated are matched by name (a weight without a gradient is skipped; a
// missing moment or update, or a shape apart, throws std::invalid_argument naming the tensor).
AdamWUpdateComparison compare_adamw_update_fp64(const std::vector<TensorRef>& weights,
                                                const std::vector<TensorRef>& grads,
                                                const std::vector<TensorRef>& exp_avg,
                                                const std::vector<TensorRef>& exp_avg_sq,
                                                const std::vector<TensorRef>& updated, const AdamWSettingsAt& s);

}  // namespace claimcheck::ref
