// The one place that knows LibTorch versions apart. The project builds against PyTorch 2.4 and later
// (the pip wheel that the user's Python imports: CMake finds it through torch.utils.cmake_prefix_path).
// Included only by sources that use LibTorch (kernels/train, reference/src/torch). It needs ATen only.
#pragma once
#include <string>

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/version.h>

static_assert(TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4),
              "claimcheck needs LibTorch (PyTorch) 2.4 or later");

namespace claimcheck::compat {

inline constexpr bool kAtLeast(int major, int minor) {
  return TORCH_VERSION_MAJOR > major || (TORCH_VERSION_MAJOR == major && TORCH_VERSION_MINOR >= minor);
}

// optimizer.zero_grad(set_to_none = true). (A template, so that this header needs ATen only, not <torch/torch.h>.)
template <typename Optimizer>
void zero_grad_set_to_none(Optimizer& opt) {
  opt.zero_grad(true);
}

// CPU autocast to bf16 on/off (the device-generic API, 2.4+).
inline void set_cpu_autocast(bool on) {
  at::autocast::set_autocast_enabled(at::kCPU, on);
  at::autocast::set_autocast_dtype(at::kCPU, at::kBFloat16);
  if (!on) at::autocast::clear_cache();
}

// Causal scaled-dot-product attention, the library's fused entry point.
inline constexpr const char* kSdpaName = "at::scaled_dot_product_attention";
inline at::Tensor causal_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  return at::scaled_dot_product_attention(q, k, v, {}, 0.0, /*is_causal=*/true);
}

// Which kernel scaled_dot_product_attention picks for these inputs (ATen's own choice function):
// "math", "flash", "efficient", "cudnn", "overrideable" or "error".
inline std::string sdpa_backend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
#if TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 5
  const auto b = at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true, std::nullopt, /*enable_gqa=*/false);
#else
  const auto b = at::_fused_sdp_choice(q, k, v, {}, 0.0, /*is_causal=*/true, c10::nullopt);
#endif
  switch (b) {
    case 0:
      return "math";
    case 1:
      return "flash";
    case 2:
      return "efficient";
    case 3:
      return "cudnn";
    case 4:
      return "overrideable";
    default:
      return "error";
  }
}

}  // namespace claimcheck::compat
