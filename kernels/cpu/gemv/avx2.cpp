// The AVX2 + FMA GEMV row kernels, bf16 and NF4 (x86-64; compiled per function for AVX2, FMA and F16C, run where
// the CPU has them). hsum8 is in internal.h (the batched GEMM's direct tile uses it too).
//
// NF4 on AVX2: the 16 levels are exact fp32 numbers; their four byte planes are four 16-entry byte tables, looked
// up for 32 nibbles at once with vpshufb and re-assembled into fp32 with two rounds of byte/word unpacks. The
// unpacks scramble the order within 128-bit lanes in a fixed way, which the per-call activation re-ordering
// undoes (each 64-weight block's 64 activations permuted once). The block sum is multiplied by the block's scale
// once. This costs 8 vpshufb + 16 unpacks + 3 nibble ops per 64 weights (0.42 shuffle-port ops per weight); Zen 3
// retires ~1.4 of those per cycle, so the kernel is compute-bound at ~16-18 cycles per block (~6 GB/s of NF4 bytes
// per core), not memory-bound. Alternatives measured and slower on Zen 3: 2 x vpermps + blendv per 8 weights
// (~30 cycles/block), the byte->word level by shifts/masks (~24), the word->dword level by vpblendw (~19). Exact
// fp32 levels were kept (no fp16/int8 approximation of the code book).
#include "internal.h"

#include <cstdint>
#include <cstring>

namespace claimcheck::kernels::gemv_detail {

#if CC_X86
// ---- AVX2 kernels -------------------------------------------------------------------------------------------------
namespace {
// [sum a0, sum a1, sum a2, sum a3]
CC_AVX2_F16C CC_INLINE __m128 hsum4x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// xs: x split in groups of 16 (evens, odds); x: natural order, for the tail past K & ~15.
// Rows r, r + s, ..., r + (R - 1) s: four rows a quarter of a chunk apart read as four long streams (each row's
// successor in its stream is the next row in memory), not four 8 KiB runs restarted every block.
template <int R>
CC_AVX2_F16C CC_INLINE void bf16_block_avx2(const bf16_t* W, long K, const float* xs, const float* x, int r, long s,
                                            float* y) {
  const long Km = K & ~15L;
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 ae[R], ao[R];
  const bf16_t* w[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    ae[i] = _mm256_setzero_ps();
    ao[i] = _mm256_setzero_ps();
    w[i] = W + (r + i * s) * K;
  }
  for (long k = 0; k < Km; k += 16) {
    const __m256 xe = _mm256_loadu_ps(xs + k), xo = _mm256_loadu_ps(xs + k + 8);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      if (k % 32 == 0) _mm_prefetch(ahead(w[i] + k), _MM_HINT_T0);  // a line per 2 steps (kStreamPrefetchBytes)
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + k));
      ae[i] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(v, 16)), xe, ae[i]);
      ao[i] = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(v, hi_mask)), xo, ao[i]);
    }
  }
  float tail[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float t = 0;
    for (long k = Km; k < K; ++k) t += bf16_f32(w[i][k]) * x[k];
    tail[i] = t;
  }
  if constexpr (R == 4) {
    alignas(16) float out[4];
    _mm_store_ps(out, _mm_add_ps(hsum4x8(_mm256_add_ps(ae[0], ao[0]), _mm256_add_ps(ae[1], ao[1]),
                                         _mm256_add_ps(ae[2], ao[2]), _mm256_add_ps(ae[3], ao[3])),
                                 _mm_loadu_ps(tail)));
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) y[r + i * s] = out[i];
  } else {
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) y[r + i * s] = hsum8(_mm256_add_ps(ae[i], ao[i])) + tail[i];
  }
}
}  // namespace
CC_AVX2_F16C void bf16_rows_avx2(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y) {
  note_rows_ran(kBf16Rows, "avx2");
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) bf16_block_avx2<4>(W, K, xs, x, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) bf16_block_avx2<1>(W, K, xs, x, r, 0, y);
}

namespace {
// 32 nibble indices (bytes 0..15) -> 32 fp32 levels in four registers, lane order as Nf4Perm describes.
CC_AVX2_F16C CC_INLINE void nf4_decode32_avx2(__m256i idx, const __m256i t[4], __m256 out[4]) {
  const __m256i b0 = _mm256_shuffle_epi8(t[0], idx), b1 = _mm256_shuffle_epi8(t[1], idx);
  const __m256i b2 = _mm256_shuffle_epi8(t[2], idx), b3 = _mm256_shuffle_epi8(t[3], idx);
  const __m256i lo_l = _mm256_unpacklo_epi8(b0, b1), lo_h = _mm256_unpackhi_epi8(b0, b1);
  const __m256i hi_l = _mm256_unpacklo_epi8(b2, b3), hi_h = _mm256_unpackhi_epi8(b2, b3);
  out[0] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(lo_l, hi_l));
  out[1] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(lo_l, hi_l));
  out[2] = _mm256_castsi256_ps(_mm256_unpacklo_epi16(lo_h, hi_h));
  out[3] = _mm256_castsi256_ps(_mm256_unpackhi_epi16(lo_h, hi_h));
}
struct Nf4Tables {
  alignas(32) std::uint8_t b[4][32];
  Nf4Tables() {
    for (int c = 0; c < 16; ++c) {
      std::uint32_t u;
      std::memcpy(&u, &kNf4[c], 4);
      for (int p = 0; p < 4; ++p) b[p][c] = b[p][c + 16] = static_cast<std::uint8_t>(u >> (8 * p));
    }
  }
};
const Nf4Tables kNf4Tables;

template <int R>
CC_AVX2_F16C CC_INLINE void nf4_block_avx2(const std::uint8_t* P, const float* S, long K, const float* xp, int r,
                                           float* y) {
  __m256i t[4];
  for (int p = 0; p < 4; ++p) t[p] = _mm256_load_si256(reinterpret_cast<const __m256i*>(kNf4Tables.b[p]));
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 acc[R];
  const std::uint8_t* p[R];
  const float* s[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    acc[i] = _mm256_setzero_ps();
    p[i] = P + (r + i) * K / 2;
    s[i] = S + (r + i) * K / 64;
  }
  const long nb = K / 64;
  for (long b = 0; b < nb; ++b) {
    const float* xb = xp + b * 64;
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p[i] + b * 32));
      __m256 lo[4], hi[4];
      nf4_decode32_avx2(_mm256_and_si256(q, m4), t, lo);
      nf4_decode32_avx2(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), t, hi);
      __m256 s0 = _mm256_mul_ps(lo[0], _mm256_loadu_ps(xb + 0));
      __m256 s1 = _mm256_mul_ps(lo[1], _mm256_loadu_ps(xb + 8));
      s0 = _mm256_fmadd_ps(lo[2], _mm256_loadu_ps(xb + 16), s0);
      s1 = _mm256_fmadd_ps(lo[3], _mm256_loadu_ps(xb + 24), s1);
      s0 = _mm256_fmadd_ps(hi[0], _mm256_loadu_ps(xb + 32), s0);
      s1 = _mm256_fmadd_ps(hi[1], _mm256_loadu_ps(xb + 40), s1);
      s0 = _mm256_fmadd_ps(hi[2], _mm256_loadu_ps(xb + 48), s0);
      s1 = _mm256_fmadd_ps(hi[3], _mm256_loadu_ps(xb + 56), s1);
      acc[i] = _mm256_fmadd_ps(_mm256_add_ps(s0, s1), _mm256_broadcast_ss(s[i] + b), acc[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) y[r + i] = hsum8(acc[i]);
}
}  // namespace
CC_AVX2_F16C void nf4_rows_avx2(const std::uint8_t* P, const float* S, long K, const float* xp, int r0, int r1,
                                float* y) {
  note_rows_ran(kNf4Rows, "avx2");
  // One row at a time: the decode, not the activation loads, is the bottleneck, and a second row's registers
  // only add pressure (measured: 2 rows per pass ran ~20 % slower per block on Zen 3).
  for (int r = r0; r < r1; ++r) nf4_block_avx2<1>(P, S, K, xp, r, y);
}
#endif  // CC_X86

}  // namespace claimcheck::kernels::gemv_detail
