// LibTorch's own read: a sum over a large fp32 tensor, the yardstick of the bandwidth probe.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include "claimcheck/base/timing.h"
#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/roofline.h"

namespace claimcheck::ref {

struct TorchRead::Impl {
  torch::Tensor x;
};
TorchRead::TorchRead(std::size_t bytes)
    : impl_(new Impl{torch::ones({static_cast<std::int64_t>(bytes / sizeof(float))}, torch::kFloat32)}) {}
TorchRead::~TorchRead() = default;
double TorchRead::bytes_per_s(int threads, int passes) const {
  const torch::Tensor& x = impl_->x;
  torch_set_threads(threads);
  std::vector<double> rates;
  for (int p = 0; p < std::max(1, passes) + 1; ++p) {  // the first pass warms up
    const auto t0 = std::chrono::steady_clock::now();
    const float s = x.sum().item<float>();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (p > 0 && s > 0) rates.push_back(static_cast<double>(x.numel()) * sizeof(float) / secs);
  }
  if (rates.empty()) return 0;
  return claimcheck::base::median(std::move(rates));
}

double torch_cuda_read_bandwidth(std::size_t bytes, int passes) {
  if (!at::hasCUDA()) throw std::runtime_error("LibTorch " TORCH_VERSION " sees no CUDA device");
  const auto x = torch::ones({static_cast<std::int64_t>(bytes / sizeof(float))},
                             torch::TensorOptions().dtype(torch::kFloat32).device(torch::kCUDA));
  std::vector<double> rates;
  for (int p = 0; p < std::max(1, passes) + 1; ++p) {  // the first pass warms up
    const auto t0 = std::chrono::steady_clock::now();
    torch::Tensor s;
    for (int i = 0; i < 10; ++i) s = x.sum();
    const float v = s.item<float>();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 10;
    if (p > 0 && v > 0) rates.push_back(static_cast<double>(x.numel()) * sizeof(float) / secs);
  }
  if (rates.empty()) return 0;
  return claimcheck::base::median(std::move(rates));
}

double torch_matmul_fp32_seconds(int M, int N, int K, int threads, int repeats) {
  const int before = torch_get_threads();
  torch_set_threads(threads);
  torch::NoGradGuard no_grad;
  const auto a = torch::randn({M, K}), b = torch::randn({K, N});
  auto c = torch::mm(a, b);  // warm-up
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  torch_set_threads(before);
  return best;
}

}  // namespace claimcheck::ref
