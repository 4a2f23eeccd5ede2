// NF4 quantisation of bf16 weights (quantize_nf4's rows): per block of 64 the absmax, then each weight's nearest of
// the 16 levels of w / absmax, two codes per byte.
#include "internal.h"

#include <algorithm>
#include <cstdint>

namespace claimcheck::kernels::gemv_detail {

// ---- NF4 quantisation ----------------------------------------------------------------------------------------
namespace {
// Nearest level by counting the midpoints below v (ties go up; the levels are sorted).
struct Nf4Mids {
  float m[15];
  Nf4Mids() {
    for (int i = 0; i < 15; ++i) m[i] = 0.5f * (kNf4[i] + kNf4[i + 1]);
  }
};
const Nf4Mids kMids;
}  // namespace

CC_CLONES void quantize_rows(const bf16_t* W, long K, long r0, long r1, std::uint8_t* packed, float* scales) {
  for (long r = r0; r < r1; ++r)
    for (long b = 0; b < K / 64; ++b) {
      const bf16_t* w = W + r * K + b * 64;
      float v[64];
      for (int i = 0; i < 64; ++i) v[i] = bf16_f32(w[i]);
      // |w| orders like its bit pattern with the sign cleared (no NaN in weights): an integer max vectorises.
      std::uint16_t amax_bits = 0;
      for (int i = 0; i < 64; ++i) amax_bits = std::max<std::uint16_t>(amax_bits, w[i] & 0x7fffu);
      const float amax = bf16_f32(amax_bits);
      scales[(r * K + b * 64) / 64] = amax;
      // v / amax, exactly as the check divides (not v * (1/amax), which can round differently); loops shaped so
      // that they vectorise over the 64 weights.
      float u[64];
      const float d = amax > 0 ? amax : 1.0f;
      for (int i = 0; i < 64; ++i) u[i] = v[i] / d;
      std::int32_t c[64] = {};
      for (int m = 0; m < 15; ++m) {
        const float mid = kMids.m[m];
        for (int i = 0; i < 64; ++i) c[i] += u[i] > mid ? 1 : 0;
      }
      std::uint8_t code[64];
      for (int i = 0; i < 64; ++i) code[i] = static_cast<std::uint8_t>(c[i]);
      std::uint8_t* p = packed + (r * K + b * 64) / 2;
      for (int i = 0; i < 32; ++i) p[i] = static_cast<std::uint8_t>(code[2 * i] | (code[2 * i + 1] << 4));
    }
}

}  // namespace claimcheck::kernels::gemv_detail
