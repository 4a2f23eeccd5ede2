// Decode kernels (chapter 6): bf16 GEMV, its batched form (a skinny GEMM), and an NF4 GEMV with one fp32 absmax
// per 64 weights, dequantised in registers. Each has an AVX-512 path, an AVX2+FMA path and a portable one; the CPU
// picks at run time (gemv_simd_path) and a test can force a lower path (gemv_force_path).
//
// bf16 -> fp32 in registers: a 32-bit lane holding two bf16 values k (low half) and k+1 (high half) gives
// fp32(w[k]) = lane << 16 and fp32(w[k+1]) = lane & 0xffff0000, two integer ops per two weights and no shuffle.
// The activation vector is therefore re-ordered once per call (evens then odds within each group of a vector's
// width of pairs), which costs K floats, nothing against the N*K weights. Four rows stream at once, so each
// activation load serves four rows and the prefetchers see four sequential streams.
//
// NF4 on AVX2: the 16 levels are exact fp32 numbers; their four byte planes are four 16-entry byte tables, looked
// up for 32 nibbles at once with vpshufb and re-assembled into fp32 with two rounds of byte/word unpacks. The
// unpacks scramble the order within 128-bit lanes in a fixed way, which the per-call activation re-ordering
// undoes (each 64-weight block's 64 activations permuted once). The block sum is multiplied by the block's scale
// once. This costs 8 vpshufb + 16 unpacks + 3 nibble ops per 64 weights (0.42 shuffle-port ops per weight); Zen 3
// retires ~1.4 of those per cycle, so the kernel is compute-bound at ~16-18 cycles per block (~6 GB/s of NF4 bytes
// per core), not memory-bound. Alternatives measured and slower on Zen 3: 2 x vpermps + blendv per 8 weights
// (~30 cycles/block), the byte->word level by shifts/masks (~24), the word->dword level by vpblendw (~19). Exact
// fp32 levels were kept (no fp16/int8 approximation of the code book). On AVX-512 a 16-float register is the whole
// table: one vpermps per 16 nibbles.
//
// AArch64 (NEON, every core): the bf16 GEMV and the batched GEMM's direct tile use the same even/odd trick on 128-bit
// registers (the activations split as for AVX2, in groups of 16), four rows at once; the GEMM's panel tile is
// gemm_tile.inc on float32x4_t (12 x 8: 24 of the 32 vector registers accumulate); NF4 runs the portable kernel.
//
// Threads: a persistent pool whose workers spin briefly and then sleep; work is pulled in chunks (~256 KiB of
// weights) from an atomic counter, the calling thread working too and never waiting for a worker that has not
// started (a 2-core machine under load can take milliseconds to schedule one), only for workers inside the job.
// Results do not depend on the thread count (chunks are multiples of the 4-row block).
#include "claimcheck/kernels/gemv.h"

#include "claimcheck/base/threads.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CC_X86 1
#else
#define CC_X86 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define CC_NEON 1
#else
#define CC_NEON 0
#endif

#if CC_X86 && !defined(__clang__)
#define CC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CC_CLONES
#endif
#define CC_AVX2 __attribute__((target("avx2,fma,f16c")))
#define CC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define CC_INLINE inline __attribute__((always_inline))

namespace claimcheck::kernels {

// ---- scalar conversions -------------------------------------------------------------------------------------
bf16_t to_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<bf16_t>((u >> 16) | 0x40);  // quiet NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<bf16_t>(u >> 16);
}
float from_bf16(bf16_t x) {
  const std::uint32_t u = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool parse_gemv_fault(const std::string& name, GemvFaults* out) {
  *out = {};
  if (name.empty()) return true;
  if (name == "gemv_reads_twice") out->read_weights_twice = true;
  else if (name == "nf4_dequant_first") out->dequant_whole_first = true;
  else if (name == "gemm_per_token") out->gemm_per_token = true;
  else if (name == "stack_bytes_as_elements") out->bytes_as_elements = true;
  else if (name == "gemm_first_tile_only") out->first_tile_only = true;
  else if (name == "matmul_drop_last_k") out->matmul_drop_last_k = true;
  else if (name == "nf4_half_rows") out->nf4_half_rows = true;
  else return false;
  return true;
}

namespace {

CC_INLINE float bf16_f32(bf16_t x) {
  const std::uint32_t u = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// bitsandbytes' NF4 code book (functional.py, create_normal_map / the hard-coded table of the CUDA kernels).
alignas(64) constexpr float kNf4[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,
    -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f,
    0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

// kEmulated512 (tests only, forced by name): the AVX2 kernels, except the batched GEMM's panel tile, which runs the
// AVX-512 tile's source on two ymm per register (gemm_tile.inc), so that its 16-lane indexing is tested where no
// AVX-512 is.
// kNeon: AArch64's (the others are x86-64's, ordered by width).
enum Path { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kEmulated512 = 3, kNeon = 4 };

Path detect_path() {
#if CC_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    return kAvx512;
#if defined(__clang__) && __clang_major__ < 18  // clang asks for "f16c" from 18 on; every AVX2 CPU has F16C
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return kAvx2;
#else
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")) return kAvx2;
#endif
#endif
#if CC_NEON
  return kNeon;
#endif
  return kPortable;
}
const Path kDetected = detect_path();
std::atomic<int> g_forced{-1};
Path path() {
  const int f = g_forced.load(std::memory_order_relaxed);
  return f >= 0 ? static_cast<Path>(f) : kDetected;
}
const char* path_name(Path p) {
  return p == kAvx512 ? "avx512" : p == kEmulated512 ? "avx512_emulated" : p == kAvx2 ? "avx2" : p == kNeon ? "neon" : "portable";
}

// ---- thread pool ----------------------------------------------------------------------------------------------
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
      ++gen_;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // fn(tid) on the caller (tid 0) and on those of the n - 1 workers that wake up before the caller has finished
  // its own share: a job's work must be pulled dynamically (every tid is optional but 0). The caller never waits
  // for a worker that has not started (on a loaded 2-core machine a sleeping worker can take milliseconds to be
  // scheduled); it waits only for workers inside fn. Calls are serialised.
  void run(int n, const std::function<void(int)>& fn) {
    if (n <= 1) {
      fn(0);
      return;
    }
    std::lock_guard<std::mutex> call(call_m_);
    std::uint64_t g;
    {
      std::lock_guard<std::mutex> l(m_);
      while (static_cast<int>(workers_.size()) < n - 1) {
        const int id = static_cast<int>(workers_.size()) + 1;
        workers_.emplace_back([this, id] { loop(id); });
      }
      fn_ = &fn;
      active_ = n;
      g = ++gen_;
      open_.store(g);  // seq_cst: pairs with the workers' inside_ increment (Dekker-style)
    }
    cv_.notify_all();
    fn(0);
    open_.store(0);  // closed: no worker enters after this
    while (inside_.load() > 0) pause();
  }

 private:
  static void pause() {
#if CC_X86
    _mm_pause();
#elif CC_NEON
    asm volatile("yield" ::: "memory");
#endif
  }
  void loop(int id) {
    std::uint64_t seen = 0;
    for (;;) {
      // Spin a while for the next job (decode steps call back to back), then sleep.
      for (int i = 0; i < 20000; ++i) {
        const std::uint64_t o = open_.load(std::memory_order_relaxed);
        if (o != 0 && o != seen) break;
        pause();
      }
      const std::function<void(int)>* fn = nullptr;
      int active = 0;
      std::uint64_t g = 0;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return stop_ || (gen_ != seen && open_.load() == gen_); });
        if (stop_) return;
        seen = g = gen_;
        fn = fn_;
        active = active_;
      }
      if (id >= active) continue;
      inside_.fetch_add(1);
      if (open_.load() == g) (*fn)(id);
      inside_.fetch_sub(1);
    }
  }
  std::mutex call_m_, m_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* fn_ = nullptr;
  int active_ = 0;
  std::uint64_t gen_ = 0;
  std::atomic<std::uint64_t> open_{0};
  std::atomic<int> inside_{0};
  bool stop_ = false;
};
Pool& pool() {
  static Pool p;
  return p;
}

// Rows [0, N) in chunks of `chunk` rows, pulled from a shared counter by `threads` threads.
void parallel_rows(int N, int chunk, int threads, const std::function<void(int, int)>& fn) {
  const int chunks = (N + chunk - 1) / chunk;
  threads = std::max(1, std::min(threads, chunks));
  if (threads == 1) {
    fn(0, N);
    return;
  }
  std::atomic<int> next{0};
  pool().run(threads, [&](int) {
    for (int c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
      fn(c * chunk, std::min(N, (c + 1) * chunk));
  });
}
// Chunk of rows: ~`bytes` of weights (256 KiB unless said), a multiple of 4 rows, at most N / (4 * threads) so every
// thread gets work.
int row_chunk(int N, std::size_t row_bytes, int threads, std::size_t bytes = 256u << 10) {
  long c = static_cast<long>(bytes / std::max<std::size_t>(row_bytes, 1));
  c = std::min<long>(c, std::max(1, N / (4 * std::max(1, threads))));
  c = std::max<long>(4, (c + 3) / 4 * 4);
  return static_cast<int>(c);
}

// ---- activation re-ordering -----------------------------------------------------------------------------------
// Within each full group of G activations: the G/2 even ones, then the G/2 odd ones. The rest is copied.
void split_pairs(const float* x, int K, int G, float* out) {
  const int Km = K / G * G;
  for (int g = 0; g < Km; g += G)
    for (int i = 0; i < G / 2; ++i) {
      out[g + i] = x[g + 2 * i];
      out[g + G / 2 + i] = x[g + 2 * i + 1];
    }
  for (int k = Km; k < K; ++k) out[k] = x[k];
}
// The AVX2 NF4 kernel's order within a block of 64: slot s = h*32 + r*8 + e holds weight 2j + h, where the
// nibble's byte j = 16*(e/4) + 4*r + e%4 (h: low/high nibble, r: which of the four assembled registers, e: lane).
struct Nf4Perm {
  int src[64];
  Nf4Perm() {
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 4; ++r)
        for (int e = 0; e < 8; ++e) src[h * 32 + r * 8 + e] = 2 * (16 * (e / 4) + 4 * r + e % 4) + h;
  }
};
const Nf4Perm kNf4Perm;
void nf4_order_avx2(const float* x, int K, float* out) {
  for (int b = 0; b < K; b += 64)
    for (int s = 0; s < 64; ++s) out[b + s] = x[b + kNf4Perm.src[s]];
}

// Per-thread scratch (the prepared activations live in the caller's, shared read-only with the workers).
std::vector<float>& scratch(int which) {
  thread_local std::vector<float> s[3];
  return s[which];
}
float* scratch_floats(int which, std::size_t n) {
  auto& v = scratch(which);
  if (v.size() < n + 16) v.resize(n + 16);
  return v.data();
}

// ---- portable kernels -----------------------------------------------------------------------------------------
CC_CLONES void bf16_rows_portable(const bf16_t* W, long K, const float* x, int r0, int r1, float* y) {
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

#if CC_X86
// ---- AVX2 kernels -------------------------------------------------------------------------------------------------
CC_AVX2 CC_INLINE float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
// [sum a0, sum a1, sum a2, sum a3]
CC_AVX2 CC_INLINE __m128 hsum4x8(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// xs: x split in groups of 16 (evens, odds); x: natural order, for the tail past K & ~15.
// Rows r, r + s, ..., r + (R - 1) s: four rows a quarter of a chunk apart read as four long streams (each row's
// successor in its stream is the next row in memory), not four 8 KiB runs restarted every block.
template <int R>
CC_AVX2 CC_INLINE void bf16_block_avx2(const bf16_t* W, long K, const float* xs, const float* x, int r, long s,
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
CC_AVX2 void bf16_rows_avx2(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y) {
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) bf16_block_avx2<4>(W, K, xs, x, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) bf16_block_avx2<1>(W, K, xs, x, r, 0, y);
}

// 32 nibble indices (bytes 0..15) -> 32 fp32 levels in four registers, lane order as Nf4Perm describes.
CC_AVX2 CC_INLINE void nf4_decode32_avx2(__m256i idx, const __m256i t[4], __m256 out[4]) {
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
CC_AVX2 CC_INLINE void nf4_block_avx2(const std::uint8_t* P, const float* S, long K, const float* xp, int r,
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
CC_AVX2 void nf4_rows_avx2(const std::uint8_t* P, const float* S, long K, const float* xp, int r0, int r1, float* y) {
  // One row at a time: the decode, not the activation loads, is the bottleneck, and a second row's registers
  // only add pressure (measured: 2 rows per pass ran ~20 % slower per block on Zen 3).
  for (int r = r0; r < r1; ++r) nf4_block_avx2<1>(P, S, K, xp, r, y);
}

// GCC 12's AVX-512 intrinsics headers trip -Wmaybe-uninitialized on their own _mm512_undefined_* (a known false
// positive); the project builds with -Werror in CI.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// ---- AVX-512 kernels (compiled everywhere, run where the CPU has AVX-512) --------------------------------------
// xs: x split in groups of 32 (16 evens, 16 odds).
// Rows r, r + s, ...: four long streams, as in the AVX2 kernel.
template <int R>
CC_AVX512 CC_INLINE void bf16_block_avx512(const bf16_t* W, long K, const float* xs, const float* x, int r, long s,
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
CC_AVX512 void bf16_rows_avx512(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y) {
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
// The 16 levels of the 16 weights in q[0..8), in that order.
CC_AVX512 CC_INLINE __m512 nf4_lookup16(const std::uint8_t* q, __m512i shifts, __m512 table) {
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
CC_AVX512 CC_INLINE void nf4_block_avx512(const std::uint8_t* P, const float* S, long K, const float* xs, int r,
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
      if (b % 2 == 0) _mm_prefetch(reinterpret_cast<const char*>(q + kNf4PrefetchBytes), _MM_HINT_T0);  // a line per 2 blocks
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
CC_AVX512 void nf4_rows_avx512(const std::uint8_t* P, const float* S, long K, const float* xs, int r0, int r1,
                               float* y) {
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) nf4_block_avx512<4>(P, S, K, xs, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) nf4_block_avx512<1>(P, S, K, xs, r, 0, y);
}
#pragma GCC diagnostic pop
#endif  // CC_X86

#if CC_NEON
// ---- NEON kernels (AArch64) ----------------------------------------------------------------------------------------
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
void bf16_rows_neon(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y) {
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) bf16_block_neon<4>(W, K, xs, x, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) bf16_block_neon<1>(W, K, xs, x, r, 0, y);
}
#endif  // CC_NEON

// ---- dispatch: one GEMV pass ----------------------------------------------------------------------------------
void bf16_pass(Path pth, const bf16_t* W, int N, int K, const float* x, float* y, int threads) {
  if (pth == kEmulated512) pth = kAvx2;
  const float* xs = x;
  if (pth != kPortable) {
    float* buf = scratch_floats(0, K);
    split_pairs(x, K, pth == kAvx512 ? 32 : 16, buf);
    xs = buf;
  }
  // 1 MiB chunks: four streams of 256 KiB each (see bf16_block_avx2).
  const int chunk = row_chunk(N, static_cast<std::size_t>(K) * 2, threads, 1u << 20);
  parallel_rows(N, chunk, threads, [&](int r0, int r1) {
#if CC_X86
    if (pth == kAvx512) return bf16_rows_avx512(W, K, xs, x, r0, r1, y);
    if (pth == kAvx2) return bf16_rows_avx2(W, K, xs, x, r0, r1, y);
#endif
#if CC_NEON
    if (pth == kNeon) return bf16_rows_neon(W, K, xs, x, r0, r1, y);
#endif
    bf16_rows_portable(W, K, x, r0, r1, y);
  });
}

// The first `rows` rows of W (all of them but under the planted nf4_half_rows).
void nf4_pass(Path pth, const Nf4Matrix& W, const float* x, float* y, int threads, int rows) {
  if (pth == kEmulated512) pth = kAvx2;
  if (pth == kNeon) pth = kPortable;  // NF4 on AArch64: the portable kernel (vectorised by the compiler)
#if CC_X86
  const float* xs = x;
  if (pth != kPortable) {
    float* buf = scratch_floats(0, W.K);
    if (pth == kAvx512) nf4_order_avx512(x, W.K, buf);
    else nf4_order_avx2(x, W.K, buf);
    xs = buf;
  }
#endif
  const int chunk = row_chunk(rows, static_cast<std::size_t>(W.K) / 2 + W.K / 16, threads);
  const std::uint8_t* P = W.packed.data();
  const float* S = W.scales.data();
  parallel_rows(rows, chunk, threads, [&](int r0, int r1) {
#if CC_X86
    if (pth == kAvx512) return nf4_rows_avx512(P, S, W.K, xs, r0, r1, y);
    if (pth == kAvx2) return nf4_rows_avx2(P, S, W.K, xs, r0, r1, y);
#endif
    nf4_rows_portable(P, S, W.K, x, r0, r1, y);
  });
}

// Keeps a discarded result alive (the planted fault's second pass must not be optimised away).
void consume(const float* p) { asm volatile("" : : "r"(p) : "memory"); }

// ---- batched bf16 (skinny GEMM) ---------------------------------------------------------------------------------
// Two regimes.
//  - Small batches (B <= kDirectMaxB): the GEMV's own streaming form. Weight rows are converted in registers
//    (the even/odd trick) and each converted vector meets up to four activation rows (pre-split the same way):
//    2 x 4 accumulators on AVX2, 4 x 4 on AVX-512 (its 32 registers), every weight read once from memory, a
//    horizontal sum per output at the end.
//  - Larger batches: weights packed once per (k block, two vectors of output columns) into fp32 k-major panels
//    [kc][2L]; a register tile of MB activation rows x 2 vectors runs over the panel, BLIS-style (gemm_tile.inc:
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
CC_AVX2 CC_INLINE void direct_tile_avx2(const bf16_t* W, long K, const float* XS, const float* X, int r, int b0,
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
CC_AVX2 void direct_rows_avx2(const bf16_t* W, long K, const float* XS, const float* X, int B, int r, float* Y, long N) {
  int b = 0;
  for (; b + 4 <= B; b += 4) direct_tile_avx2<R, 4>(W, K, XS, X, r, b, Y, N);
  switch (B - b) {
    case 3: direct_tile_avx2<R, 3>(W, K, XS, X, r, b, Y, N); break;
    case 2: direct_tile_avx2<R, 2>(W, K, XS, X, r, b, Y, N); break;
    case 1: direct_tile_avx2<R, 1>(W, K, XS, X, r, b, Y, N); break;
    default: break;
  }
}
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers, as above
// The same on 16 lanes (XS: X rows split in groups of 32): 32 zmm registers hold R x NB accumulators, the R
// rows' converted halves and one activation row's, so four weight rows (four streams) meet four activation rows.
template <int R, int NB>
CC_AVX512 CC_INLINE void direct_tile_avx512(const bf16_t* W, long K, const float* XS, const float* X, int r, int b0,
                                            float* Y, long N) {
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
CC_AVX512 void direct_rows_avx512(const bf16_t* W, long K, const float* XS, const float* X, int B, int r, float* Y,
                                  long N) {
  int b = 0;
  for (; b + 4 <= B; b += 4) direct_tile_avx512<R, 4>(W, K, XS, X, r, b, Y, N);
  switch (B - b) {
    case 3: direct_tile_avx512<R, 3>(W, K, XS, X, r, b, Y, N); break;
    case 2: direct_tile_avx512<R, 2>(W, K, XS, X, r, b, Y, N); break;
    case 1: direct_tile_avx512<R, 1>(W, K, XS, X, r, b, Y, N); break;
    default: break;
  }
}
#pragma GCC diagnostic pop
#endif

#if CC_NEON
// The same on 4 lanes (XS: X rows split in groups of 16, as for AVX2): R = 2 weight rows' converted halves (8 registers)
// meet NB <= 4 activation rows (4 registers each), R x NB accumulators.
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
    case 3: direct_tile_neon<R, 3>(W, K, XS, X, r, b, Y, N); break;
    case 2: direct_tile_neon<R, 2>(W, K, XS, X, r, b, Y, N); break;
    case 1: direct_tile_neon<R, 1>(W, K, XS, X, r, b, Y, N); break;
    default: break;
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
CC_AVX2 void pack_panel_avx2(const bf16_t* W, int N, long K, int n0, long k0, int kc, int PN, float* P) {
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
        r[i] = _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w[i] + k))), 16));
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
#endif

// The panel tiles, one source (gemm_tile.inc) per vector type.
using TileFn = void (*)(const float*, long, const float*, int, float*, long, int);
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
  static CC_AVX2 CC_INLINE Reg zero() { return _mm256_setzero_ps(); }
  static CC_AVX2 CC_INLINE Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static CC_AVX2 CC_INLINE void store(float* p, Reg r) { _mm256_storeu_ps(p, r); }
  static CC_AVX2 CC_INLINE Reg broadcast(const float* p) { return _mm256_broadcast_ss(p); }
  static CC_AVX2 CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static CC_AVX2 CC_INLINE Reg add(Reg a, Reg b) { return _mm256_add_ps(a, b); }
};
#define CC_TILE_TARGET CC_AVX2
#include "gemm_tile.inc"
#undef CC_TILE_TARGET
}  // namespace tile_avx2
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers
namespace tile_avx512 {
struct V {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static CC_AVX512 CC_INLINE Reg zero() { return _mm512_setzero_ps(); }
  static CC_AVX512 CC_INLINE Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static CC_AVX512 CC_INLINE void store(float* p, Reg r) { _mm512_storeu_ps(p, r); }
  static CC_AVX512 CC_INLINE Reg broadcast(const float* p) { return _mm512_set1_ps(*p); }
  static CC_AVX512 CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static CC_AVX512 CC_INLINE Reg add(Reg a, Reg b) { return _mm512_add_ps(a, b); }
};
#define CC_TILE_TARGET CC_AVX512
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
  static CC_AVX2 CC_INLINE Reg zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static CC_AVX2 CC_INLINE Reg load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static CC_AVX2 CC_INLINE void store(float* p, Reg r) { _mm256_storeu_ps(p, r.lo), _mm256_storeu_ps(p + 8, r.hi); }
  static CC_AVX2 CC_INLINE Reg broadcast(const float* p) { return {_mm256_broadcast_ss(p), _mm256_broadcast_ss(p)}; }
  static CC_AVX2 CC_INLINE Reg fmadd(Reg a, Reg b, Reg c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
  }
  static CC_AVX2 CC_INLINE Reg add(Reg a, Reg b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
};
#define CC_TILE_TARGET CC_AVX2
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
  int panel_n = 16, tile_b = 6;
  TileFn tiles[kMaxTileB + 1] = {};
};
template <template <int> class T, int... M>
PanelKernel panel_kernel(int panel_n, std::integer_sequence<int, M...>) {
  PanelKernel k;
  k.panel_n = panel_n;
  k.tile_b = static_cast<int>(sizeof...(M));
  ((k.tiles[M + 1] = T<M + 1>::fn), ...);
  return k;
}
#define CC_TILE_REF(ns)                  \
  template <int MB>                      \
  struct ns##_ref {                      \
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
  static const PanelKernel avx2 = panel_kernel<tile_avx2_ref>(16, std::make_integer_sequence<int, 6>());
  static const PanelKernel avx512 = panel_kernel<tile_avx512_ref>(32, std::make_integer_sequence<int, 12>());
  static const PanelKernel emulated = panel_kernel<tile_emulated512_ref>(32, std::make_integer_sequence<int, 12>());
  if (pth == kAvx512) return avx512;
  if (pth == kEmulated512) return emulated;
  if (pth == kAvx2) return avx2;
#endif
#if CC_NEON
  static const PanelKernel neon = panel_kernel<tile_neon_ref>(8, std::make_integer_sequence<int, 12>());
  if (pth == kNeon) return neon;
#endif
  static const PanelKernel portable = panel_kernel<tile_portable_ref>(16, std::make_integer_sequence<int, 6>());
  return portable;
}

void gemm_pass(Path pth, const bf16_t* W, int N, int K, const float* X, int B, float* Y, int threads) {
#if CC_NEON
  if (pth == kNeon && B <= kDirectMaxB) {
    std::vector<float> xs(static_cast<std::size_t>(B) * K);
    for (int b = 0; b < B; ++b)
      split_pairs(X + static_cast<long>(b) * K, K, 16, &xs[static_cast<std::size_t>(b) * K]);
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
  const PanelKernel& pk = panel_for(pth);
  const int PN = pk.panel_n, TB = pk.tile_b;
  const int panels = (N + PN - 1) / PN;
  // One task per panel of output columns (pulled dynamically): Y's columns zeroed, then for each k block the panel
  // packed once and run against every activation row.
  parallel_rows(panels, 1, threads, [&](int p0, int p1) {
    float* P = scratch_floats(1, static_cast<std::size_t>(kGemmKc) * kMaxPanelN);
    for (int p = p0; p < p1; ++p) {
      const int n = p * PN, cols = std::min(PN, N - n);
      for (int b = 0; b < B; ++b) std::fill(Y + static_cast<long>(b) * N + n, Y + static_cast<long>(b) * N + n + cols, 0.0f);
      for (int k0 = 0; k0 < K; k0 += kGemmKc) {
        const int kc = std::min(kGemmKc, K - k0);
#if CC_X86
        if (pth != kPortable) pack_panel_avx2(W, N, K, n, k0, kc, PN, P);
        else
#endif
          pack_panel(W, N, K, n, k0, kc, PN, P);
        for (int b = 0; b < B; b += TB) {
          const int mb = std::min(TB, B - b);
          pk.tiles[mb](X + static_cast<long>(b) * K + k0, K, P, kc, Y + static_cast<long>(b) * N + n, N, cols);
        }
      }
    }
  });
}

// ---- NF4 quantisation ----------------------------------------------------------------------------------------
// Nearest level by counting the midpoints below v (ties go up; the levels are sorted).
struct Nf4Mids {
  float m[15];
  Nf4Mids() {
    for (int i = 0; i < 15; ++i) m[i] = 0.5f * (kNf4[i] + kNf4[i + 1]);
  }
};
const Nf4Mids kMids;

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

// ---- DecodeStack weights -------------------------------------------------------------------------------------
CC_INLINE std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// A 32-bit integer hash (lowbias32, Wellons): 32-bit multiplies, so the fill loop vectorises.
CC_INLINE std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
// Elements 2p and 2p+1: uniform in [-a, a) from the low and high 16 bits of hash32(p * golden + salt), rounded
// to bf16 (nearest even). A function of the index alone, so any split over threads gives the same matrix.
CC_CLONES void fill_uniform_bf16(bf16_t* out, std::size_t i0, std::size_t i1, std::uint32_t salt, float a) {
  const float scale = a / 32768.0f;
  auto one = [&](std::uint32_t h16) {
    const float f = static_cast<float>(static_cast<int>(h16) - 32768) * scale;
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<bf16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  };
  // i0 is even (callers split on multiples of 2).
  const std::size_t p1 = i1 / 2;
  for (std::size_t p = i0 / 2; p < p1; ++p) {
    const std::uint32_t h = hash32(static_cast<std::uint32_t>(p) * 0x9e3779b9u + salt);
    out[2 * p] = one(h & 0xffffu);
    out[2 * p + 1] = one(h >> 16);
  }
  if (i1 % 2) out[i1 - 1] = one(hash32(static_cast<std::uint32_t>(p1) * 0x9e3779b9u + salt) & 0xffffu);
}

}  // namespace

// ---- public entry points ----------------------------------------------------------------------------------------
const float* nf4_levels() { return kNf4; }

std::string gemv_simd_path() { return path_name(path()); }
std::string gemv_detected_path() { return path_name(kDetected); }

bool gemv_force_path(const std::string& name) {
  int want;
  if (name.empty()) want = -1;
  else if (name == "portable") want = kPortable;
  else if (name == "avx2") want = kAvx2;
  else if (name == "avx512") want = kAvx512;
  else if (name == "avx512_emulated") want = kEmulated512;
  else if (name == "neon") want = kNeon;
  else return false;
  const int needs = want == kEmulated512 ? kAvx2 : want;
  // This CPU cannot run it: NEON is AArch64's, the x86-64 paths are ordered by width.
  if (needs == kNeon ? kDetected != kNeon : needs > kPortable && (kDetected == kNeon || needs > static_cast<int>(kDetected)))
    return false;
  g_forced.store(want);
  return true;
}

void gemv_bf16(const bf16_t* W, int N, int K, const float* x, float* y, const GemvOptions& o) {
  if (N < 0 || K < 0) throw std::invalid_argument("gemv_bf16: negative shape");
  if (N == 0) return;
  const Path pth = path();
  bf16_pass(pth, W, N, K, x, y, o.threads);
  if (o.faults.read_weights_twice) {
    float* y2 = scratch_floats(1, N);
    bf16_pass(pth, W, N, K, x, y2, o.threads);
    consume(y2);
  }
}

void gemm_bf16(const bf16_t* W, int N, int K, const float* X, int B, float* Y, const GemvOptions& o) {
  if (N < 0 || K < 0 || B < 0) throw std::invalid_argument("gemm_bf16: negative shape");
  if (N == 0 || B == 0) return;
  if (B == 1) return gemv_bf16(W, N, K, X, Y, o);
  const Path pth = path();
  if (o.faults.gemm_per_token) {  // a planted fault: one GEMV per token, each reading all of W again
    for (int b = 0; b < B; ++b)
      bf16_pass(pth, W, N, K, X + static_cast<std::size_t>(b) * K, Y + static_cast<std::size_t>(b) * N, o.threads);
    return;
  }
  // (A planted fault: the loop bound is one tile of tokens, not the batch; the other tokens' outputs are left.)
  gemm_pass(pth, W, N, K, X, o.faults.first_tile_only ? std::min(B, 4) : B, Y, o.threads);
  if (o.faults.read_weights_twice) {
    std::vector<float> y2(static_cast<std::size_t>(B) * N);
    gemm_pass(pth, W, N, K, X, B, y2.data(), o.threads);
    consume(y2.data());
  }
}

Nf4Matrix quantize_nf4(const bf16_t* W, int N, int K, int threads) {
  if (N < 0 || K < 0 || K % 64 != 0) throw std::invalid_argument("quantize_nf4: K must be a multiple of 64");
  Nf4Matrix m;
  m.N = N;
  m.K = K;
  m.packed.resize(static_cast<std::size_t>(N) * K / 2);
  m.scales.resize(static_cast<std::size_t>(N) * K / 64);
  if (N == 0 || K == 0) return m;
  const int chunk = std::max(1, std::min(N, 1 << 16) / std::max(1, 8 * threads));
  parallel_rows(N, chunk, threads, [&](int r0, int r1) { quantize_rows(W, K, r0, r1, m.packed.data(), m.scales.data()); });
  return m;
}
Nf4Matrix quantize_nf4(const bf16_t* W, int N, int K) { return quantize_nf4(W, N, K, 1); }

std::vector<bf16_t> dequantize_nf4_bf16(const Nf4Matrix& W) {
  std::vector<bf16_t> out(static_cast<std::size_t>(W.N) * W.K);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint8_t byte = W.packed[i / 2];
    const int c = (i % 2) ? byte >> 4 : byte & 15;
    out[i] = to_bf16(kNf4[c] * W.scales[i / 64]);
  }
  return out;
}

void gemv_nf4(const Nf4Matrix& W, const float* x, float* y, const GemvOptions& o) {
  if (W.K % 64 != 0 || W.packed.size() != static_cast<std::size_t>(W.N) * W.K / 2 ||
      W.scales.size() != static_cast<std::size_t>(W.N) * W.K / 64)
    throw std::invalid_argument("gemv_nf4: malformed matrix");
  if (W.N == 0) return;
  if (o.faults.dequant_whole_first) {
    // The planted fault: the whole matrix dequantised to bf16 in memory, then the bf16 GEMV over it.
    const std::vector<bf16_t> d = dequantize_nf4_bf16(W);
    GemvOptions inner = o;
    inner.faults.dequant_whole_first = false;
    return gemv_bf16(d.data(), W.N, W.K, x, y, inner);
  }
  const Path pth = path();
  // The planted nf4_half_rows: the second half of the rows never computed (left 0), so the step reads half its bytes.
  const int rows = o.faults.nf4_half_rows ? W.N / 2 : W.N;
  if (rows < W.N) std::fill(y + rows, y + W.N, 0.0f);
  nf4_pass(pth, W, x, y, o.threads, rows);
  if (o.faults.read_weights_twice) {
    float* y2 = scratch_floats(1, W.N);
    nf4_pass(pth, W, x, y2, o.threads, rows);
    consume(y2);
  }
}

// ---- DecodeStack ----------------------------------------------------------------------------------------------
namespace {
struct MatShape {
  int N, K;
};
std::vector<MatShape> layer_shapes(const DecodeShape& s) {
  return {{s.hidden, s.hidden}, {s.kv_dim, s.hidden}, {s.kv_dim, s.hidden}, {s.hidden, s.hidden},
          {s.ffn, s.hidden},    {s.ffn, s.hidden},    {s.hidden, s.ffn}};
}
int effective_head_dim(const DecodeShape& s) { return std::min(s.head_dim, s.kv_dim); }
}  // namespace

std::vector<bf16_t> decode_weights_bf16(int N, int K, std::uint64_t seed, int threads) {
  std::vector<bf16_t> w(static_cast<std::size_t>(N) * K);
  const float a = 1.0f / std::sqrt(static_cast<float>(std::max(K, 1)));
  const std::size_t n = w.size();
  const std::size_t chunk = 1 << 20;  // even: chunks start on a generator word
  const auto salt = static_cast<std::uint32_t>(splitmix64(seed));
  const int chunks = static_cast<int>((n + chunk - 1) / chunk);
  parallel_rows(chunks, 1, threads, [&](int c0, int c1) {
    for (int c = c0; c < c1; ++c)
      fill_uniform_bf16(w.data(), c * chunk, std::min(n, (c + 1) * chunk), salt, a);
  });
  return w;
}

DecodeStack::DecodeStack(const DecodeShape& s, const std::string& format, std::uint64_t seed, const GemvFaults& faults)
    : s_(s), format_(format), faults_(faults) {
  if (format != "bf16" && format != "nf4") throw std::invalid_argument("DecodeStack: format must be bf16 or nf4");
  const int hd = effective_head_dim(s);
  if (s.hidden < 1 || s.kv_dim < 1 || s.ffn < 1 || s.layers < 1 || hd < 1 || s.kv_dim % hd != 0 ||
      s.hidden % s.kv_dim != 0)
    throw std::invalid_argument("DecodeStack: bad shape (kv_dim must divide hidden, head_dim kv_dim)");
  if (format == "nf4" && (s.hidden % 64 != 0 || s.ffn % 64 != 0))
    throw std::invalid_argument("DecodeStack: nf4 needs hidden and ffn multiples of 64");
  const int threads = usable_cpus();
  const auto shapes = layer_shapes(s);
  for (int l = 0; l < s.layers; ++l)
    for (int m = 0; m < 7; ++m) {
      const std::uint64_t mseed = splitmix64(seed * 1000003ull + static_cast<std::uint64_t>(l * 7 + m));
      std::vector<bf16_t> w = decode_weights_bf16(shapes[m].N, shapes[m].K, mseed, threads);
      if (format == "bf16") bf16_.push_back(std::move(w));
      else nf4_.push_back(quantize_nf4(w.data(), shapes[m].N, shapes[m].K, threads));
    }
}

std::size_t DecodeStack::weight_bytes() const {
  std::size_t b = 0;
  // A planted fault counts elements for bytes.
  for (const auto& w : bf16_) b += w.size() * (faults_.bytes_as_elements ? 1 : sizeof(bf16_t));
  for (const auto& m : nf4_) b += m.bytes();
  return b;
}

double DecodeStack::flops() const {
  double f = 0;
  for (const auto& m : layer_shapes(s_)) f += 2.0 * m.N * m.K;
  return f * s_.layers;
}

std::vector<const bf16_t*> DecodeStack::bf16_weights(int layer) const {
  std::vector<const bf16_t*> out;
  if (bf16_.empty() || layer < 0 || layer >= s_.layers) return out;
  for (int m = 0; m < 7; ++m) out.push_back(bf16_[static_cast<std::size_t>(layer) * 7 + m].data());
  return out;
}

const Nf4Matrix* DecodeStack::nf4_weight(int layer, int m) const {
  if (nf4_.empty() || layer < 0 || layer >= s_.layers || m < 0 || m >= 7) return nullptr;
  return &nf4_[static_cast<std::size_t>(layer) * 7 + m];
}

void DecodeStack::step(const float* x, float* out, const GemvOptions& o) const {
  const int H = s_.hidden, KV = s_.kv_dim, F = s_.ffn, hd = effective_head_dim(s_);
  const int group = H / KV;  // query heads per kv head
  std::vector<float> h(x, x + H), q(H), k(KV), v(KV), a(H), t(H), g(F), u(F);
  const auto shapes = layer_shapes(s_);
  auto mv = [&](int l, int m, const float* in, float* o_) {
    const std::size_t i = static_cast<std::size_t>(l) * 7 + m;
    if (format_ == "bf16") gemv_bf16(bf16_[i].data(), shapes[m].N, shapes[m].K, in, o_, o);
    else gemv_nf4(nf4_[i], in, o_, o);
  };
  for (int l = 0; l < s_.layers; ++l) {
    mv(l, 0, h.data(), q.data());
    mv(l, 1, h.data(), k.data());
    mv(l, 2, h.data(), v.data());
    // One token of context: softmax over one score is 1, each query head's output is its kv head's v.
    for (int qh = 0; qh < H / hd; ++qh) {
      const int kvh = qh / group;
      std::memcpy(&a[static_cast<std::size_t>(qh) * hd], &v[static_cast<std::size_t>(kvh) * hd], hd * sizeof(float));
    }
    mv(l, 3, a.data(), t.data());
    for (int i = 0; i < H; ++i) h[i] += t[i];
    mv(l, 4, h.data(), g.data());
    mv(l, 5, h.data(), u.data());
    for (int i = 0; i < F; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    mv(l, 6, g.data(), t.data());
    for (int i = 0; i < H; ++i) h[i] += t[i];
  }
  std::memcpy(out, h.data(), H * sizeof(float));
}

}  // namespace claimcheck::kernels
