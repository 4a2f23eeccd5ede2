// Built without LibTorch: the library side of chapter 2 is unavailable (its checks skip), the decode kernels have
// no competitor (their benchmark rows are absent) and the probe no library read to be held against.
#include <stdexcept>

#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/block.h"
#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/optim.h"
#include "claimcheck/ref/roofline.h"

namespace claimcheck::ref {
namespace {
[[noreturn]] void none() { throw std::runtime_error("not built with LibTorch"); }
}  // namespace

// Attention (chapter 2).
bool torch_available() { return false; }
std::string torch_attention_api() { return "none (not built with LibTorch)"; }
std::string torch_version() { return ""; }
std::string torch_attention_backend(const AttnShape&) { return "none"; }
double torch_sdpa_cuda_bf16_seconds(const AttnShape&, bool, int) { none(); }
std::vector<float> torch_attention(const float*, const float*, const float*, const AttnShape&) { none(); }
std::vector<double> torch_attention(const double*, const double*, const double*, const AttnShape&) { none(); }
void torch_set_threads(int) {}
int torch_get_threads() { return 1; }
BroadcastResult torch_broadcast_demo() { none(); }
struct TorchSdpa::Impl {};
TorchSdpa::TorchSdpa(const float*, const float*, const float*, const AttnShape&) : p_(nullptr) { none(); }
TorchSdpa::~TorchSdpa() = default;
void TorchSdpa::run() { none(); }
const float* TorchSdpa::out() const { return nullptr; }
double torch_matmul_bf16_seconds(int, int, int, int) { none(); }

// The decode kernels' competitor (chapter 6).
std::string torch_gemv_api() { return "none (not built with LibTorch)"; }
void torch_matmul_bf16(const std::uint16_t*, int, int, const float*, int, float*) { none(); }
struct TorchDecodeChain::Impl {};
TorchDecodeChain::TorchDecodeChain(std::vector<Bf16Mat>, int) { none(); }
TorchDecodeChain::~TorchDecodeChain() = default;
int TorchDecodeChain::hidden() const { return 0; }
void TorchDecodeChain::step(const float*, float*) { none(); }

// The probe's library read (chapter 6).
struct TorchRead::Impl {};
TorchRead::TorchRead(std::size_t) { none(); }
TorchRead::~TorchRead() = default;
double TorchRead::bytes_per_s(int, int) const { none(); }
double torch_cuda_read_bandwidth(std::size_t, int) { none(); }
double torch_matmul_fp32_seconds(int, int, int, int, int) { none(); }
std::vector<float> torch_adamw_steps(const std::vector<float>&, const std::vector<std::vector<float>>&,
                                     const AdamWSettings&) {
  none();
}

// The reference decoder layers (chapter 6's timed training step).
BlockStepComparison compare_block_step_fp64(const BlockSpec&, const std::vector<TensorRef>&, const TensorRef&,
                                            const TensorRef&, double, const std::vector<TensorRef>&) {
  none();
}
}  // namespace claimcheck::ref
