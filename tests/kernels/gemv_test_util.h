// Shared by the CPU and the CUDA decode kernels' tests (test_gemv.cpp, test_cuda_kernels.cpp): random inputs, the
// rounding-error bound of an fp32 accumulation, and the NF4 levels of the answer key's format file.
#pragma once
#include <cmath>
#include <random>
#include <vector>

#include <filesystem>

#include "claimcheck/kernels/gemv.h"
#include "claimcheck/ref/gemv.h"

namespace gemv_test {

// The 16 NF4 levels of reference/data/quant/nf4-absmax64.json (CLAIMCHECK_SOURCE_DIR: the repository root).
inline std::vector<double> levels() {
  return claimcheck::ref::load_nf4_levels(std::filesystem::path(CLAIMCHECK_SOURCE_DIR) /
                                          "reference/data/quant/nf4-absmax64.json");
}

inline std::vector<claimcheck::kernels::bf16_t> random_bf16(std::size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<claimcheck::kernels::bf16_t> w(n);
  for (auto& e : w) e = claimcheck::kernels::to_bf16(d(rng));
  return w;
}
inline std::vector<float> random_f32(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& e : x) e = d(rng);
  return x;
}
// fp32 accumulation of K products: |err| <= c * 2^-24 * sqrt(K) * sum |w x| (+ a floor for exact zeros).
inline double tol32(int K, double absdot) {
  return 16.0 * std::ldexp(1.0, -24) * std::sqrt(static_cast<double>(K) + 1) * absdot + 1e-30;
}

}  // namespace gemv_test
