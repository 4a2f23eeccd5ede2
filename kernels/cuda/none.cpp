// claimcheck_cuda_kernels where nvcc was not found at configure time: the interface of stream.h, decode.h,
// probes.h and attention.h with no device behind it. device_count says why; everything else throws the same.
#include <stdexcept>

#include "claimcheck/kernels/cuda/attention.h"
#include "claimcheck/kernels/cuda/decode.h"
#include "claimcheck/kernels/cuda/probes.h"
#include "claimcheck/kernels/cuda/stream.h"

namespace claimcheck::kernels::cuda {
namespace {
const char* const kWhy = "not built with CUDA (nvcc was not found at configure time)";
[[noreturn]] void none() { throw std::runtime_error(kWhy); }
}  // namespace

int device_count(std::string* why) {
  if (why) *why = kWhy;
  return 0;
}
bool cublas_loadable(std::string* why) {
  if (why) *why = kWhy;
  return false;
}
ReadResult read_bandwidth(std::size_t, int, bool) { none(); }
CopyResult copy_bandwidth(std::size_t, int) { none(); }
GemmResult gemm_bf16_cublas(int, int, int, int) { none(); }
GemmResult gemm_peak_bf16(int, const RooflineFaults&) { none(); }
std::vector<SweepPoint> layer_batch_sweep(const DecodeShape&, const std::vector<int>&, int, const GemvFaults&) {
  none();
}
std::vector<float> gemv_bf16_host(const bf16_t*, int, int, const float*, const GemvFaults&) { none(); }
std::vector<float> gemv_nf4_host(const Nf4Matrix&, const float*, const GemvFaults&) { none(); }
std::string device_summary() { none(); }
void attention_fwd_bf16(const bf16_t*, const bf16_t*, const bf16_t*, bf16_t*, const AttnDims&, bool, void*) { none(); }
std::vector<bf16_t> attention_fwd_bf16_host(const bf16_t*, const bf16_t*, const bf16_t*, const AttnDims&, bool) {
  none();
}
double time_attention_fwd_bf16(const AttnDims&, bool, int) { none(); }
void attention_plant_fault(bool) {}

struct GpuDecodeChain::Impl {};
GpuDecodeChain::GpuDecodeChain(const DecodeShape&, int, const std::string&, std::uint64_t, int, const GemvFaults&) {
  none();
}
GpuDecodeChain::~GpuDecodeChain() = default;
const std::vector<MatShape>& GpuDecodeChain::plan() const { none(); }
double GpuDecodeChain::weight_bytes() const { none(); }
double GpuDecodeChain::flops() const { none(); }
void GpuDecodeChain::step(const float*, float*, float*) { none(); }
std::vector<bf16_t> GpuDecodeChain::bf16_matrix(int) const { none(); }
Nf4Matrix GpuDecodeChain::nf4_matrix(int) const { none(); }
double GpuDecodeChain::time_graph(int, bool) { none(); }
double GpuDecodeChain::time_eager(int, bool) { none(); }

}  // namespace claimcheck::kernels::cuda
