// The optimizer the series' 16 bytes describe, as the field runs it: LibTorch's torch::optim::AdamW (the same
// algorithm as Python's torch.optim.AdamW), on fp32 weights. The answer key's side of the comparison with the
// code under test's bf16-weights / fp32-master optimizer (kernels/train/memory.cpp).
#pragma once
#include <vector>

namespace claimcheck::ref {

struct AdamWSettings {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;
};
// fp32 weights w0, one torch::optim::AdamW step per gradient in `grads` (each the size of w0): the weights after.
// Throws where LibTorch is not built in.
std::vector<float> torch_adamw_steps(const std::vector<float>& w0, const std::vector<std::vector<float>>& grads,
                                     const AdamWSettings& s);

}  // namespace claimcheck::ref
