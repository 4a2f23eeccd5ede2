// LibTorch's attention and broadcasting, behind plain types. Version differences live in base's torch_compat.h.
#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <stdexcept>

#include <ATen/Parallel.h>

#include "claimcheck/base/torch_compat.h"

#include "claimcheck/ref/attention.h"

namespace claimcheck::ref {
namespace {

template <typename T>
std::vector<T> run(const T* q, const T* k, const T* v, const AttnShape& s) {
  const auto dtype = std::is_same_v<T, float> ? at::kFloat : at::kDouble;
  const std::vector<int64_t> shape{s.B, s.H, s.T, s.D};
  auto opts = at::TensorOptions().dtype(dtype);
  at::Tensor Q = at::from_blob(const_cast<T*>(q), shape, opts);
  at::Tensor K = at::from_blob(const_cast<T*>(k), shape, opts);
  at::Tensor V = at::from_blob(const_cast<T*>(v), shape, opts);
  at::Tensor O = compat::causal_sdpa(Q, K, V).contiguous();
  return std::vector<T>(O.data_ptr<T>(), O.data_ptr<T>() + O.numel());
}

}  // namespace

bool torch_available() { return true; }

struct TorchSdpa::Impl {
  at::Tensor q, k, v, o;
};
TorchSdpa::TorchSdpa(const float* q, const float* k, const float* v, const AttnShape& s) : p_(new Impl) {
  const std::vector<int64_t> shape{s.B, s.H, s.T, s.D};
  p_->q = at::from_blob(const_cast<float*>(q), shape, at::kFloat);
  p_->k = at::from_blob(const_cast<float*>(k), shape, at::kFloat);
  p_->v = at::from_blob(const_cast<float*>(v), shape, at::kFloat);
}
TorchSdpa::~TorchSdpa() { delete p_; }
void TorchSdpa::run() { p_->o = compat::causal_sdpa(p_->q, p_->k, p_->v); }
const float* TorchSdpa::out() const { return p_->o.defined() ? p_->o.data_ptr<float>() : nullptr; }

double torch_matmul_bf16_seconds(int M, int N, int K, int repeats) {
  // The operands of the last shape asked kept for the next call of that shape: a benchmark calls this once per
  // iteration, and making two 4096^2 random tensors took longer than the three timed calls (0.47 s of CPU per
  // iteration, 0.21 s timed).
  static std::mutex mu;
  static std::array<int, 3> shape{};
  static at::Tensor a, b;
  const std::lock_guard<std::mutex> lock(mu);
  if (!a.defined() || shape != std::array<int, 3>{M, N, K}) {
    a = at::randn({M, K}).to(at::kBFloat16), b = at::randn({K, N}).to(at::kBFloat16);
    shape = {M, N, K};
  }
  at::Tensor c = at::matmul(a, b);  // warm-up: oneDNN's primitive is created and cached
  std::vector<double> t;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    c = at::matmul(a, b);
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string torch_attention_api() { return std::string(compat::kSdpaName) + " (LibTorch " + TORCH_VERSION + ")"; }

std::string torch_version() { return TORCH_VERSION; }

double torch_sdpa_cuda_bf16_seconds(const AttnShape& s, bool causal, int repeats) {
  if (!at::hasCUDA()) throw std::runtime_error("LibTorch " TORCH_VERSION " sees no CUDA device");
  const auto opts = at::TensorOptions().dtype(at::kBFloat16).device(at::kCUDA);
  const at::Tensor q = at::randn({s.B, s.H, s.T, s.D}, opts), k = at::randn({s.B, s.H, s.T, s.D}, opts),
                   v = at::randn({s.B, s.H, s.T, s.D}, opts);
  auto call = [&] { return at::scaled_dot_product_attention(q, k, v, {}, 0.0, causal); };
  call().sum().item<float>();  // warm-up (kernel selection, workspace), the queue drained
  std::vector<double> t;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    at::Tensor o;
    for (int i = 0; i < 10; ++i) o = call();
    o.sum().item<float>();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 10);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string torch_attention_backend(const AttnShape& s) {
  auto q = at::zeros({s.B, s.H, s.T, s.D}, at::kFloat);
  return compat::sdpa_backend(q, q, q);
}

std::vector<float> torch_attention(const float* q, const float* k, const float* v, const AttnShape& s) {
  return run(q, k, v, s);
}
std::vector<double> torch_attention(const double* q, const double* k, const double* v, const AttnShape& s) {
  return run(q, k, v, s);
}

void torch_set_threads(int n) {
  at::set_num_threads(n);
  // OpenBLAS runs its own thread pool: align it where it is the BLAS that LibTorch loaded.
  using SetFn = void (*)(int);
  if (auto fn = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) fn(n);
}
int torch_get_threads() { return at::get_num_threads(); }

BroadcastResult torch_broadcast_demo() {
  BroadcastResult r;
  at::Tensor a = at::ones({3}), b = at::ones({3, 1});
  at::Tensor c;
  try {
    c = a + b;
  } catch (const std::exception&) {
    r.raised = true;
    return r;
  }
  for (auto d : c.sizes()) r.shape.push_back(d);
  try {
    TORCH_CHECK(c.sizes() == a.sizes(), "expected shape ", a.sizes(), ", got ", c.sizes());
  } catch (const c10::Error&) {
    r.assertion_caught = true;
  }
  return r;
}

}  // namespace claimcheck::ref
