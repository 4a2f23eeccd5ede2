// Shared by the project's .cu files: error checks, a device buffer, CUDA-event timing, bf16 unpacking.
#pragma once
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "claimcheck/base/timing.h"

namespace claimcheck::kernels::cuda::detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }
// Why cuBLAS could not be loaded (cublas_lazy.cpp), "" where it was or has not been tried.
const std::string& cublas_lazy_error();
inline void check_blas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)) + " (" +
                             cublasGetStatusString(s) + ")" +
                             (cublas_lazy_error().empty() ? "" : ": " + cublas_lazy_error()));
}

// Owns device memory (cudaMalloc: plain allocations, not managed memory).
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(std::size_t bytes) : bytes_(bytes) {
    if (bytes) check(cudaMalloc(&p_, bytes), "cudaMalloc");
  }
  ~DevBuf() {
    if (p_) cudaFree(p_);
  }
  DevBuf(DevBuf&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr, o.bytes_ = 0; }
  DevBuf& operator=(DevBuf&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// CUDA events around each call of `enqueue` (which launches work on `stream`): the median of `repeats` timings
// after one untimed warm-up call.
template <class F>
double median_event_seconds(cudaStream_t stream, int repeats, F&& enqueue) {
  cudaEvent_t t0, t1;
  check(cudaEventCreate(&t0), "cudaEventCreate");
  check(cudaEventCreate(&t1), "cudaEventCreate");
  std::vector<double> times;
  try {
    enqueue();
    check(cudaStreamSynchronize(stream), "warm-up");
    for (int r = 0; r < std::max(1, repeats); ++r) {
      check(cudaEventRecord(t0, stream), "cudaEventRecord");
      enqueue();
      check(cudaEventRecord(t1, stream), "cudaEventRecord");
      check(cudaEventSynchronize(t1), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
      times.push_back(ms * 1e-3);
    }
  } catch (...) {
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    throw;
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  return base::median(std::move(times));
}

// Two bf16 in a 32-bit word (element 0 in the low half) as floats: a bf16 is the top half of an fp32.
__device__ __forceinline__ float bf16_lo(std::uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(std::uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// Fills n bf16 with uniform values in [-a, a] from a hash of (index, seed): device-side random data for probes
// (defined in probes.cu; a host function, so no relocatable device code is needed).
void fill_uniform_bf16(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float a, cudaStream_t s = nullptr);

}  // namespace claimcheck::kernels::cuda::detail
