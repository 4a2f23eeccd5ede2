// torch::optim::AdamW on fp32 weights (reference/include/claimcheck/ref/optim.h).
#include <stdexcept>

#include <torch/torch.h>

#include "claimcheck/ref/optim.h"

namespace claimcheck::ref {

std::vector<float> torch_adamw_steps(const std::vector<float>& w0, const std::vector<std::vector<float>>& grads,
                                     const AdamWSettings& s) {
  const auto n = static_cast<std::int64_t>(w0.size());
  auto w = torch::tensor(w0, torch::kFloat).set_requires_grad(true);
  torch::optim::AdamW opt(
      {w}, torch::optim::AdamWOptions(s.lr).betas({s.beta1, s.beta2}).eps(s.eps).weight_decay(s.weight_decay));
  for (const auto& g : grads) {
    if (static_cast<std::int64_t>(g.size()) != n) throw std::invalid_argument("torch_adamw_steps: a gradient's size");
    w.mutable_grad() = torch::tensor(g, torch::kFloat);
    opt.step();
  }
  const auto out = w.detach().contiguous();
  return {out.data_ptr<float>(), out.data_ptr<float>() + n};
}

}  // namespace claimcheck::ref
