// The one place that knows LibTorch 1.13 (Debian) from 2.x (pip torch on the GPU host).
// Included only by sources that use LibTorch (reference/src/torch, kernels/torch).
#pragma once
#include <torch/torch.h>
#include <torch/version.h>
#include <ATen/autocast_mode.h>

namespace claimcheck::compat {

// optimizer.zero_grad(set_to_none = true): 2.x has the flag (and defaults to it); 1.13 has neither.
inline void zero_grad_set_to_none(torch::optim::Optimizer& opt) {
#if TORCH_VERSION_MAJOR >= 2
  opt.zero_grad(true);
#else
  for (auto& group : opt.param_groups())
    for (auto& p : group.params()) p.mutable_grad().reset();
#endif
}

// CPU autocast to bf16 on/off.
inline void set_cpu_autocast(bool on) {
#if TORCH_VERSION_MAJOR >= 2 && TORCH_VERSION_MINOR >= 4
  at::autocast::set_autocast_enabled(at::kCPU, on);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
#else
  at::autocast::set_cpu_enabled(on);
  at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
#endif
  if (!on) at::autocast::clear_cache();
}

// Causal scaled-dot-product attention.
#if TORCH_VERSION_MAJOR >= 2
inline constexpr const char* kSdpaName = "at::scaled_dot_product_attention";
#else
inline constexpr const char* kSdpaName = "at::_scaled_dot_product_attention";
#endif
inline at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
#else
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, 0.0, false, /*is_causal=*/true));
#endif
}

}  // namespace claimcheck::compat
