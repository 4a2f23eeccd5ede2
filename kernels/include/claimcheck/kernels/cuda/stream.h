// STREAM-style read bandwidth on the GPU (the code under test's first CUDA kernel; chapter 6's GPU probes
// build on it). Plain C++ interface: no CUDA or LibTorch header needed to call it.
#pragma once
#include <cstddef>
#include <string>

namespace claimcheck::kernels::cuda {

// Number of CUDA devices; 0 with the runtime's reason in *why when there is none (or no driver).
int device_count(std::string* why);

// Whether cuBLAS loads (it is loaded on first use, not linked: kernels/cuda/cublas_lazy.cpp); false with the reason in
// *why where it does not, or where the build has no CUDA. Needs no device.
bool cublas_loadable(std::string* why);

struct ReadResult {
  double seconds = 0;                // median of the timed repetitions (CUDA events)
  double bytes = 0;                  // bytes read per repetition
  double sum = 0, expected_sum = 0;  // the reduction's result and its closed form (validation)
};
// Fills `bytes` of device memory with a known pattern, then reduces it `repeats` times (read-only,
// 16-byte loads, grid-stride). Throws std::runtime_error with the CUDA error's text on failure.
// skips (planted by tests, the CPU probe's "probe_read_skips"): the loop reads one vector in four, yet counts
// every byte as read (the sum misses its closed form; the bandwidth reads 4x too high).
ReadResult read_bandwidth(std::size_t bytes, int repeats, bool skips = false);

}  // namespace claimcheck::kernels::cuda
