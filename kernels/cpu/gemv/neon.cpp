// The NEON bf16 GEMV row kernel (AArch64 only; the NF4 GEMV there runs the portable kernel).
//
// AArch64 (NEON, every core): the bf16 GEMV and the batched GEMM's direct tile use the same even/odd trick on 128-bit
// registers (the activations split as for AVX2, in groups of 16), four rows at once; the GEMM's panel tile is
// gemm_tile.inc on float32x4_t (12 x 8: 24 of the 32 vector registers accumulate); NF4 runs the portable kernel.
#include "internal.h"

namespace claimcheck::kernels::gemv_detail {

#if CC_NEON
// ---- NEON kernels (AArch64) ----------------------------------------------------------------------------------------
namespace {
// xs: x split in groups of 16 (evens, odds), as for AVX2: of 16 weights (two 128-bit loads, lanes of bf16 pairs),
// load 0's low halves meet xs[0..3], load 1's xs[4..7], load 0's high halves xs[8..11], load 1's xs[12..15].
// Rows r, r + s, ..., r + (R - 1) s (four long streams, as bf16_block_avx2); four accumulators per row, each row
// summed the same way whatever R, so results do not depend on how rows are grouped.
template <int R>
CC_INLINE void bf16_block_neon(const bf16_t* W, long K, const float* xs, const float* x, int r, long s, float* y) {
  const long Km = K & ~15L;
  const uint32x4_t hi_mask = vdupq_n_u32(0xffff0000u);
  float32x4_t a[R][4];
  const bf16_t* w[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    for (auto& v : a[i]) v = vdupq_n_f32(0.0f);
    w[i] = W + (r + i * s) * K;
  }
  for (long k = 0; k < Km; k += 16) {
    const float32x4_t x0 = vld1q_f32(xs + k), x1 = vld1q_f32(xs + k + 4), x2 = vld1q_f32(xs + k + 8),
                      x3 = vld1q_f32(xs + k + 12);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const uint32x4_t v0 = vreinterpretq_u32_u16(vld1q_u16(w[i] + k));
      const uint32x4_t v1 = vreinterpretq_u32_u16(vld1q_u16(w[i] + k + 8));
      a[i][0] = vfmaq_f32(a[i][0], vreinterpretq_f32_u32(vshlq_n_u32(v0, 16)), x0);
      a[i][1] = vfmaq_f32(a[i][1], vreinterpretq_f32_u32(vshlq_n_u32(v1, 16)), x1);
      a[i][2] = vfmaq_f32(a[i][2], vreinterpretq_f32_u32(vandq_u32(v0, hi_mask)), x2);
      a[i][3] = vfmaq_f32(a[i][3], vreinterpretq_f32_u32(vandq_u32(v1, hi_mask)), x3);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float t = vaddvq_f32(vaddq_f32(vaddq_f32(a[i][0], a[i][1]), vaddq_f32(a[i][2], a[i][3])));
    for (long k = Km; k < K; ++k) t += bf16_f32(w[i][k]) * x[k];
    y[r + i * s] = t;
  }
}
}  // namespace
void bf16_rows_neon(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y) {
  note_rows_ran(kBf16Rows, "neon");
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) bf16_block_neon<4>(W, K, xs, x, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) bf16_block_neon<1>(W, K, xs, x, r, 0, y);
}
#endif  // CC_NEON

}  // namespace claimcheck::kernels::gemv_detail
