// LibTorch's bf16 decode arithmetic behind plain types: the competitor of the CPU decode kernels.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <torch/version.h>

#include <cstring>
#include <stdexcept>

#include "claimcheck/ref/gemv.h"

namespace claimcheck::ref {
namespace {

at::Tensor wrap(const std::uint16_t* w, int N, int K) {
  return at::from_blob(const_cast<std::uint16_t*>(w), {N, K}, at::TensorOptions().dtype(at::kBFloat16));
}
// [B, K] bf16 @ W^T: what nn.Linear (no bias) runs on a bf16 model's activations.
at::Tensor mm_wt(const at::Tensor& x, const at::Tensor& wt) { return at::matmul(x, wt); }

}  // namespace

std::string torch_gemv_api() { return std::string("at::matmul(bf16 [B,K], W^T) (LibTorch ") + TORCH_VERSION + ")"; }

void torch_matmul_bf16(const std::uint16_t* W, int N, int K, const float* X, int B, float* Y) {
  c10::InferenceMode guard;
  const at::Tensor wt = wrap(W, N, K).t();
  const at::Tensor x = at::from_blob(const_cast<float*>(X), {B, K}, at::kFloat).to(at::kBFloat16);
  const at::Tensor y = mm_wt(x, wt).to(at::kFloat).contiguous();
  std::memcpy(Y, y.data_ptr<float>(), sizeof(float) * B * N);
}

struct TorchDecodeChain::Impl {
  std::vector<at::Tensor> wt;  // W^T views, layers x 7
  int layers = 0, hidden = 0, kv = 0, ffn = 0, hd = 0;
};

TorchDecodeChain::TorchDecodeChain(std::vector<Bf16Mat> mats, int head_dim) : impl_(new Impl) {
  if (mats.empty() || mats.size() % 7 != 0) throw std::invalid_argument("TorchDecodeChain: layers x 7 matrices");
  auto& m = *impl_;
  m.layers = static_cast<int>(mats.size() / 7);
  m.hidden = mats[0].N;
  m.kv = mats[1].N;
  m.ffn = mats[4].N;
  m.hd = head_dim < m.kv ? head_dim : m.kv;
  if (m.hidden % m.kv || m.kv % m.hd) throw std::invalid_argument("TorchDecodeChain: kv_dim must divide hidden");
  for (const auto& b : mats) m.wt.push_back(wrap(b.w, b.N, b.K).t());
}
TorchDecodeChain::~TorchDecodeChain() = default;
int TorchDecodeChain::hidden() const { return impl_->hidden; }

void TorchDecodeChain::step(const float* x, float* out) {
  c10::InferenceMode guard;
  const auto& m = *impl_;
  const int group = m.hidden / m.kv;
  at::Tensor h = at::from_blob(const_cast<float*>(x), {1, m.hidden}, at::kFloat).to(at::kBFloat16);
  for (int l = 0; l < m.layers; ++l) {
    const at::Tensor* w = &m.wt[static_cast<std::size_t>(l) * 7];
    at::Tensor q = mm_wt(h, w[0]);
    at::Tensor k = mm_wt(h, w[1]);
    at::Tensor v = mm_wt(h, w[2]);
    // One token of context: each query head's attention output is its kv head's v.
    at::Tensor a = v.view({1, m.kv / m.hd, 1, m.hd}).expand({1, m.kv / m.hd, group, m.hd}).reshape({1, m.hidden});
    h = h + mm_wt(a, w[3]);
    at::Tensor g = mm_wt(h, w[4]);
    at::Tensor u = mm_wt(h, w[5]);
    h = h + mm_wt(at::silu(g) * u, w[6]);
  }
  const at::Tensor o = h.to(at::kFloat).contiguous();
  std::memcpy(out, o.data_ptr<float>(), sizeof(float) * m.hidden);
}

}  // namespace claimcheck::ref
