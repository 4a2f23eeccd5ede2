// Causal attention kernels, fp32 and fp64.
//   v1 plain: the series' algorithm row by row — scores, causal mask, max-subtracted softmax, weighted sum.
//   v2 tiled: online softmax over key tiles (FlashAttention's recurrence); never holds a T x T matrix,
//             skips the tiles above the diagonal; loops written broadcast-FMA style so they vectorise.
// Both are multi-threaded over (batch x head x query tile) and compiled for AVX-512, AVX2 and a portable
// baseline (GCC target_clones), the CPU picking one at load time.
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
  } else {
    throw std::invalid_argument("attention: unknown version " + std::to_string(version));
  }
}

}  // namespace

const char* attention_version_name(int version) {
  switch (version) {
    case kAttentionPlain: return "v1 plain";
    case kAttentionTiled: return "v2 tiled online-softmax";
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
