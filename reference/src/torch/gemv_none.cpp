// Built without LibTorch: the competitor of the decode kernels is unavailable (its benchmark rows are absent).
#include <stdexcept>

#include "claimcheck/ref/gemv.h"

namespace claimcheck::ref {
namespace {
[[noreturn]] void none() { throw std::runtime_error("not built with LibTorch"); }
}  // namespace
std::string torch_gemv_api() { return "none (not built with LibTorch)"; }
void torch_matmul_bf16(const std::uint16_t*, int, int, const float*, int, float*) { none(); }
struct TorchDecodeChain::Impl {};
TorchDecodeChain::TorchDecodeChain(std::vector<Bf16Mat>, int) { none(); }
TorchDecodeChain::~TorchDecodeChain() = default;
int TorchDecodeChain::hidden() const { return 0; }
void TorchDecodeChain::step(const float*, float*) { none(); }
}  // namespace claimcheck::ref
