// The portable GEMV row kernels, bf16 and NF4: plain C++ loops the compiler vectorises, compiled for x86-64-v4, v3
// and the baseline (CC_CLONES: the CPU picks one at load time). The path of CPUs without a SIMD kernel of ours, and
// NF4's on AArch64.
#include "internal.h"

#include <cstdint>

namespace claimcheck::kernels::gemv_detail {

// ---- portable kernels -----------------------------------------------------------------------------------------
CC_CLONES void bf16_rows_portable(const bf16_t* W, long K, const float* x, int r0, int r1, float* y) {
  note_rows_ran(kBf16Rows, "portable");
  for (int r = r0; r < r1; ++r) {
    const bf16_t* w = W + r * K;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    const long Km = K & ~7L;
    for (long k = 0; k < Km; k += 8)
      for (int i = 0; i < 8; ++i) acc[i] += bf16_f32(w[k + i]) * x[k + i];
    float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (long k = Km; k < K; ++k) s += bf16_f32(w[k]) * x[k];
    y[r] = s;
  }
}

CC_CLONES void nf4_rows_portable(const std::uint8_t* P, const float* S, long K, const float* x, int r0, int r1,
                                 float* y) {
  note_rows_ran(kNf4Rows, "portable");
  for (int r = r0; r < r1; ++r) {
    const std::uint8_t* p = P + r * K / 2;
    const float* s = S + r * K / 64;
    float acc = 0;
    for (long b = 0; b < K / 64; ++b) {
      float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int j = 0; j < 32; j += 4)
#pragma GCC unroll 16
        for (int i = 0; i < 4; ++i) {
          const std::uint8_t byte = p[b * 32 + j + i];
          part[2 * i] += kNf4[byte & 15] * x[b * 64 + 2 * (j + i)];
          part[2 * i + 1] += kNf4[byte >> 4] * x[b * 64 + 2 * (j + i) + 1];
        }
      const float t = ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
      acc += t * s[b];
    }
    y[r] = acc;
  }
}

}  // namespace claimcheck::kernels::gemv_detail
