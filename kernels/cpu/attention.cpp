// Causal attention kernels, fp32 and fp64.
//   v1 plain: the series' algorithm row by row — scores, causal mask, max-subtracted softmax, weighted sum.
//   v2 tiled: online softmax over key tiles (FlashAttention's recurrence); never holds a T x T matrix,
//             skips the tiles above the diagonal; loops written broadcast-FMA style so they vectorise.
//   v3 register-blocked: v2's recurrence with AVX2+FMA intrinsics, 6 x 16 register-blocked micro-kernels for
//             q k^T and p v with the queries in the vector lanes (fp32; fp64 and CPUs without AVX2 run v2's code).
// All are multi-threaded over (batch x head x query tile); v1 and v2 are compiled for AVX-512, AVX2 and a portable
// baseline (GCC target_clones), the CPU picking one at load time; v3 picks its AVX2 path at run time.
#include "claimcheck/kernels/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CC_CLONES
#endif
#define CC_INLINE inline __attribute__((always_inline))

namespace claimcheck::kernels {
namespace {

constexpr int kTileQ = 32;
constexpr int kTileK = 64;
constexpr int kMaxD = 256;

// exp for fp32, branch-free so that loops over it vectorise: 2^n * p(r), r in [-ln2/2, ln2/2],
// degree-6 polynomial (relative error ~2e-7); exp(-inf) = 0, exp(x > 88.7) = inf.
CC_INLINE float exp_f32(float x) {
  const float xc = std::min(std::max(x, -87.3f), 88.7f);
  const float n = std::nearbyint(xc * 1.44269504088896341f);
  float r = xc - n * 0.693145751953125f;
  r = r - n * 1.428606765330187e-06f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  float y = p * scale;
  y = x < -87.3f ? 0.0f : y;
  y = x > 88.7f ? std::numeric_limits<float>::infinity() : y;
  return y;
}
CC_INLINE double exp_any(double x) { return std::exp(x); }
CC_INLINE float exp_any(float x) { return exp_f32(x); }

template <typename T>
struct Args {
  const T *q, *k, *v;
  T* out;
  AttentionShape s;
  AttentionFaults f;
};

template <typename T>
CC_INLINE T scale_of(const Args<T>& a) {
  return a.f.scale_by_d ? T(1) / T(a.s.D) : T(1) / std::sqrt(T(a.s.D));
}
// Last key index query i may see.
template <typename T>
CC_INLINE int last_key(const Args<T>& a, int i) {
  return std::min(a.s.T - 1, i + (a.f.mask_off_by_one ? 1 : 0));
}

// One (batch, head) slice of the inputs and the output.
template <typename T>
struct Head {
  const T *q, *k, *v;
  T* o;
};
template <typename T>
CC_INLINE Head<T> head_of(const Args<T>& a, long bh) {
  const long off = bh * a.s.T * a.s.D;
  return {a.q + off, a.k + off, a.v + off, a.out + off};
}

// ---- v1: plain ---------------------------------------------------------------
template <typename T>
CC_INLINE void plain_rows(const Args<T>& a, long bh, int i0, int i1) {
  const int T_ = a.s.T, D = a.s.D;
  const auto [q, k, v, o] = head_of(a, bh);
  const T scale = scale_of(a);
  std::vector<T> p(T_);
  for (int i = i0; i < i1; ++i) {
    const int last = last_key(a, i);
    T m = -std::numeric_limits<T>::infinity();
    for (int j = 0; j <= last; ++j) {  // scores
      T s = 0;
      for (int d = 0; d < D; ++d) s += q[i * D + d] * k[j * D + d];
      p[j] = s * scale;
      m = std::max(m, p[j]);
    }
    if (a.f.no_max_subtraction) m = 0;
    T sum = 0;
    for (int j = 0; j <= last; ++j) {  // softmax numerator
      p[j] = exp_any(p[j] - m);
      sum += p[j];
    }
    T* oi = o + static_cast<long>(i) * D;
    for (int d = 0; d < D; ++d) oi[d] = 0;
    for (int j = 0; j <= last; ++j) {  // weighted sum
      const T w = p[j] / sum;
      for (int d = 0; d < D; ++d) oi[d] += w * v[j * D + d];
    }
  }
}

// ---- v2: tiled online softmax ------------------------------------------------
template <typename T>
CC_INLINE void tiled_tile(const Args<T>& a, long bh, int qt) {
  const int T_ = a.s.T, D = a.s.D;
  const auto [q, k, v, o] = head_of(a, bh);
  const T scale = scale_of(a);
  const int i0 = qt * kTileQ, i1 = std::min(T_, i0 + kTileQ), rows = i1 - i0;

  alignas(64) T S[kTileQ][kTileK];
  alignas(64) T KT[kMaxD][kTileK];
  alignas(64) T acc[kTileQ][kMaxD];
  alignas(64) T qs[kTileQ][kMaxD];
  T m[kTileQ], l[kTileQ];
  for (int r = 0; r < rows; ++r) {
    m[r] = -std::numeric_limits<T>::infinity();
    l[r] = 0;
    for (int d = 0; d < D; ++d) {
      acc[r][d] = 0;
      qs[r][d] = q[(i0 + r) * D + d] * scale;
    }
  }
  const int key_end = std::min(T_, last_key(a, i1 - 1) + 1);
  for (int j0 = 0; j0 < key_end; j0 += kTileK) {
    const int cols = std::min(kTileK, key_end - j0);
    // K tile transposed: KT[d][j] so that S rows accumulate as broadcast-FMA over j.
    for (int j = 0; j < kTileK; ++j)
      for (int d = 0; d < D; ++d) KT[d][j] = j < cols ? k[(j0 + j) * D + d] : T(0);
    for (int r = 0; r < rows; ++r) {
      T srow[kTileK];
      for (int j = 0; j < kTileK; ++j) srow[j] = 0;
      for (int d = 0; d < D; ++d) {
        const T qd = qs[r][d];
        for (int j = 0; j < kTileK; ++j) srow[j] += qd * KT[d][j];
      }
      const int last = last_key(a, i0 + r) - j0;  // keys beyond it are masked
      for (int j = 0; j < kTileK; ++j) S[r][j] = (j <= last && j < cols) ? srow[j] : -std::numeric_limits<T>::infinity();
    }
    for (int r = 0; r < rows; ++r) {
      T mt = m[r];
      for (int j = 0; j < kTileK; ++j) mt = std::max(mt, S[r][j]);
      if (a.f.no_max_subtraction) mt = 0;
      const T corr = (m[r] == -std::numeric_limits<T>::infinity() || a.f.no_max_subtraction) ? T(1) : exp_any(m[r] - mt);
      T sum = 0;
      for (int j = 0; j < kTileK; ++j) {
        const T p = exp_any(S[r][j] - mt);
        S[r][j] = p;
        sum += p;
      }
      l[r] = l[r] * corr + sum;
      m[r] = mt;
      for (int d = 0; d < D; ++d) acc[r][d] *= corr;
      for (int j = 0; j < cols; ++j) {
        const T p = S[r][j];
        const T* vj = v + static_cast<long>(j0 + j) * D;
        for (int d = 0; d < D; ++d) acc[r][d] += p * vj[d];
      }
    }
  }
  for (int r = 0; r < rows; ++r) {
    const T inv = T(1) / l[r];
    for (int d = 0; d < D; ++d) o[static_cast<long>(i0 + r) * D + d] = acc[r][d] * inv;
  }
}

// Non-template entry points carry the ISA clones (GCC does not clone templates).
CC_CLONES void plain_rows_f32(const Args<float>& a, long bh, int i0, int i1) { plain_rows(a, bh, i0, i1); }
CC_CLONES void plain_rows_f64(const Args<double>& a, long bh, int i0, int i1) { plain_rows(a, bh, i0, i1); }
CC_CLONES void tiled_tile_f32(const Args<float>& a, long bh, int qt) { tiled_tile(a, bh, qt); }
CC_CLONES void tiled_tile_f64(const Args<double>& a, long bh, int qt) { tiled_tile(a, bh, qt); }
void rows(const Args<float>& a, long bh, int i0, int i1) { plain_rows_f32(a, bh, i0, i1); }
void rows(const Args<double>& a, long bh, int i0, int i1) { plain_rows_f64(a, bh, i0, i1); }
void tile(const Args<float>& a, long bh, int qt) { tiled_tile_f32(a, bh, qt); }
void tile(const Args<double>& a, long bh, int qt) { tiled_tile_f64(a, bh, qt); }

// ---- v3: register-blocked (AVX2 + FMA) ---------------------------------------
// v2's online softmax, laid out so that every inner loop is a register-blocked outer product with the queries in
// the vector lanes. Per task (batch, head, kV3Q queries) Q is packed once, transposed (QT[d][i]); the softmax runs
// in base 2 (exp2 of fma(s, log2(e)/sqrt(D), -shift)); the output accumulates transposed (OT[d][i]); both are stored
// group-major (16 queries x D contiguous, so a group's slice does not alias in L1). For each key tile of kV3K keys
// (the next tile prefetched meanwhile) and each group of 16 queries (two ymm):
//   S^T[j][i] = sum_d k[j][d] * QT[d][i]   6 keys x 16 queries in 12 ymm accumulators; k broadcast from its own
//                                           row-major layout, so neither K nor V is ever packed;
//   softmax per query = per lane: max, exp2 and sums are vertical (no horizontal reductions);
//   OT[d][i] += sum_j v[j][d] * P^T[j][i]  6 dims x 16 queries in 12 ymm accumulators, v broadcast likewise.
// Keys past a group's last visible key are never computed (per 16-query group, so the causal triangle wastes at
// most a 16 x 16 half block per group and tile); the mask is applied only where a group straddles the diagonal.
// Machines without AVX2+FMA run v2's code; AVX-512 machines run this AVX2 code.
#if defined(__x86_64__) && defined(__GNUC__)
#define CC_HAVE_AVX2_PATH 1
constexpr int kV3Q = 128;  // queries per task, a multiple of 16
constexpr int kV3K = 48;   // keys per tile, a multiple of 6: the K (or V) tile, 16 queries of Q^T (or O^T) and S^T
                           // fit L1 together at D = 64
#define CC_AVX2 __attribute__((target("avx2,fma")))
#define CC_AVX2_INLINE inline __attribute__((always_inline, target("avx2,fma")))

// 2^x for x <= 128: 2^n * p(f), n = round(x), f = x - n in [-1/2, 1/2], degree-6 fit with p(0) = 1 exactly
// (relative error ~1e-7); x = -inf (masked) gives 0, x >= 128 gives inf.
CC_AVX2_INLINE __m256 exp2_ps(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-127.0f));
  x = _mm256_min_ps(x, _mm256_set1_ps(128.0f));
  const __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_sub_ps(x, n);
  __m256 p = _mm256_set1_ps(1.5353361959569156e-4f);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3398875016719103e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.61843691766262e-3f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5503323674201965e-2f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022647738456726e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.931471824645996e-1f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// s[r][0..15] = sum_d k[r * D + d] * qt[d * ldq + 0..15], r < R; with `mask`, entries whose key j + r lies past
// the query's last visible key (last[0..15]) become -inf; x0, x1 take the running max of the 16 lanes.
template <int R>
CC_AVX2_INLINE void v3_qk(const float* qt, int ldq, const float* k, int D, float* s, bool mask, const std::int32_t* last,
                          int j, __m256& x0, __m256& x1) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) a0[r] = a1[r] = _mm256_setzero_ps();
#pragma GCC unroll 2
  for (int d = 0; d < D; ++d) {
    const __m256 q0 = _mm256_load_ps(qt + static_cast<long>(d) * ldq);
    const __m256 q1 = _mm256_load_ps(qt + static_cast<long>(d) * ldq + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_broadcast_ss(k + r * D + d);
      a0[r] = _mm256_fmadd_ps(b, q0, a0[r]);
      a1[r] = _mm256_fmadd_ps(b, q1, a1[r]);
    }
  }
  if (mask) {
    const __m256i l0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(last));
    const __m256i l1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(last + 8));
    const __m256 minf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256i jj = _mm256_set1_epi32(j + r);
      a0[r] = _mm256_blendv_ps(a0[r], minf, _mm256_castsi256_ps(_mm256_cmpgt_epi32(jj, l0)));
      a1[r] = _mm256_blendv_ps(a1[r], minf, _mm256_castsi256_ps(_mm256_cmpgt_epi32(jj, l1)));
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(s + r * 16, a0[r]);
    _mm256_store_ps(s + r * 16 + 8, a1[r]);
    x0 = _mm256_max_ps(x0, a0[r]);
    x1 = _mm256_max_ps(x1, a1[r]);
  }
}

// ot[r][0..15] = ot[r][0..15] * corr + sum_j v[j * D + r] * p[j][0..15], r < R, j < n.
template <int R>
CC_AVX2_INLINE void v3_pv(const float* p, int n, const float* v, int D, float* ot, int ldo, __m256 c0, __m256 c1) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    a0[r] = _mm256_mul_ps(_mm256_load_ps(ot + r * ldo), c0);
    a1[r] = _mm256_mul_ps(_mm256_load_ps(ot + r * ldo + 8), c1);
  }
#pragma GCC unroll 2
  for (int j = 0; j < n; ++j) {
    const __m256 p0 = _mm256_load_ps(p + j * 16), p1 = _mm256_load_ps(p + j * 16 + 8);
    const float* vj = v + static_cast<long>(j) * D;
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_broadcast_ss(vj + r);
      a0[r] = _mm256_fmadd_ps(b, p0, a0[r]);
      a1[r] = _mm256_fmadd_ps(b, p1, a1[r]);
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(ot + r * ldo, a0[r]);
    _mm256_store_ps(ot + r * ldo + 8, a1[r]);
  }
}

// 8 x 8 transpose of r[0..7] in place.
CC_AVX2_INLINE void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

CC_AVX2 void v3_tile_avx2(const Args<float>& a, long bh, int qt) {
  const int T_ = a.s.T, D = a.s.D;
  const auto [q, k, v, o] = head_of(a, bh);
  const int i0 = qt * kV3Q, rows = std::min(kV3Q, T_ - i0), groups = (rows + 15) / 16, cols = groups * 16;
  // Scores stay unscaled (as the library's GEMM leaves them): the exponent is fma(s, c, -m * c), whose product is
  // exact, so no rounding grows with |s| beyond the dot product's own (folding c into q costs ~3x the error on
  // large logits). m is the running max of the raw scores; m * c the shift, the same value in every tile.
  const float c = scale_of(a) * 1.44269504088896341f;  // log2(e): softmax in base 2
  const __m256 vc = _mm256_set1_ps(c);
  const float ninf = -std::numeric_limits<float>::infinity();
  const bool no_max = a.f.no_max_subtraction;

  // Group-major: group g's 16 queries are QT[g][d][0..15] (D x 16 contiguous floats), likewise OT. 2 x 128 KiB
  // of stack at most (D = 256).
  alignas(64) float QT[kMaxD * kV3Q];
  alignas(64) float OT[kMaxD * kV3Q];
  alignas(64) float S[kV3K * 16];
  alignas(32) float m[kV3Q], l[kV3Q];
  alignas(32) std::int32_t lastk[kV3Q];
  for (int i = 0; i < cols; ++i) {
    m[i] = ninf;
    l[i] = 0;
    lastk[i] = last_key(a, i0 + std::min(i, rows - 1));  // padding columns copy the last row's mask
  }
  if (D % 8 == 0) {
    for (int i = 0; i < cols; i += 8)
      for (int d = 0; d < D; d += 8) {
        __m256 r[8];
        for (int x = 0; x < 8; ++x)
          r[x] = i + x < rows ? _mm256_loadu_ps(q + static_cast<long>(i0 + i + x) * D + d) : _mm256_setzero_ps();
        transpose8(r);
        float* dst = QT + (static_cast<long>(i / 16) * D + d) * 16 + i % 16;
        for (int x = 0; x < 8; ++x) _mm256_store_ps(dst + x * 16, r[x]);
      }
  } else {
    for (int i = 0; i < cols; ++i) {
      const float* qi = q + static_cast<long>(i0 + std::min(i, rows - 1)) * D;
      float* dst = QT + static_cast<long>(i / 16) * D * 16 + i % 16;
      for (int d = 0; d < D; ++d) dst[d * 16] = i < rows ? qi[d] : 0.0f;
    }
  }
  std::fill(OT, OT + static_cast<long>(D) * cols, 0.0f);

  const int key_end = lastk[rows - 1] + 1;
  for (int j0 = 0; j0 < key_end; j0 += kV3K) {
    const int nk = std::min(kV3K, key_end - j0);
    const float* kt = k + static_cast<long>(j0) * D;
    const float* vt = v + static_cast<long>(j0) * D;
    // The next tile's K and V rows (contiguous), requested a share per group so they arrive while this one runs.
    const long next_bytes = static_cast<long>(std::min(kV3K, std::max(0, key_end - j0 - nk))) * D * 4;
    for (int g = 0; g < groups; ++g) {
      for (long b = next_bytes * g / groups; b < next_bytes * (g + 1) / groups; b += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(kt + static_cast<long>(nk) * D) + b, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(vt + static_cast<long>(nk) * D) + b, _MM_HINT_T0);
      }
      const int c0 = g * 16;
      const int n = std::min(nk, lastk[c0 + 15] - j0 + 1);  // keys any query of the group sees
      if (n <= 0) continue;
      // S^T = K Q^T for the group, 6 keys at a time; the causal mask only where some query of the group cannot
      // see the group's last key; the running max per query (lane).
      const bool mask = j0 + n - 1 > lastk[c0];
      const std::int32_t* lg = lastk + c0;
      const float* qg = QT + static_cast<long>(g) * D * 16;
      float* og = OT + static_cast<long>(g) * D * 16;
      const __m256 m0 = _mm256_load_ps(m + c0), m1 = _mm256_load_ps(m + c0 + 8);
      __m256 x0 = m0, x1 = m1;
      int jr = 0;
      for (; jr + 6 <= n; jr += 6)
        v3_qk<6>(qg, 16, kt + static_cast<long>(jr) * D, D, S + jr * 16, mask, lg, j0 + jr, x0, x1);
      switch (n - jr) {
        case 5: v3_qk<5>(qg, 16, kt + static_cast<long>(jr) * D, D, S + jr * 16, mask, lg, j0 + jr, x0, x1); break;
        case 4: v3_qk<4>(qg, 16, kt + static_cast<long>(jr) * D, D, S + jr * 16, mask, lg, j0 + jr, x0, x1); break;
        case 3: v3_qk<3>(qg, 16, kt + static_cast<long>(jr) * D, D, S + jr * 16, mask, lg, j0 + jr, x0, x1); break;
        case 2: v3_qk<2>(qg, 16, kt + static_cast<long>(jr) * D, D, S + jr * 16, mask, lg, j0 + jr, x0, x1); break;
        case 1: v3_qk<1>(qg, 16, kt + static_cast<long>(jr) * D, D, S + jr * 16, mask, lg, j0 + jr, x0, x1); break;
        default: break;
      }
      // Online softmax, per lane.
      _mm256_store_ps(m + c0, x0);
      _mm256_store_ps(m + c0 + 8, x1);
      __m256 corr0 = _mm256_set1_ps(1.0f), corr1 = corr0, sh0, sh1;
      if (no_max) {
        sh0 = sh1 = _mm256_setzero_ps();
      } else {
        sh0 = _mm256_mul_ps(x0, vc);
        sh1 = _mm256_mul_ps(x1, vc);
        corr0 = exp2_ps(_mm256_sub_ps(_mm256_mul_ps(m0, vc), sh0));
        corr1 = exp2_ps(_mm256_sub_ps(_mm256_mul_ps(m1, vc), sh1));
      }
      __m256 sum0 = _mm256_setzero_ps(), sum1 = sum0;
      for (int j = 0; j < n; ++j) {
        const __m256 p0 = exp2_ps(_mm256_fmsub_ps(_mm256_load_ps(S + j * 16), vc, sh0));
        const __m256 p1 = exp2_ps(_mm256_fmsub_ps(_mm256_load_ps(S + j * 16 + 8), vc, sh1));
        _mm256_store_ps(S + j * 16, p0);
        _mm256_store_ps(S + j * 16 + 8, p1);
        sum0 = _mm256_add_ps(sum0, p0);
        sum1 = _mm256_add_ps(sum1, p1);
      }
      _mm256_store_ps(l + c0, _mm256_fmadd_ps(_mm256_load_ps(l + c0), corr0, sum0));
      _mm256_store_ps(l + c0 + 8, _mm256_fmadd_ps(_mm256_load_ps(l + c0 + 8), corr1, sum1));
      // OT = OT * corr + V^T P^T, 6 dims at a time.
      int d0 = 0;
      for (; d0 + 6 <= D; d0 += 6) v3_pv<6>(S, n, vt + d0, D, og + d0 * 16, 16, corr0, corr1);
      switch (D - d0) {
        case 5: v3_pv<5>(S, n, vt + d0, D, og + d0 * 16, 16, corr0, corr1); break;
        case 4: v3_pv<4>(S, n, vt + d0, D, og + d0 * 16, 16, corr0, corr1); break;
        case 3: v3_pv<3>(S, n, vt + d0, D, og + d0 * 16, 16, corr0, corr1); break;
        case 2: v3_pv<2>(S, n, vt + d0, D, og + d0 * 16, 16, corr0, corr1); break;
        case 1: v3_pv<1>(S, n, vt + d0, D, og + d0 * 16, 16, corr0, corr1); break;
        default: break;
      }
    }
  }
  // out[i][d] = OT[d][i] / l[i], transposed back 8 x 8.
  if (D % 8 == 0) {
    for (int i = 0; i < rows; i += 8) {
      const float* src = OT + static_cast<long>(i / 16) * D * 16 + i % 16;
      for (int d = 0; d < D; d += 8) {
        __m256 r[8];
        for (int x = 0; x < 8; ++x) r[x] = _mm256_load_ps(src + (d + x) * 16);
        transpose8(r);
        for (int x = 0; x < 8 && i + x < rows; ++x)
          _mm256_storeu_ps(o + static_cast<long>(i0 + i + x) * D + d, _mm256_mul_ps(r[x], _mm256_set1_ps(1.0f / l[i + x])));
      }
    }
  } else {
    for (int i = 0; i < rows; ++i) {
      const float inv = 1.0f / l[i];
      const float* src = OT + static_cast<long>(i / 16) * D * 16 + i % 16;
      float* oi = o + static_cast<long>(i0 + i) * D;
      for (int d = 0; d < D; ++d) oi[d] = src[d * 16] * inv;
    }
  }
}

bool v3_has_avx2() {
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  }();
  return yes;
}
#endif

// v3's tasks: kV3Q query rows each where the AVX2 path runs, v2's kTileQ rows otherwise (and in fp64).
long v3_tiles(const AttentionShape& s, bool fp32) {
#ifdef CC_HAVE_AVX2_PATH
  if (fp32 && v3_has_avx2()) return (s.T + kV3Q - 1) / kV3Q;
#endif
  (void)fp32;
  return (s.T + kTileQ - 1) / kTileQ;
}
void register_tile(const Args<float>& a, long bh, int qt) {
#ifdef CC_HAVE_AVX2_PATH
  if (v3_has_avx2()) return v3_tile_avx2(a, bh, qt);
#endif
  tiled_tile_f32(a, bh, qt);
}
void register_tile(const Args<double>& a, long bh, int qt) { tiled_tile_f64(a, bh, qt); }

// Runs fn(task) for task in [0, n) on `threads` threads, biggest tasks first (causal rows late in the
// sequence cost more: tasks are numbered so that higher numbers are cheaper).
template <typename Fn>
void parallel_for(long n, int threads, Fn fn) {
  threads = static_cast<int>(std::max<long>(1, std::min<long>(threads, n)));
  if (threads == 1) {
    for (long t = 0; t < n; ++t) fn(t);
    return;
  }
  std::atomic<long> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&] {
      for (long t; (t = next.fetch_add(1)) < n;) fn(t);
    });
  for (auto& th : pool) th.join();
}

template <typename T>
void forward(int version, const T* q, const T* k, const T* v, T* out, const AttentionShape& s, const AttentionOptions& o) {
  if (s.B < 1 || s.H < 1 || s.T < 1 || s.D < 1 || s.D > kMaxD)
    throw std::invalid_argument("attention: bad shape (B, H, T >= 1; 1 <= D <= 256)");
  const Args<T> a{q, k, v, out, s, o.faults};
  const long bh = static_cast<long>(s.B) * s.H;
  if (version == kAttentionPlain) {
    constexpr int kRows = 16;
    const long blocks = (s.T + kRows - 1) / kRows;
    parallel_for(bh * blocks, o.threads, [&](long t) {
      const long b = blocks - 1 - t / bh;  // last rows first
      const int i0 = static_cast<int>(b * kRows);
      rows(a, t % bh, i0, std::min(s.T, i0 + kRows));
    });
  } else if (version == kAttentionTiled) {
    const long tiles = (s.T + kTileQ - 1) / kTileQ;
    parallel_for(bh * tiles, o.threads, [&](long t) { tile(a, t % bh, static_cast<int>(tiles - 1 - t / bh)); });
  } else if (version == kAttentionRegister) {
    const long tiles = v3_tiles(s, sizeof(T) == sizeof(float));
    parallel_for(bh * tiles, o.threads,
                 [&](long t) { register_tile(a, t % bh, static_cast<int>(tiles - 1 - t / bh)); });
  } else {
    throw std::invalid_argument("attention: unknown version " + std::to_string(version));
  }
}

}  // namespace

const char* attention_version_name(int version) {
  switch (version) {
    case kAttentionPlain: return "v1 plain";
    case kAttentionTiled: return "v2 tiled online-softmax";
    case kAttentionRegister: return "v3 register-blocked";
  }
  return "unknown";
}

void attention_forward(int version, const float* q, const float* k, const float* v, float* out,
                       const AttentionShape& s, const AttentionOptions& o) {
  forward(version, q, k, v, out, s, o);
}
void attention_forward(int version, const double* q, const double* k, const double* v, double* out,
                       const AttentionShape& s, const AttentionOptions& o) {
  forward(version, q, k, v, out, s, o);
}

std::string attention_simd_path() {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
    return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
#endif
  return "portable";
}

bool parse_attention_fault(const std::string& name, AttentionFaults* f) {
  *f = {};
  if (name.empty()) return true;
  if (name == "no_max_subtraction") f->no_max_subtraction = true;
  else if (name == "scale_by_d") f->scale_by_d = true;
  else if (name == "mask_off_by_one") f->mask_off_by_one = true;
  else return false;
  return true;
}

}  // namespace claimcheck::kernels
