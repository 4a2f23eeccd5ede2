// Read bandwidth: a grid-stride, 16-byte-load reduction over a buffer larger than L2; partial sums per block,
// finished on the host in double. Validated against the closed form of the fill pattern before being timed.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "claimcheck/base/timing.h"
#include "claimcheck/kernels/cuda/stream.h"

namespace claimcheck::kernels::cuda {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

// x[i] = (i % 7) - 3 (exact in fp32, sums exactly per block).
__global__ void fill(float* x, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
}

__global__ void read_sum(const float4* __restrict__ x, std::size_t n4, float* partial, int step) {
  float acc = 0.f;
  for (std::size_t i = (blockIdx.x * std::size_t(blockDim.x) + threadIdx.x) * step; i < n4;
       i += std::size_t(gridDim.x) * blockDim.x * step) {
    const float4 v = __ldg(&x[i]);
    acc += (v.x + v.y) + (v.z + v.w);
  }
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  __shared__ float warp_sums[32];
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < (blockDim.x >> 5) ? warp_sums[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
  }
}

}  // namespace

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    if (why) *why = std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
    return 0;
  }
  if (n == 0 && why) *why = "no CUDA device (cudaGetDeviceCount: 0 devices)";
  if (n == 0) return 0;
  // A device this build has no code for (neither a cubin for its architecture nor PTX it can compile): every
  // kernel would fail to launch, so there is no device to run on, and the reason says which to build for.
  cudaFuncAttributes attr;
  const cudaError_t img = cudaFuncGetAttributes(&attr, read_sum);
  if (img != cudaSuccess) {
    cudaGetLastError();  // clear it, so that a later call is not blamed for it
    cudaDeviceProp prop;
    const bool named = cudaGetDeviceProperties(&prop, 0) == cudaSuccess;
    if (why)
      *why = std::string("this build has no device code for ") +
             (named ? std::string(prop.name) + " (compute capability " + std::to_string(prop.major) + "." +
                          std::to_string(prop.minor) + ")"
                    : std::string("device 0")) +
             ": built for CUDA architectures " CLAIMCHECK_CUDA_ARCHS_STRING " (cudaFuncGetAttributes: " +
             cudaGetErrorString(img) + "); configure with -DCLAIMCHECK_CUDA_ARCHITECTURES=<its sm>";
    return 0;
  }
  return n;
}

ReadResult read_bandwidth(std::size_t bytes, int repeats, bool skips) {
  const std::size_t n4 = bytes / sizeof(float4), n = n4 * 4;
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  const int threads = 512, blocks = sms * 4;
  float *x = nullptr, *partial = nullptr;
  check(cudaMalloc(&x, n * sizeof(float)), "cudaMalloc");
  check(cudaMalloc(&partial, blocks * sizeof(float)), "cudaMalloc");
  cudaEvent_t t0, t1;
  check(cudaEventCreate(&t0), "cudaEventCreate");
  check(cudaEventCreate(&t1), "cudaEventCreate");
  fill<<<blocks, threads>>>(x, n);
  ReadResult r;
  r.bytes = static_cast<double>(n) * sizeof(float);
  // Closed form of the pattern: full cycles of (-3..3) sum to 0; the tail adds (k % 7) - 3 for its k.
  for (std::size_t i = n - n % 7; i < n; ++i) r.expected_sum += static_cast<double>(static_cast<int>(i % 7) - 3);
  std::vector<float> host(blocks);
  std::vector<double> times;
  for (int rep = 0; rep <= repeats; ++rep) {  // repetition 0 warms up and validates
    check(cudaEventRecord(t0), "cudaEventRecord");
    read_sum<<<blocks, threads>>>(reinterpret_cast<const float4*>(x), n4, partial, skips ? 4 : 1);
    check(cudaEventRecord(t1), "cudaEventRecord");
    check(cudaEventSynchronize(t1), "read_sum");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
    if (rep == 0) {
      check(cudaMemcpy(host.data(), partial, blocks * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      for (float p : host) r.sum += p;
    } else {
      times.push_back(ms * 1e-3);
    }
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaFree(partial);
  cudaFree(x);
  r.seconds = times.empty() ? 0 : base::median(std::move(times));
  return r;
}

}  // namespace claimcheck::kernels::cuda
