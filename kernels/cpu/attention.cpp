// Causal attention kernels, fp32 and fp64.
//   v1 plain: the series' algorithm row by row — scores, causal mask, max-subtracted softmax, weighted sum.
//   v2 tiled: online softmax over key tiles (FlashAttention's recurrence); never holds a T x T matrix,
//             skips the tiles above the diagonal; loops written broadcast-FMA style so they vectorise.
//   v3 register-blocked: v2's recurrence with AVX-512 or AVX2+FMA intrinsics, 12 x 16 (zmm) or 6 x 16 (ymm)
//             register-blocked micro-kernels for q k^T and p v with the queries in the vector lanes
//             (attention_v3.inc, one source for both widths; fp32; fp64 and CPUs without AVX2 run v2's code).
// All are multi-threaded over (batch x head x query tile); v1 and v2 are compiled for AVX-512, AVX2 and a portable
// baseline (GCC target_clones), the CPU picking one at load time; v3 picks its AVX-512 or AVX2 tile at run time.
// One file past 500 lines: the three versions share the work split, the tiles and the fp32/fp64 instantiations that
// the claims compare them under; v3's micro-kernels are apart already (attention_v3.inc).
#include "claimcheck/kernels/attention.h"
#include "isa.h"
#include "thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "simd.h"

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
      for (int j = 0; j < kTileK; ++j)
        S[r][j] = (j <= last && j < cols) ? srow[j] : -std::numeric_limits<T>::infinity();
    }
    for (int r = 0; r < rows; ++r) {
      // (A planted fault takes each key tile's own max, not the running one: exact on small logits, whose rescale
      // exp(m - mt) > 1 then stays finite; on large ones the rescale overflows.)
      T mt = a.f.tile_local_max ? -std::numeric_limits<T>::infinity() : m[r];
      for (int j = 0; j < kTileK; ++j) mt = std::max(mt, S[r][j]);
      if (a.f.no_max_subtraction) mt = 0;
      const T corr =
          (m[r] == -std::numeric_limits<T>::infinity() || a.f.no_max_subtraction) ? T(1) : exp_any(m[r] - mt);
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
// Machines without AVX2+FMA run v2's code; AVX-512 machines run the same tile on zmm, 12 rows per micro-kernel.
// The register tile the last v3 call ran, as the tile itself reports it (attention_v3_last_tile).
std::atomic<const char*> g_v3_tile{""};
constexpr const char* kV2Name = "portable";
#if defined(__x86_64__) && defined(__GNUC__)
#define CC_HAVE_AVX2_PATH 1
constexpr int kV3Q = 128;  // queries per task, a multiple of 16
constexpr int kV3K = 48;   // keys per tile, a multiple of 6: the K (or V) tile, 16 queries of Q^T (or O^T) and S^T
                           // fit L1 together at D = 64
#define CC_AVX2_INLINE CC_INLINE CC_AVX2  // (simd.h: AVX2 + FMA)

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

#define CC_AVX512_INLINE CC_INLINE CC_AVX512  // (simd.h: AVX-512 F/BW/VL/DQ, AVX2, FMA)

// The vector operations of v3's tile (attention_v3.inc), per width.
struct V256 {  // AVX2: 16 queries in two ymm, 6 rows per micro-kernel (12 accumulators)
  static constexpr const char* kName = "avx2";
  using Reg = __m256;
  static constexpr int kLanes = 8, kRows = 6;
  static CC_AVX2_INLINE Reg zero() { return _mm256_setzero_ps(); }
  static CC_AVX2_INLINE Reg set1(float x) { return _mm256_set1_ps(x); }
  static CC_AVX2_INLINE Reg load(const float* p) { return _mm256_load_ps(p); }
  static CC_AVX2_INLINE void store(float* p, Reg x) { _mm256_store_ps(p, x); }
  static CC_AVX2_INLINE Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static CC_AVX2_INLINE Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
  static CC_AVX2_INLINE Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
  static CC_AVX2_INLINE Reg mul(Reg a, Reg b) { return _mm256_mul_ps(a, b); }
  static CC_AVX2_INLINE Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static CC_AVX2_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static CC_AVX2_INLINE Reg fmsub(Reg a, Reg b, Reg c) { return _mm256_fmsub_ps(a, b, c); }
  static CC_AVX2_INLINE Reg exp2(Reg x) { return exp2_ps(x); }
  // -inf in the lanes whose last visible key (last[0..7]) is below key j.
  static CC_AVX2_INLINE Reg after(Reg a, int j, const std::int32_t* last) {
    const __m256i l = _mm256_load_si256(reinterpret_cast<const __m256i*>(last));
    const __m256 past = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(j), l));
    return _mm256_blendv_ps(a, _mm256_set1_ps(-std::numeric_limits<float>::infinity()), past);
  }
};
struct V512 {  // AVX-512: 16 queries in one zmm, 12 rows per micro-kernel (12 accumulators, enough for two FMA units)
  static constexpr const char* kName = "avx512";
  using Reg = __m512;
  static constexpr int kLanes = 16, kRows = 12;
  static CC_AVX512_INLINE Reg zero() { return _mm512_setzero_ps(); }
  static CC_AVX512_INLINE Reg set1(float x) { return _mm512_set1_ps(x); }
  static CC_AVX512_INLINE Reg load(const float* p) { return _mm512_load_ps(p); }
  static CC_AVX512_INLINE void store(float* p, Reg x) { _mm512_store_ps(p, x); }
  static CC_AVX512_INLINE Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static CC_AVX512_INLINE Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
  static CC_AVX512_INLINE Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
  static CC_AVX512_INLINE Reg mul(Reg a, Reg b) { return _mm512_mul_ps(a, b); }
  static CC_AVX512_INLINE Reg max(Reg a, Reg b) { return _mm512_max_ps(a, b); }
  static CC_AVX512_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static CC_AVX512_INLINE Reg fmsub(Reg a, Reg b, Reg c) { return _mm512_fmsub_ps(a, b, c); }
  // exp2_ps's polynomial and exponent on 16 lanes.
  static CC_AVX512_INLINE Reg exp2(Reg x) {
    x = _mm512_max_ps(x, _mm512_set1_ps(-127.0f));
    x = _mm512_min_ps(x, _mm512_set1_ps(128.0f));
    const __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m512 f = _mm512_sub_ps(x, n);
    __m512 p = _mm512_set1_ps(1.5353361959569156e-4f);
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3398875016719103e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.61843691766262e-3f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5503323674201965e-2f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022647738456726e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.931471824645996e-1f));
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
    return _mm512_mul_ps(p, _mm512_castsi512_ps(e));
  }
  static CC_AVX512_INLINE Reg after(Reg a, int j, const std::int32_t* last) {
    const __mmask16 past = _mm512_cmpgt_epi32_mask(_mm512_set1_epi32(j), _mm512_load_si512(last));
    return _mm512_mask_blend_ps(past, a, _mm512_set1_ps(-std::numeric_limits<float>::infinity()));
  }
};
// AVX-512's 16 lanes and 12 rows on two ymm (tests only): V512's indexing on any AVX2 machine.
struct VEmulated512 {
  static constexpr const char* kName = "avx512_emulated";
  struct Reg {
    __m256 lo, hi;
  };
  static constexpr int kLanes = 16, kRows = 12;
  static CC_AVX2_INLINE Reg zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static CC_AVX2_INLINE Reg set1(float x) { return {_mm256_set1_ps(x), _mm256_set1_ps(x)}; }
  static CC_AVX2_INLINE Reg load(const float* p) { return {_mm256_load_ps(p), _mm256_load_ps(p + 8)}; }
  static CC_AVX2_INLINE void store(float* p, Reg x) {
    _mm256_store_ps(p, x.lo);
    _mm256_store_ps(p + 8, x.hi);
  }
  static CC_AVX2_INLINE Reg broadcast(const float* p) { return set1(*p); }
  static CC_AVX2_INLINE Reg add(Reg a, Reg b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static CC_AVX2_INLINE Reg sub(Reg a, Reg b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
  static CC_AVX2_INLINE Reg mul(Reg a, Reg b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static CC_AVX2_INLINE Reg max(Reg a, Reg b) { return {_mm256_max_ps(a.lo, b.lo), _mm256_max_ps(a.hi, b.hi)}; }
  static CC_AVX2_INLINE Reg fmadd(Reg a, Reg b, Reg c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static CC_AVX2_INLINE Reg fmsub(Reg a, Reg b, Reg c) {
    return {_mm256_fmsub_ps(a.lo, b.lo, c.lo), _mm256_fmsub_ps(a.hi, b.hi, c.hi)};
  }
  static CC_AVX2_INLINE Reg exp2(Reg x) { return {exp2_ps(x.lo), exp2_ps(x.hi)}; }
  static CC_AVX2_INLINE Reg after(Reg a, int j, const std::int32_t* last) {
    return {V256::after(a.lo, j, last), V256::after(a.hi, j, last + 8)};
  }
};

namespace v3_avx2 {
using V = V256;
#define CC_V3_TARGET CC_AVX2
#define CC_V3_INLINE CC_AVX2_INLINE
#include "attention_v3.inc"
#undef CC_V3_TARGET
#undef CC_V3_INLINE
}  // namespace v3_avx2
namespace v3_avx512 {
using V = V512;
#define CC_V3_TARGET CC_AVX512
#define CC_V3_INLINE CC_AVX512_INLINE
#include "attention_v3.inc"
#undef CC_V3_TARGET
#undef CC_V3_INLINE
}  // namespace v3_avx512
namespace v3_emulated512 {
using V = VEmulated512;
#define CC_V3_TARGET CC_AVX2
#define CC_V3_INLINE CC_AVX2_INLINE
#include "attention_v3.inc"
#undef CC_V3_TARGET
#undef CC_V3_INLINE
}  // namespace v3_emulated512

// v3's path: the widest this CPU has, or one a test forced (attention_v3_force_path).
enum V3Path { kV3None = 0, kV3Avx2 = 1, kV3Avx512 = 2, kV3Emulated512 = 3 };
V3Path v3_detected() {
  const isa::Cpu& c = isa::cpu();
  return c.avx512 ? kV3Avx512 : c.avx2_fma ? kV3Avx2 : kV3None;
}
std::atomic<int> g_v3_forced{-1};
V3Path v3_path(const AttentionFaults& faults = {}) {
  const int f = g_v3_forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<V3Path>(f);
  if (faults.v3_narrow_first && isa::cpu().avx2_fma) return kV3Avx2;  // a planted fault: AVX2 before AVX-512
  return v3_detected();
}
bool v3_has_avx2() { return v3_path() != kV3None; }
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
  switch (v3_path(a.f)) {
    case kV3Avx512:  // (a planted fault runs the emulation of the same tile instead)
      return a.f.v3_tile_emulated ? v3_emulated512::tile(a, bh, qt) : v3_avx512::tile(a, bh, qt);
    case kV3Emulated512:
      return v3_emulated512::tile(a, bh, qt);
    case kV3Avx2:
      return v3_avx2::tile(a, bh, qt);
    default:
      break;
  }
#endif
  if (g_v3_tile.load(std::memory_order_relaxed) != kV2Name)
    g_v3_tile.store(kV2Name, std::memory_order_relaxed);  // v2's code
  tiled_tile_f32(a, bh, qt);
}
void register_tile(const Args<double>& a, long bh, int qt) { tiled_tile_f64(a, bh, qt); }

// Runs fn(task) for task in [0, n) on `threads` threads of the kernels' pool (thread_pool.h), biggest tasks first
// (causal rows late in the sequence cost more: tasks are numbered so that higher numbers are cheaper).
template <typename Fn>
void parallel_for(long n, int threads, Fn fn) {
  parallel_items(static_cast<int>(n), threads, [&](int t) { fn(static_cast<long>(t)); });
}

template <typename T>
void forward(int version, const T* q, const T* k, const T* v, T* out, const AttentionShape& s,
             const AttentionOptions& o) {
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
    case kAttentionPlain:
      return "v1 plain";
    case kAttentionTiled:
      return "v2 tiled online-softmax";
    case kAttentionRegister:
      return "v3 register-blocked";
  }
  return "unknown";
}

void attention_forward(int version, const float* q, const float* k, const float* v, float* out, const AttentionShape& s,
                       const AttentionOptions& o) {
  forward(version, q, k, v, out, s, o);
}
void attention_forward(int version, const double* q, const double* k, const double* v, double* out,
                       const AttentionShape& s, const AttentionOptions& o) {
  forward(version, q, k, v, out, s, o);
}

std::string attention_v3_path(const AttentionFaults& faults) {
#ifdef CC_HAVE_AVX2_PATH
  switch (v3_path(faults)) {
    case kV3Avx512:
      return "avx512";
    case kV3Emulated512:
      return "avx512_emulated";
    case kV3Avx2:
      return "avx2";
    default:
      break;
  }
#endif
  return "portable";
}

std::string attention_v3_last_tile() { return g_v3_tile.load(std::memory_order_relaxed); }

bool attention_v3_force_path(const std::string& name) {
#ifdef CC_HAVE_AVX2_PATH
  const V3Path have = v3_detected();
  int want = -1;
  if (name.empty())
    want = -1;
  else if (name == "avx512" && have == kV3Avx512)
    want = kV3Avx512;
  else if (name == "avx512_emulated" && have != kV3None)
    want = kV3Emulated512;
  else if (name == "avx2" && have != kV3None)
    want = kV3Avx2;
  else if (name == "portable")
    want = kV3None;
  else
    return false;
  g_v3_forced.store(want);
  return true;
#else
  return name.empty() || name == "portable";
#endif
}

std::string attention_simd_path() {
  const isa::Cpu& c = isa::cpu();
  return c.avx512 ? "avx512" : c.avx2_fma ? "avx2" : "portable";
}

bool parse_attention_fault(const std::string& name, AttentionFaults* f) {
  *f = {};
  if (name.empty()) return true;
  if (name == "no_max_subtraction")
    f->no_max_subtraction = true;
  else if (name == "scale_by_d")
    f->scale_by_d = true;
  else if (name == "mask_off_by_one")
    f->mask_off_by_one = true;
  else if (name == "v3_narrow_first")
    f->v3_narrow_first = true;
  else if (name == "v3_tile_emulated")
    f->v3_tile_emulated = true;
  else if (name == "tile_local_max")
    f->tile_local_max = true;
  else
    return false;
  return true;
}

}  // namespace claimcheck::kernels
