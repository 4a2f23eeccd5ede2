// GPU probe through the CUDA runtime API (plain C++, linked with CUDA::cudart).
#include <cuda_runtime_api.h>

#include "probe.h"

namespace claimcheck {

std::optional<GpuInfo> probe_gpu(std::string* why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    *why = std::string("no CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(err) + ")";
    cudaGetLastError();
    return std::nullopt;
  }
  if (n == 0) {
    *why = "no CUDA device (cudaGetDeviceCount: 0 devices)";
    return std::nullopt;
  }
  cudaDeviceProp p{};
  if ((err = cudaGetDeviceProperties(&p, 0)) != cudaSuccess) {
    *why = std::string("cudaGetDeviceProperties failed: ") + cudaGetErrorString(err);
    return std::nullopt;
  }
  GpuInfo g;
  g.name = p.name;
  g.sm_count = p.multiProcessorCount;
  g.cc_major = p.major;
  g.cc_minor = p.minor;
  g.memory_bytes = p.totalGlobalMem;
  cudaDeviceGetAttribute(&g.memory_clock_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&g.bus_width_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  g.theoretical_bandwidth = 2.0 * g.memory_clock_khz * 1e3 * (g.bus_width_bits / 8.0);
  return g;
}

std::string cuda_runtime_version() {
  int v = 0;
  if (cudaRuntimeGetVersion(&v) != cudaSuccess) return "";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

}  // namespace claimcheck
