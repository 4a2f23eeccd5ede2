// The AVX-512 GEMV row kernels, bf16 and NF4, and the NF4 kernel's activation order (x86-64; compiled per function
// for AVX-512 F/BW/VL/DQ with AVX2, FMA and F16C, run where the CPU has AVX-512).
//
// NF4 on AVX-512: a 16-float register is the whole table, one vpermps per 16 nibbles (avx2.cpp says how AVX2 does it).
#include "internal.h"

#include <cstdint>
#include <cstring>

namespace claimcheck::kernels::gemv_detail {

#if CC_X86
// GCC 12's AVX-512 intrinsics headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* (a known false
// positive); the project builds with -Werror in CI.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// ---- AVX-512 kernels (compiled everywhere, run where the CPU has AVX-512) --------------------------------------
namespace {
// xs: x split in groups of 32 (16 evens, 16 odds).
// Rows r, r + s, ...: four long streams, as in the AVX2 kernel.
template <int R>
CC_AVX512_F16C CC_INLINE void bf16_block_avx512(const bf16_t* W, long K, const float* xs, const float* x, int r, long s,
                                                float* y) {
  const long Km = K & ~31L;
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  __m512 ae[R], ao[R];
  const bf16_t* w[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    ae[i] = _mm512_setzero_ps();
    ao[i] = _mm512_setzero_ps();
    w[i] = W + (r + i * s) * K;
  }
  for (long k = 0; k < Km; k += 32) {
    const __m512 xe = _mm512_loadu_ps(xs + k), xo = _mm512_loadu_ps(xs + k + 16);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      _mm_prefetch(ahead(w[i] + k), _MM_HINT_T0);  // (internal.h: kStreamPrefetchBytes)
      const __m512i v = _mm512_loadu_si512(w[i] + k);
      ae[i] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(v, 16)), xe, ae[i]);
      ao[i] = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(v, hi_mask)), xo, ao[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    float t = _mm512_reduce_add_ps(_mm512_add_ps(ae[i], ao[i]));
    for (long k = Km; k < K; ++k) t += bf16_f32(w[i][k]) * x[k];
    y[r + i * s] = t;
  }
}
}  // namespace
CC_AVX512_F16C void bf16_rows_avx512(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1,
                                     float* y) {
  note_rows_ran(kBf16Rows, "avx512");
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) bf16_block_avx512<4>(W, K, xs, x, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) bf16_block_avx512<1>(W, K, xs, x, r, 0, y);
}
// The AVX-512 NF4 kernel's order: within each run of 16 weights, lane 2j holds weight j and lane 2j+1 weight
// 8 + j. Eight packed bytes (16 nibbles, weight n in nibble n) broadcast to every 64-bit lane and shifted right by
// 4j per 32-bit lane leave in lane 2j nibble j of the low half and in lane 2j+1 nibble 8 + j of the high half;
// vpermps reads only an index's low four bits, so no mask is needed. The indices cost a broadcast load and one
// shift per 16 weights, and the shuffle unit does only the table lookups.
void nf4_order_avx512(const float* x, int K, float* out) {  // K: a multiple of 64 (the format's blocks)
  for (int g = 0; g + 16 <= K; g += 16)
    for (int j = 0; j < 8; ++j) {
      out[g + 2 * j] = x[g + j];
      out[g + 2 * j + 1] = x[g + 8 + j];
    }
}
namespace {
// The 16 levels of the 16 weights in q[0..8), in that order.
CC_AVX512_F16C CC_INLINE __m512 nf4_lookup16(const std::uint8_t* q, __m512i shifts, __m512 table) {
  long long v;
  std::memcpy(&v, q, sizeof v);
  return _mm512_permutexvar_ps(_mm512_srlv_epi32(_mm512_set1_epi64(v), shifts), table);
}
// Rows r, r + st, r + 2 st, ...: far-apart streams, as in the bf16 kernels.
// Each row's codes are prefetched 1 KiB (32 blocks) ahead: the four streams carry so much dequantisation work per
// byte that the out-of-order window fills with it before the hardware prefetchers run far enough ahead, and the
// step read its bytes at 0.85 of the bf16 kernel's rate (38-40 against 46 GB/s on a Zen 5 guest, the NF4 / bf16
// step time 0.33); prefetched, at the bf16 rate (44-46 GB/s, 0.28-0.31).
constexpr long kNf4PrefetchBytes = 1024;
template <int R>
CC_AVX512_F16C CC_INLINE void nf4_block_avx512(const std::uint8_t* P, const float* S, long K, const float* xs, int r,
                                               long st, float* y) {
  const __m512 table = _mm512_loadu_ps(kNf4);
  const __m512i shifts = _mm512_set_epi32(28, 28, 24, 24, 20, 20, 16, 16, 12, 12, 8, 8, 4, 4, 0, 0);
  __m512 acc[R];
  const std::uint8_t* p[R];
  const float* s[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    acc[i] = _mm512_setzero_ps();
    p[i] = P + (r + i * st) * K / 2;
    s[i] = S + (r + i * st) * K / 64;
  }
  const long nb = K / 64;
  for (long b = 0; b < nb; ++b) {
    const float* xb = xs + b * 64;
    const __m512 x0 = _mm512_loadu_ps(xb), x1 = _mm512_loadu_ps(xb + 16);
    const __m512 x2 = _mm512_loadu_ps(xb + 32), x3 = _mm512_loadu_ps(xb + 48);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const std::uint8_t* q = p[i] + b * 32;
      if (b % 2 == 0)
        _mm_prefetch(reinterpret_cast<const char*>(q + kNf4PrefetchBytes), _MM_HINT_T0);  // a line per 2 blocks
      __m512 t = _mm512_mul_ps(nf4_lookup16(q, shifts, table), x0);
      t = _mm512_fmadd_ps(nf4_lookup16(q + 8, shifts, table), x1, t);
      t = _mm512_fmadd_ps(nf4_lookup16(q + 16, shifts, table), x2, t);
      t = _mm512_fmadd_ps(nf4_lookup16(q + 24, shifts, table), x3, t);
      acc[i] = _mm512_fmadd_ps(t, _mm512_set1_ps(s[i][b]), acc[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) y[r + i * st] = _mm512_reduce_add_ps(acc[i]);
}
}  // namespace
CC_AVX512_F16C void nf4_rows_avx512(const std::uint8_t* P, const float* S, long K, const float* xs, int r0, int r1,
                                    float* y) {
  note_rows_ran(kNf4Rows, "avx512");
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) nf4_block_avx512<4>(P, S, K, xs, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) nf4_block_avx512<1>(P, S, K, xs, r, 0, y);
}
#pragma GCC diagnostic pop
#endif  // CC_X86

}  // namespace claimcheck::kernels::gemv_detail
