// The batched bf16 GEMV, a skinny GEMM (gemm_bf16): every weight read once for the whole batch. Small batches run
// direct tiles (the GEMV's streaming form, per ISA: AVX2, AVX-512, NEON); larger ones pack weight panels and run a
// register tile over them, one source for every vector width (gemm_tile.inc).
#include "../thread_pool.h"
#include "internal.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace claimcheck::kernels::gemv_detail {
namespace {

// ---- batched bf16 (skinny GEMM) ---------------------------------------------------------------------------------
// Two regimes.
//  - Small batches (B <= kDirectMaxB): the GEMV's own streaming form. Weight rows are converted in registers
//    (the even/odd trick) and each converted vector meets up to four activation rows (pre-split the same way):
//    2 x 4 accumulators on AVX2, 4 x 4 on AVX-512 (its 32 registers), every weight read once from memory, a
//    horizontal sum per output at the end.
//  - Larger batches: weights packed once per (k block, two vectors of output columns) into fp32 k-major panels
//    [kc][2L], and the activations' k block packed once per tile of rows (k-major); a register tile of MB
//    activation rows x 2 vectors runs over the panel, BLIS-style (gemm_tile.inc:
//    AVX2 6 x 16 with 12 ymm accumulators, AVX-512 12 x 32 with 24 zmm: a 512-bit tile at every batch, which a core
//    with two full 512-bit FMA units needs to reach more than half its peak); outputs accumulated in Y across k
//    blocks. Compute-bound at the FMA rate for large B.
constexpr int kDirectMaxB = 16;
constexpr int kMaxPanelN = 32;  // output columns per packed panel: two vectors of the widest ISA
constexpr int kMaxTileB = 12;   // activation rows per register tile, at most
constexpr int kGemmKc = 1024;   // k block: a 32 x 1024 fp32 panel is 128 KiB (L2); rows read in 2 KiB runs

#if CC_X86
// Y[(b0 + j) * N + r + i] = sum_k W[r + i, k] X[b0 + j, k], i < R, j < NB. XS: X rows split in groups of 16.
template <int R, int NB>
CC_AVX2_F16C CC_INLINE void direct_tile_avx2(const bf16_t* W, long K, const float* XS, const float* X, int r, int b0,
                                             float* Y, long N) {
  const long Km = K & ~15L;
  const __m256i hi_mask = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
  __m256 acc[R][NB];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm256_setzero_ps();
  const bf16_t* w[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) w[i] = W + (r + i) * K;
  for (long k = 0; k < Km; k += 16) {
    __m256 we[R], wo[R];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      if (k % 32 == 0) _mm_prefetch(ahead(w[i] + k), _MM_HINT_T0);  // as the GEMV (internal.h)
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + k));
      we[i] = _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
      wo[i] = _mm256_castsi256_ps(_mm256_and_si256(v, hi_mask));
    }
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) {
      const float* xs = XS + (b0 + j) * K + k;
      const __m256 xe = _mm256_loadu_ps(xs), xo = _mm256_loadu_ps(xs + 8);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) acc[i][j] = _mm256_fmadd_ps(wo[i], xo, _mm256_fmadd_ps(we[i], xe, acc[i][j]));
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) {
      float t = hsum8(acc[i][j]);
      for (long k = Km; k < K; ++k) t += bf16_f32(w[i][k]) * X[(b0 + j) * K + k];
      Y[(b0 + j) * N + r + i] = t;
    }
}
template <int R>
CC_AVX2_F16C void direct_rows_avx2(const bf16_t* W, long K, const float* XS, const float* X, int B, int r, float* Y,
                                   long N) {
  int b = 0;
  for (; b + 4 <= B; b += 4) direct_tile_avx2<R, 4>(W, K, XS, X, r, b, Y, N);
  switch (B - b) {
    case 3:
      direct_tile_avx2<R, 3>(W, K, XS, X, r, b, Y, N);
      break;
    case 2:
      direct_tile_avx2<R, 2>(W, K, XS, X, r, b, Y, N);
      break;
    case 1:
      direct_tile_avx2<R, 1>(W, K, XS, X, r, b, Y, N);
      break;
    default:
      break;
  }
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers, as in avx512.cpp
// The same on 16 lanes (XS: X rows split in groups of 32): 32 zmm registers hold R x NB accumulators, the R
// rows' converted halves and one activation row's, so four weight rows (four streams) meet four activation rows.
template <int R, int NB>
CC_AVX512_F16C CC_INLINE void direct_tile_avx512(const bf16_t* W, long K, const float* XS, const float* X, int r,
                                                 int b0, float* Y, long N) {
  const long Km = K & ~31L;
  const __m512i hi_mask = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  __m512 acc[R][NB];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) acc[i][j] = _mm512_setzero_ps();
  const bf16_t* w[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) w[i] = W + (r + i) * K;
  for (long k = 0; k < Km; k += 32) {
    __m512 we[R], wo[R];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      _mm_prefetch(ahead(w[i] + k), _MM_HINT_T0);  // as the GEMV (internal.h)
      const __m512i v = _mm512_loadu_si512(w[i] + k);
      we[i] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      wo[i] = _mm512_castsi512_ps(_mm512_and_si512(v, hi_mask));
    }
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) {
      const float* xs = XS + (b0 + j) * K + k;
      const __m512 xe = _mm512_loadu_ps(xs), xo = _mm512_loadu_ps(xs + 16);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wo[i], xo, _mm512_fmadd_ps(we[i], xe, acc[i][j]));
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) {
      float t = _mm512_reduce_add_ps(acc[i][j]);
      for (long k = Km; k < K; ++k) t += bf16_f32(w[i][k]) * X[(b0 + j) * K + k];
      Y[(b0 + j) * N + r + i] = t;
    }
}
template <int R>
CC_AVX512_F16C void direct_rows_avx512(const bf16_t* W, long K, const float* XS, const float* X, int B, int r, float* Y,
                                       long N) {
  int b = 0;
  for (; b + 4 <= B; b += 4) direct_tile_avx512<R, 4>(W, K, XS, X, r, b, Y, N);
  switch (B - b) {
    case 3:
      direct_tile_avx512<R, 3>(W, K, XS, X, r, b, Y, N);
      break;
    case 2:
      direct_tile_avx512<R, 2>(W, K, XS, X, r, b, Y, N);
      break;
    case 1:
      direct_tile_avx512<R, 1>(W, K, XS, X, r, b, Y, N);
      break;
    default:
      break;
  }
}
#pragma GCC diagnostic pop
#endif

#if CC_NEON
// The same on 4 lanes (XS: X rows split in groups of 16, as for AVX2): R = 2 weight rows' converted halves (8
// registers) meet NB <= 4 activation rows (4 registers each), R x NB accumulators.
template <int R, int NB>
CC_INLINE void direct_tile_neon(const bf16_t* W, long K, const float* XS, const float* X, int r, int b0, float* Y,
                                long N) {
  const long Km = K & ~15L;
  const uint32x4_t hi_mask = vdupq_n_u32(0xffff0000u);
  float32x4_t acc[R][NB];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) acc[i][j] = vdupq_n_f32(0.0f);
  const bf16_t* w[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) w[i] = W + (r + i) * K;
  for (long k = 0; k < Km; k += 16) {
    float32x4_t wv[R][4];
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const uint32x4_t v0 = vreinterpretq_u32_u16(vld1q_u16(w[i] + k));
      const uint32x4_t v1 = vreinterpretq_u32_u16(vld1q_u16(w[i] + k + 8));
      wv[i][0] = vreinterpretq_f32_u32(vshlq_n_u32(v0, 16));
      wv[i][1] = vreinterpretq_f32_u32(vshlq_n_u32(v1, 16));
      wv[i][2] = vreinterpretq_f32_u32(vandq_u32(v0, hi_mask));
      wv[i][3] = vreinterpretq_f32_u32(vandq_u32(v1, hi_mask));
    }
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) {
      const float* xs = XS + (b0 + j) * K + k;
      const float32x4_t x0 = vld1q_f32(xs), x1 = vld1q_f32(xs + 4), x2 = vld1q_f32(xs + 8), x3 = vld1q_f32(xs + 12);
#pragma GCC unroll 16
      for (int i = 0; i < R; ++i)
        acc[i][j] = vfmaq_f32(vfmaq_f32(vfmaq_f32(vfmaq_f32(acc[i][j], wv[i][0], x0), wv[i][1], x1), wv[i][2], x2),
                              wv[i][3], x3);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i)
#pragma GCC unroll 16
    for (int j = 0; j < NB; ++j) {
      float t = vaddvq_f32(acc[i][j]);
      for (long k = Km; k < K; ++k) t += bf16_f32(w[i][k]) * X[(b0 + j) * K + k];
      Y[(b0 + j) * N + r + i] = t;
    }
}
template <int R>
void direct_rows_neon(const bf16_t* W, long K, const float* XS, const float* X, int B, int r, float* Y, long N) {
  int b = 0;
  for (; b + 4 <= B; b += 4) direct_tile_neon<R, 4>(W, K, XS, X, r, b, Y, N);
  switch (B - b) {
    case 3:
      direct_tile_neon<R, 3>(W, K, XS, X, r, b, Y, N);
      break;
    case 2:
      direct_tile_neon<R, 2>(W, K, XS, X, r, b, Y, N);
      break;
    case 1:
      direct_tile_neon<R, 1>(W, K, XS, X, r, b, Y, N);
      break;
    default:
      break;
  }
}
#endif  // CC_NEON

// Panel [kc][PN] of W^T: rows n0 .. n0+PN-1 (zero past N), k0 .. k0+kc-1, as fp32.
CC_CLONES void pack_panel(const bf16_t* W, int N, long K, int n0, long k0, int kc, int PN, float* P) {
  for (int i = 0; i < PN; ++i) {
    if (n0 + i >= N) {
      for (int k = 0; k < kc; ++k) P[k * PN + i] = 0.0f;
      continue;
    }
    const bf16_t* w = W + (n0 + i) * K + k0;
    for (int k = 0; k < kc; ++k) P[k * PN + i] = bf16_f32(w[k]);
  }
}

#if CC_X86
// The same, 8 x 8 blocks converted in registers and transposed with unpack/shuffle/permute (PN a multiple of 8).
CC_AVX2_F16C void pack_panel_avx2(const bf16_t* W, int N, long K, int n0, long k0, int kc, int PN, float* P) {
  const int k8 = kc & ~7;
  const int kPanelN = PN;
  for (int g = 0; g < kPanelN; g += 8) {
    const bf16_t* w[8];
    bool full = true;
    for (int i = 0; i < 8; ++i) {
      full = full && n0 + g + i < N;
      w[i] = W + std::min(n0 + g + i, N - 1) * K + k0;
    }
    for (int k = 0; k < k8; k += 8) {
      __m256 r[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        r[i] = _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + k))), 16));
      if (!full)
        for (int i = 0; i < 8; ++i)
          if (n0 + g + i >= N) r[i] = _mm256_setzero_ps();
      const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
      const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
      const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
      const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xee);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xee);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xee);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xee);
      float* o = P + static_cast<long>(k) * kPanelN + g;
      _mm256_storeu_ps(o + 0 * kPanelN, _mm256_permute2f128_ps(u0, u4, 0x20));
      _mm256_storeu_ps(o + 1 * kPanelN, _mm256_permute2f128_ps(u1, u5, 0x20));
      _mm256_storeu_ps(o + 2 * kPanelN, _mm256_permute2f128_ps(u2, u6, 0x20));
      _mm256_storeu_ps(o + 3 * kPanelN, _mm256_permute2f128_ps(u3, u7, 0x20));
      _mm256_storeu_ps(o + 4 * kPanelN, _mm256_permute2f128_ps(u0, u4, 0x31));
      _mm256_storeu_ps(o + 5 * kPanelN, _mm256_permute2f128_ps(u1, u5, 0x31));
      _mm256_storeu_ps(o + 6 * kPanelN, _mm256_permute2f128_ps(u2, u6, 0x31));
      _mm256_storeu_ps(o + 7 * kPanelN, _mm256_permute2f128_ps(u3, u7, 0x31));
    }
    for (int i = 0; i < 8; ++i)
      for (int k = k8; k < kc; ++k) P[k * kPanelN + g + i] = n0 + g + i < N ? bf16_f32(w[i][k]) : 0.0f;
  }
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers
// The same on AVX-512 (PN a multiple of 16): 16 x 16 blocks, widened in zmm and transposed in three shuffle stages
// (in-lane pairs, in-lane quads, then 128-bit lanes): 4 shuffles per row of 16, where the 8 x 8 form takes 3 per
// row of 8.
CC_AVX512_F16C void pack_panel_avx512(const bf16_t* W, int N, long K, int n0, long k0, int kc, int PN, float* P) {
  const int k16 = kc & ~15;
  for (int g = 0; g < PN; g += 16) {
    const bf16_t* w[16];
    bool live[16];
    for (int i = 0; i < 16; ++i) {
      live[i] = n0 + g + i < N;
      w[i] = W + std::min(n0 + g + i, N - 1) * K + k0;
    }
    for (int k = 0; k < k16; k += 16) {
      __m512 r[16], t[16], u[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        r[i] = live[i] ? _mm512_castsi512_ps(_mm512_slli_epi32(
                             _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i] + k))), 16))
                       : _mm512_setzero_ps();
#pragma GCC unroll 8
      for (int i = 0; i < 16; i += 2) {  // t[i], t[i + 1]: rows i, i + 1 interleaved within each lane
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
      }
#pragma GCC unroll 4
      for (int q = 0; q < 16; q += 4) {  // u[q + m]: rows q .. q + 3 of column 4L + m, in lane L
        u[q + 0] = _mm512_shuffle_ps(t[q], t[q + 2], 0x44);
        u[q + 1] = _mm512_shuffle_ps(t[q], t[q + 2], 0xee);
        u[q + 2] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0x44);
        u[q + 3] = _mm512_shuffle_ps(t[q + 1], t[q + 3], 0xee);
      }
      float* o = P + static_cast<long>(k) * PN + g;
#pragma GCC unroll 4
      for (int m = 0; m < 4; ++m) {  // column 4L + m: lane L of u[m], u[4 + m], u[8 + m], u[12 + m]
        const __m512 x0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x44), x1 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xee);
        const __m512 y0 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x44),
                     y1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xee);
        _mm512_storeu_ps(o + (0 + m) * PN, _mm512_shuffle_f32x4(x0, y0, 0x88));
        _mm512_storeu_ps(o + (4 + m) * PN, _mm512_shuffle_f32x4(x0, y0, 0xdd));
        _mm512_storeu_ps(o + (8 + m) * PN, _mm512_shuffle_f32x4(x1, y1, 0x88));
        _mm512_storeu_ps(o + (12 + m) * PN, _mm512_shuffle_f32x4(x1, y1, 0xdd));
      }
    }
    for (int i = 0; i < 16; ++i)
      for (int k = k16; k < kc; ++k) P[k * PN + g + i] = live[i] ? bf16_f32(w[i][k]) : 0.0f;
  }
}
#pragma GCC diagnostic pop
#endif

// The panel tiles, one source (gemm_tile.inc) per vector type.
using TileFn = void (*)(const float*, const float*, int, float*, long, int);
namespace tile_portable {
struct V {  // one "vector" of 8 floats in plain C++ (the compiler vectorises what the target allows)
  struct Reg {
    float v[8];
  };
  static constexpr int kLanes = 8;
  static CC_INLINE Reg zero() { return Reg{}; }
  static CC_INLINE Reg load(const float* p) {
    Reg r;
    std::memcpy(r.v, p, sizeof r.v);
    return r;
  }
  static CC_INLINE void store(float* p, const Reg& r) { std::memcpy(p, r.v, sizeof r.v); }
  static CC_INLINE Reg broadcast(const float* p) {
    Reg r;
    for (float& x : r.v) x = *p;
    return r;
  }
  static CC_INLINE Reg fmadd(const Reg& a, const Reg& b, Reg c) {
    for (int i = 0; i < 8; ++i) c.v[i] += a.v[i] * b.v[i];
    return c;
  }
  static CC_INLINE Reg add(Reg a, const Reg& b) {
    for (int i = 0; i < 8; ++i) a.v[i] += b.v[i];
    return a;
  }
};
#define CC_TILE_TARGET CC_CLONES
#include "gemm_tile.inc"
#undef CC_TILE_TARGET
}  // namespace tile_portable
#if CC_X86
namespace tile_avx2 {
struct V {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  static CC_AVX2_F16C CC_INLINE Reg zero() { return _mm256_setzero_ps(); }
  static CC_AVX2_F16C CC_INLINE Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static CC_AVX2_F16C CC_INLINE void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static CC_AVX2_F16C CC_INLINE Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static CC_AVX2_F16C CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static CC_AVX2_F16C CC_INLINE Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
};
#define CC_TILE_TARGET CC_AVX2_F16C
#include "gemm_tile.inc"
#undef CC_TILE_TARGET
}  // namespace tile_avx2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers
namespace tile_avx512 {
struct V {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static CC_AVX512_F16C CC_INLINE Reg zero() { return _mm512_setzero_ps(); }
  static CC_AVX512_F16C CC_INLINE Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static CC_AVX512_F16C CC_INLINE void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static CC_AVX512_F16C CC_INLINE Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static CC_AVX512_F16C CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static CC_AVX512_F16C CC_INLINE Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
};
#define CC_TILE_TARGET CC_AVX512_F16C
#include "gemm_tile.inc"
#undef CC_TILE_TARGET
}  // namespace tile_avx512
#pragma GCC diagnostic pop
// The AVX-512 tile's shape (16 lanes, 12 x 32) on two ymm per register: what the tests run where no AVX-512 is.
namespace tile_emulated512 {
struct V {
  struct Reg {
    __m256 lo, hi;
  };
  static constexpr int kLanes = 16;
  static CC_AVX2_F16C CC_INLINE Reg zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static CC_AVX2_F16C CC_INLINE Reg load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static CC_AVX2_F16C CC_INLINE void store(float* p, Reg r) {
    _mm256_storeu_ps(p, r.lo), _mm256_storeu_ps(p + 8, r.hi);
  }
  static CC_AVX2_F16C CC_INLINE Reg broadcast(const float* p) {
    return {_mm256_broadcast_ss(p), _mm256_broadcast_ss(p)};
  }
  static CC_AVX2_F16C CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static CC_AVX2_F16C CC_INLINE Reg add(Reg a, Reg b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
};
#define CC_TILE_TARGET CC_AVX2_F16C
#include "gemm_tile.inc"
#undef CC_TILE_TARGET
}  // namespace tile_emulated512
#endif
#if CC_NEON
// 4 lanes: a 12 x 8 tile, 24 accumulators of the 32 vector registers (two FMAs per broadcast).
namespace tile_neon {
struct V {
  using Reg = float32x4_t;
  static constexpr int kLanes = 4;
  static CC_INLINE Reg zero() { return vdupq_n_f32(0.0f); }
  static CC_INLINE Reg load(const float* p) { return vld1q_f32(p); }
  static CC_INLINE void store(float* p, Reg r) { vst1q_f32(p, r); }
  static CC_INLINE Reg broadcast(const float* p) { return vld1q_dup_f32(p); }
  static CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return vfmaq_f32(c, a, b); }
  static CC_INLINE Reg add(Reg a, Reg b) { return vaddq_f32(a, b); }
};
#define CC_TILE_TARGET
#include "gemm_tile.inc"
#undef CC_TILE_TARGET
}  // namespace tile_neon
#endif

// A path's panel: its width (two vectors), the rows of its register tile and the tile for each row count.
struct PanelKernel {
  const char* isa = "portable";  // what gemm_bf16_last_tile() reports after a call that ran it
  int panel_n = 16, tile_b = 6;
  TileFn tiles[kMaxTileB + 1] = {};
};
template <template <int> class T, int... M>
PanelKernel panel_kernel(const char* isa, int panel_n, std::integer_sequence<int, M...>) {
  PanelKernel k;
  k.isa = isa;
  k.panel_n = panel_n;
  k.tile_b = static_cast<int>(sizeof...(M));
  ((k.tiles[M + 1] = T<M + 1>::fn), ...);
  return k;
}
#define CC_TILE_REF(ns)                              \
  template <int MB>                                  \
  struct ns##_ref {                                  \
    static constexpr TileFn fn = ns::panel_tile<MB>; \
  };
CC_TILE_REF(tile_portable)
#if CC_X86
CC_TILE_REF(tile_avx2)
CC_TILE_REF(tile_avx512)
CC_TILE_REF(tile_emulated512)
#endif
#if CC_NEON
CC_TILE_REF(tile_neon)
#endif
#undef CC_TILE_REF
const PanelKernel& panel_for(Path pth) {
#if CC_X86
  static const PanelKernel avx2 = panel_kernel<tile_avx2_ref>("avx2", 16, std::make_integer_sequence<int, 6>());
  static const PanelKernel avx512 = panel_kernel<tile_avx512_ref>("avx512", 32, std::make_integer_sequence<int, 12>());
  static const PanelKernel emulated =
      panel_kernel<tile_emulated512_ref>("avx512_emulated", 32, std::make_integer_sequence<int, 12>());
  if (pth == kAvx512) return avx512;
  if (pth == kEmulated512) return emulated;
  if (pth == kAvx2) return avx2;
#endif
#if CC_NEON
  static const PanelKernel neon = panel_kernel<tile_neon_ref>("neon", 8, std::make_integer_sequence<int, 12>());
  if (pth == kNeon) return neon;
#endif
  static const PanelKernel portable =
      panel_kernel<tile_portable_ref>("portable", 16, std::make_integer_sequence<int, 6>());
  return portable;
}

// The tiles the last gemm_pass ran (a check reads it after its timed call).
std::atomic<const char*> g_last_tile{""};
}  // namespace

const char* gemm_last_tile() { return g_last_tile.load(); }

void gemm_pass(Path pth, const bf16_t* W, int N, int K, const float* X, int B, float* Y, int threads,
               bool narrow_panel) {
  pth = bf16_kernels_path(pth);
#if CC_NEON
  if (pth == kNeon && B <= kDirectMaxB) {
    g_last_tile = "neon";
    std::vector<float> xs(static_cast<std::size_t>(B) * K);
    for (int b = 0; b < B; ++b) split_pairs(X + static_cast<long>(b) * K, K, 16, &xs[static_cast<std::size_t>(b) * K]);
    const int chunk = row_chunk(N, static_cast<std::size_t>(K) * 2, threads);
    parallel_rows(N, chunk, threads, [&](int r0, int r1) {
      int r = r0;
      for (; r + 2 <= r1; r += 2) direct_rows_neon<2>(W, K, xs.data(), X, B, r, Y, N);
      for (; r < r1; ++r) direct_rows_neon<1>(W, K, xs.data(), X, B, r, Y, N);
    });
    return;
  }
#endif
#if CC_X86
  if (pth != kPortable && B <= kDirectMaxB) {  // (the emulated AVX-512 path runs the AVX2 direct tile)
    g_last_tile = pth == kAvx512 ? "avx512" : "avx2";
    std::vector<float> xs(static_cast<std::size_t>(B) * K);
    const int group = pth == kAvx512 ? 32 : 16;
    for (int b = 0; b < B; ++b)
      split_pairs(X + static_cast<long>(b) * K, K, group, &xs[static_cast<std::size_t>(b) * K]);
    const int chunk = row_chunk(N, static_cast<std::size_t>(K) * 2, threads);
    parallel_rows(N, chunk, threads, [&](int r0, int r1) {
      int r = r0;
      if (pth == kAvx512) {
        for (; r + 4 <= r1; r += 4) direct_rows_avx512<4>(W, K, xs.data(), X, B, r, Y, N);
        for (; r < r1; ++r) direct_rows_avx512<1>(W, K, xs.data(), X, B, r, Y, N);
        return;
      }
      for (; r + 2 <= r1; r += 2) direct_rows_avx2<2>(W, K, xs.data(), X, B, r, Y, N);
      for (; r < r1; ++r) direct_rows_avx2<1>(W, K, xs.data(), X, B, r, Y, N);
    });
    return;
  }
#endif
  // (A planted fault runs the AVX2 panel's tiles on the AVX-512 path: right, and narrower.)
  const PanelKernel& pk = panel_for(narrow_panel && pth == kAvx512 ? kAvx2 : pth);
  g_last_tile = pk.isa;
  const int PN = pk.panel_n, TB = pk.tile_b;
  const int panels = (N + PN - 1) / PN, tiles = (B + TB - 1) / TB;
  // For each k block: the block of X packed once for every panel (each register tile's rows k-major, [k][mb]: its
  // broadcasts one contiguous stream; rows K floats apart are as many streams, and at a power-of-two K they fall
  // in one set of the L1, whose ways they then take from the panel), then one task per panel of output columns
  // (pulled dynamically): Y's columns zeroed in the first block, the panel packed once and run against every tile.
  float* XP = scratch_floats(2, static_cast<std::size_t>(tiles) * TB * std::min(kGemmKc, K));
  for (int k0 = 0; k0 < K; k0 += kGemmKc) {
    const int kc = std::min(kGemmKc, K - k0);
    parallel_rows(tiles, 1, threads, [&](int t0, int t1) {
      for (int t = t0; t < t1; ++t) {
        const int b = t * TB, mb = std::min(TB, B - b);
        float* o = XP + static_cast<std::size_t>(t) * TB * kc;
        for (int i = 0; i < mb; ++i) {
          const float* x = X + static_cast<long>(b + i) * K + k0;
          for (int k = 0; k < kc; ++k) o[k * mb + i] = x[k];
        }
      }
    });
    parallel_rows(panels, 1, threads, [&](int p0, int p1) {
      float* P = scratch_floats(1, static_cast<std::size_t>(kGemmKc) * kMaxPanelN);
      for (int p = p0; p < p1; ++p) {
        const int n = p * PN, cols = std::min(PN, N - n);
        if (k0 == 0)
          for (int b = 0; b < B; ++b)
            std::fill(Y + static_cast<long>(b) * N + n, Y + static_cast<long>(b) * N + n + cols, 0.0f);
#if CC_X86
        if (pth == kAvx512)
          pack_panel_avx512(W, N, K, n, k0, kc, PN, P);
        else if (pth != kPortable)
          pack_panel_avx2(W, N, K, n, k0, kc, PN, P);
        else
#endif
          pack_panel(W, N, K, n, k0, kc, PN, P);
        for (int t = 0; t < tiles; ++t) {
          const int b = t * TB, mb = std::min(TB, B - b);
          pk.tiles[mb](XP + static_cast<std::size_t>(t) * TB * kc, P, kc, Y + static_cast<long>(b) * N + n, N, cols);
        }
      }
    });
  }
}

}  // namespace claimcheck::kernels::gemv_detail
