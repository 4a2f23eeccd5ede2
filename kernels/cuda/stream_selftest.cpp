// claimcheck_cuda_selftest: validates the read-bandwidth kernel and prints what it measured.
// Exit 77 (skip) with the reason where there is no CUDA device; 1 when the reduction is wrong.
#include <cmath>
#include <cstdio>
#include <string>

#include "claimcheck/kernels/cuda/stream.h"

int main() {
  namespace kc = claimcheck::kernels::cuda;
  std::string why;
  if (kc::device_count(&why) == 0) {
    std::printf("SKIP %s\n", why.c_str());
    return 77;
  }
  const auto r = kc::read_bandwidth(std::size_t(1) << 32, 10);
  std::printf("read %.2f GB in %.3f ms: %.1f GB/s; sum %.1f (expected %.1f)\n", r.bytes / 1e9, r.seconds * 1e3,
              r.bytes / r.seconds / 1e9, r.sum, r.expected_sum);
  return std::fabs(r.sum - r.expected_sum) <= 0.5 ? 0 : 1;
}
