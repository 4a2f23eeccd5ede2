// The roofline probe: peak FLOP/s with enough independent FMA chains for the ISA dispatched, the clock under
// load, and STREAM-style read bandwidth, on threads pinned to the CPUs of the affinity mask.
#include "claimcheck/kernels/roofline.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include "claimcheck/base/timing.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace claimcheck::kernels {
namespace {

using base::Clock;
using base::seconds_since;

// The CPUs this process may run on, in order.
std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// The span from the first thread's start to the last thread's end: threads that did not overlap (one descheduled
// while the other ran) are not counted as running side by side.
struct Span {
  std::vector<Clock::time_point> start, end;
  explicit Span(int n) : start(n), end(n) {}
  double seconds() const {
    return std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) -
                                         *std::min_element(start.begin(), start.end()))
        .count();
  }
};

// Runs fn(t) on `threads` threads, thread t pinned to the t-th allowed CPU, all released together. The calling
// thread is thread 0 (pinned for the call, its mask restored after): a caller that spun or slept beside the workers
// would take a CPU from one of them on a machine with as many CPUs as threads, and that worker would start a
// scheduler tick late (a few ms of a 50 ms pass: the Emerald Rapids guest's FMA probe read 275-317 GFLOP/s where
// 12 chains timed per thread read 347-351).
template <typename Fn>
void run_pinned(int threads, Fn fn) {
  const std::vector<int> cpus = allowed_cpus();
  auto pin = [&](int t) {
    if (cpus.empty()) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<std::size_t>(t) % cpus.size()], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  };
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const bool restore = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      pin(t);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      fn(t);
    });
  pin(0);
  while (ready.load() < threads - 1) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  fn(0);
  for (auto& th : pool) th.join();
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
}

// ---- FMA chains ---------------------------------------------------------------------------------------------
// Each kernel runs `iters` iterations of `chains` independent vector FMAs and returns a value that depends on
// every chain (so nothing is optimised away). FLOPs = iters x chains x lanes x 2.
// Zen 3 / Skylake: FMA latency 4, two FMA pipes: >= 8 chains in flight; 12 ymm chains + 2 constants fit in the
// 16 ymm registers of AVX2, 24 zmm chains in the 32 of AVX-512.
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers (_mm512_reduce_add_ps)
#pragma GCC diagnostic ignored "-Wuninitialized"
#define CC_TARGET(x) __attribute__((target(x), noinline))
template <int C>
CC_TARGET("avx2,fma") float fma_avx2(long iters) {
  __m256 acc[C];
  for (int i = 0; i < C; ++i) acc[i] = _mm256_set1_ps(1.0f + static_cast<float>(i) * 1e-6f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < C; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  }
  __m256 s = acc[0];
  for (int i = 1; i < C; ++i) s = _mm256_add_ps(s, acc[i]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}
template <int C>
CC_TARGET("avx512f") float fma_avx512(long iters) {
  __m512 acc[C];
  for (int i = 0; i < C; ++i) acc[i] = _mm512_set1_ps(1.0f + static_cast<float>(i) * 1e-6f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < C; ++i) acc[i] = _mm512_fmadd_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < C; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
// bf16 pairs dotted into fp32 lanes: 32 multiply-adds (64 FLOP) per vdpbf16ps.
CC_TARGET("avx512f,avx512bf16") float bf16_avx512(long iters) {
  constexpr int C = 16;
  __m512 acc[C];
  for (int i = 0; i < C; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i) * 1e-6f);
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3380);  // 1.0, ~6e-8
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < C; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  }
  __m512 s = acc[0];
  for (int i = 1; i < C; ++i) s = _mm512_add_ps(s, acc[i]);
  return _mm512_reduce_add_ps(s);
}
// AMX: four independent 16x16 fp32 accumulators (tmm0-3), each fed by one of two A tiles (16 x 32 bf16, tmm4-5)
// and one of two B tiles (16 K-pairs x 16 columns, tmm6-7) loaded once; 16x16x32 multiply-adds (16384 FLOP) per
// tdpbf16ps. A holds 1.0 and B 2^-10, so every accumulator gains exactly 2^-5 per operation: after n iterations
// each of the 4 x 256 elements must equal n / 32 (exact in fp32 for n < 2^24). Inline assembly (binutils >= 2.34
// knows the mnemonics), so that no part of the file needs AMX's compiler flags.
struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};
// Returns 1 when every accumulator holds its closed form, 0 otherwise (the probe then did not do its work).
__attribute__((noinline)) int amx_chain(long iters) {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  alignas(64) std::uint16_t a[16 * 32], b[16 * 32];
  alignas(64) float c[4][16 * 16];
  for (auto& x : a) x = 0x3F80;  // bf16 1.0
  for (auto& x : b) x = 0x3A80;  // bf16 2^-10
  const long stride = 64;
  long n = iters;
  asm volatile(
      "ldtilecfg (%[cfg])\n\t"
      "tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3\n\t"
      "tileloadd (%[a],%[s],1), %%tmm4\n\t"
      "tileloadd (%[a],%[s],1), %%tmm5\n\t"
      "tileloadd (%[b],%[s],1), %%tmm6\n\t"
      "tileloadd (%[b],%[s],1), %%tmm7\n\t"
      "test %[n], %[n]\n\t"
      "jle 2f\n\t"
      "1:\n\t"
      "tdpbf16ps %%tmm6, %%tmm4, %%tmm0\n\t"
      "tdpbf16ps %%tmm7, %%tmm4, %%tmm1\n\t"
      "tdpbf16ps %%tmm6, %%tmm5, %%tmm2\n\t"
      "tdpbf16ps %%tmm7, %%tmm5, %%tmm3\n\t"
      "dec %[n]\n\t"
      "jnz 1b\n\t"
      "2:\n\t"
      "tilestored %%tmm0, (%[c0],%[s],1)\n\t"
      "tilestored %%tmm1, (%[c1],%[s],1)\n\t"
      "tilestored %%tmm2, (%[c2],%[s],1)\n\t"
      "tilestored %%tmm3, (%[c3],%[s],1)\n\t"
      "tilerelease\n\t"
      : [n] "+r"(n)
      : [cfg] "r"(&cfg), [a] "r"(a), [b] "r"(b), [s] "r"(stride), [c0] "r"(c[0]), [c1] "r"(c[1]), [c2] "r"(c[2]),
        [c3] "r"(c[3])
      : "memory", "cc");
  const float want = static_cast<float>(std::max(iters, 0L)) / 32.0f;
  for (const auto& acc : c)
    for (float v : acc)
      if (v != want) return 0;
  return 1;
}
float amx_kernel(long iters) { return static_cast<float>(amx_chain(iters)); }
#endif
#if defined(__aarch64__)
// NEON (every AArch64 core): 4 fp32 lanes per fmla. Neoverse V1/V2 have four 128-bit FMA pipes of latency 4 (N1 and
// N2: two), so >= 16 chains in flight; 24 of the 32 vector registers, 2 for the constants.
template <int C>
__attribute__((noinline)) float fma_neon(long iters) {
  float32x4_t acc[C];
  for (int i = 0; i < C; ++i) acc[i] = vdupq_n_f32(1.0f + static_cast<float>(i) * 1e-6f);
  const float32x4_t a = vdupq_n_f32(0.999999f), b = vdupq_n_f32(1e-7f);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < C; ++i) acc[i] = vfmaq_f32(b, acc[i], a);  // b + acc * a
  }
  float32x4_t s = acc[0];
  for (int i = 1; i < C; ++i) s = vaddq_f32(s, acc[i]);
  return vaddvq_f32(s);
}
#endif
template <int C>
__attribute__((noinline)) float fma_portable(long iters) {
  float acc[C];
  for (int i = 0; i < C; ++i) acc[i] = 1.0f + static_cast<float>(i) * 1e-6f;
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < C; ++i) acc[i] = std::fma(acc[i], 0.999999f, 1e-7f);
  float s = 0;
  for (float x : acc) s += x;
  return s;
}

struct Kernel {
  float (*fn)(long) = nullptr;
  int chains = 0, lanes = 0, flops_per_lane_op = 2;
  const char* isa = "";
};

#if defined(__x86_64__) && defined(__GNUC__)
#define CPU_HAS(x) (__builtin_cpu_init(), __builtin_cpu_supports(x))
#else
#define CPU_HAS(x) false
#endif

Kernel fp32_kernel(const RooflineFaults& f) {
  if (f.scalar) return Kernel{fma_portable<1>, 1, 1, 2, "portable"};  // a planted fault: no SIMD path dispatched
#if defined(__x86_64__) && defined(__GNUC__)
  if (CPU_HAS("avx512f"))
    return f.few_chains ? Kernel{fma_avx512<1>, 1, 16, 2, "avx512"} : Kernel{fma_avx512<24>, 24, 16, 2, "avx512"};
  if (CPU_HAS("avx2") && CPU_HAS("fma"))
    return f.few_chains ? Kernel{fma_avx2<1>, 1, 8, 2, "avx2"} : Kernel{fma_avx2<12>, 12, 8, 2, "avx2"};
#endif
#if defined(__aarch64__)
  return f.few_chains ? Kernel{fma_neon<1>, 1, 4, 2, "neon"} : Kernel{fma_neon<24>, 24, 4, 2, "neon"};
#endif
  return f.few_chains ? Kernel{fma_portable<1>, 1, 1, 2, "portable"} : Kernel{fma_portable<8>, 8, 1, 2, "portable"};
}

// `min_result`, when given, receives the smallest value any run of the kernel returned (AMX's exactness flag).
FlopsPeak run_peak(const Kernel& k, int threads, int passes, double seconds, float* min_result = nullptr) {
  threads = std::max(1, threads);
  const double flops_per_iter = static_cast<double>(k.chains) * k.lanes * k.flops_per_lane_op;
  // Calibrate on one thread: iterations for `seconds`.
  long iters = 1 << 14;
  for (;;) {
    const auto t0 = Clock::now();
    volatile float sink = k.fn(iters);
    (void)sink;
    const double s = seconds_since(t0);
    if (s > seconds / 8 || iters > (1L << 40)) {
      iters = std::max(1L, static_cast<long>(static_cast<double>(iters) * seconds / std::max(s, 1e-9)));
      break;
    }
    iters *= 4;
  }
  FlopsPeak best;
  best.isa = k.isa;
  best.threads = threads;
  best.chains = k.chains;
  best.lanes = k.lanes;
  for (int p = 0; p < std::max(1, passes); ++p) {
    Span span(threads);
    std::vector<float> sink(threads);
    run_pinned(threads, [&](int t) {
      span.start[t] = Clock::now();
      sink[t] = k.fn(iters);
      span.end[t] = Clock::now();
    });
    const double wall = span.seconds();
    const double rate = flops_per_iter * static_cast<double>(iters) * threads / wall;
    if (rate > best.flops_per_s) {
      best.flops_per_s = rate;
      best.seconds = wall;
    }
    volatile float keep = sink[0];
    (void)keep;
    if (min_result)
      for (float v : sink) *min_result = std::min(*min_result, v);
  }
  return best;
}

// ---- clock --------------------------------------------------------------------------------------------------
// Two dependent chains whose latency no core shortens, on two different units; the clock is their count x latency
// over the time, and the two must agree (a core that shortcuts one of them, as Golden Cove and later fold a chain of
// `add reg, imm` at rename and ran one at ~5 per cycle, shows as a disagreement, not as a 10 GHz clock).
//  - x86-64: `imul r64, r64`, 3 cycles on the multiplier of every x86-64 core since the Pentium 4 / K8 (Intel's and
//    AMD's optimisation manuals; uops.info); `add r64, r64` from a register, 1 cycle on every integer ALU. Not a SIMD
//    op: their latencies differ by core (`paddq xmm` is 1 cycle up to Zen 4 and 2 on Zen 5, which read 2.0 GHz
//    against imul's 4.0 on a Turin core), and not an immediate, which Golden Cove folds at rename.
//  - AArch64: `add x, x, #1` (1 cycle) and a scalar `fmadd d` (4 cycles on Neoverse N1, V1, N2 and V2: the Arm
//    software optimisation guides, LLVM's AArch64SchedNeoverse*.td; a 64-bit `madd` is 2 on V1/N2/V2 but 4 on N1).
// 32 operations per iteration, the loop's own add and branch run beside the chain on other ports.
struct Chain {
  std::uint64_t (*fn)(std::uint64_t);
  double cycles_per_op;
  const char* name;
};
#if defined(__x86_64__)
__attribute__((noinline)) std::uint64_t imul_chain(std::uint64_t iters) {
  std::uint64_t x = 3, m = 0x9E3779B97F4A7C15ULL;
  for (std::uint64_t i = 0; i < iters; ++i) asm volatile(".rept 32\n\timul %1, %0\n\t.endr" : "+r"(x) : "r"(m));
  return x;
}
__attribute__((noinline)) std::uint64_t add_reg_chain(std::uint64_t iters) {
  // A register operand, not an immediate: its value is not known at rename, so no core can fold the chain.
  std::uint64_t x = 0, one = 1;
  for (std::uint64_t i = 0; i < iters; ++i) asm volatile(".rept 32\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(one));
  return x;
}
const Chain kClockChains[2] = {{imul_chain, 3, "imul r64 chain (3 cycles each)"},
                               {add_reg_chain, 1, "add r64, r64 chain (1 cycle each)"}};
#elif defined(__aarch64__)
__attribute__((noinline)) std::uint64_t add_chain(std::uint64_t iters) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iters; ++i) asm volatile(".rept 32\n\tadd %0, %0, #1\n\t.endr" : "+r"(x));
  return x;
}
__attribute__((noinline)) std::uint64_t fmadd_chain(std::uint64_t iters) {
  double x = 1.0;
  const double m = 0.999999, c = 1e-7;
  for (std::uint64_t i = 0; i < iters; ++i)
    asm volatile(".rept 32\n\tfmadd %d0, %d0, %d1, %d2\n\t.endr" : "+w"(x) : "w"(m), "w"(c));
  return static_cast<std::uint64_t>(x * 1e6);
}
const Chain kClockChains[2] = {{add_chain, 1, "add x chain (1 cycle each)"},
                               {fmadd_chain, 4, "fmadd d chain (4 cycles each)"}};
#else
__attribute__((noinline)) std::uint64_t plain_chain(std::uint64_t iters) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iters; ++i)
    for (int j = 0; j < 32; ++j) asm volatile("" : "+r"(x));
  return x;
}
const Chain kClockChains[2] = {{plain_chain, 0, "no clock chain for this architecture"},
                               {plain_chain, 0, "no clock chain for this architecture"}};
#endif

// Iterations of a chain that take about `seconds` on one thread.
std::uint64_t chain_iterations(const Chain& c, double seconds) {
  std::uint64_t iters = 1 << 8;
  for (;;) {
    const auto t0 = Clock::now();
    volatile std::uint64_t sink = c.fn(iters);
    (void)sink;
    const double s = seconds_since(t0);
    if (s > seconds / 8 || iters > (1ULL << 40))
      return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(iters) * seconds / std::max(s, 1e-9)));
    iters *= 4;
  }
}

// ---- bandwidth ----------------------------------------------------------------------------------------------
struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;
Buffer alloc_floats(std::size_t n) {
  void* p = std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return Buffer(static_cast<float*>(p));
}

// Sum of x[0..n): four streams (the four quarters of the range, read side by side, as a GEMV reads four weight
// rows: one sequential stream per thread leaves this machine's prefetchers idle and reads ~40% less), two
// accumulators of 8 lanes per stream; exact for the small integers the arrays hold.
#if defined(__x86_64__) && defined(__GNUC__)
// STEP: the loop's stride in floats, 16 (what it loads).
template <int STEP>
CC_TARGET("avx2,fma") double read_avx2(const float* x, std::size_t n) {
  constexpr int S = 4;
  const std::size_t q = n / S / 16 * 16;
  __m256 a[S][2];
  for (auto& st : a)
    for (auto& r : st) r = _mm256_setzero_ps();
  for (std::size_t i = 0; i < q; i += STEP)
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      const float* p = x + s * q + i;
      a[s][0] = _mm256_add_ps(a[s][0], _mm256_loadu_ps(p));  // (unaligned loads: a caller's buffer may be anywhere)
      a[s][1] = _mm256_add_ps(a[s][1], _mm256_loadu_ps(p + 8));
    }
  double sum = 0;
  for (auto& st : a)
    for (auto& r : st) {
      alignas(32) float out[8];
      _mm256_store_ps(out, r);
      for (float v : out) sum += v;
    }
  for (std::size_t i = S * q; i < n; ++i) sum += x[i];
  return sum;
}
#endif
template <int STEP>
__attribute__((noinline)) double read_portable(const float* x, std::size_t n) {
  constexpr int S = 4;
  const std::size_t q = n / S / 16 * 16;
  float a[S][16] = {};
  for (std::size_t i = 0; i < q; i += STEP)
    for (int s = 0; s < S; ++s)
      for (int j = 0; j < 16; ++j) a[s][j] += x[s * q + i + j];
  double sum = 0;
  for (auto& st : a)
    for (float v : st) sum += v;
  for (std::size_t i = S * q; i < n; ++i) sum += x[i];
  return sum;
}
double read_sum(const float* x, std::size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (CPU_HAS("avx2") && CPU_HAS("fma")) return read_avx2<16>(x, n);
#endif
  return read_portable<16>(x, n);
}

__attribute__((noinline)) void triad(float* a, const float* b, const float* c, float s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

// The read pass's unit of work: 1 MiB blocks pulled from a shared counter, each read as four streams 256 KiB apart,
// the way the bf16 GEMV reads its weights (1 MiB chunks of rows, four rows a quarter of a chunk apart). A probe that
// gave each thread one half of the array, read as four streams a quarter of that half apart, read up to 1.26x slower
// than the GEMV on a Zen 4 guest: a roof below what a kernel reaches is not a roof.
constexpr std::size_t kReadBlock = std::size_t{1} << 18;  // floats

// Element i holds i mod 8 (exact in fp32 partial sums of up to 2^24 / 7 elements per lane).
float fill_value(std::size_t i) { return static_cast<float>(i & 7U); }

}  // namespace

bool parse_roofline_fault(const std::string& name, RooflineFaults* out) {
  *out = {};
  if (name == "probe_few_chains") {
    out->few_chains = true;
    return true;
  }
  if (name == "probe_scalar") {
    out->scalar = true;
    return true;
  }
  if (name == "probe_read_skips") {
    out->read_skips = true;
    return true;
  }
  return name.empty();
}

std::string roofline_simd_path() { return fp32_kernel({}).isa; }

FlopsPeak measure_fma_peak(int threads, const RooflineFaults& f, int passes, double seconds) {
  return run_peak(fp32_kernel(f), threads, passes, seconds);
}

FlopsPeak measure_bf16_peak(int threads, int passes, double seconds) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (CPU_HAS("avx512f") && CPU_HAS("avx512bf16"))
    return run_peak(Kernel{bf16_avx512, 16, 16, 4, "avx512_bf16"}, threads, passes, seconds);
#endif
  (void)threads, (void)passes, (void)seconds;
  return {};
}

AmxPeak measure_amx_peak(int threads, int passes, double seconds) {
  AmxPeak r;
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  // CPUID.(EAX=7, ECX=0):EDX bit 22 = AMX-BF16, bit 24 = AMX-TILE.
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) || !(edx & (1u << 22)) || !(edx & (1u << 24))) {
    r.why_not = "this CPU has no AMX bf16 tiles (CPUID leaf 7: amx_bf16 / amx_tile clear)";
    return r;
  }
  int fds[2];
  if (pipe(fds) != 0) {
    r.why_not = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  struct Msg {
    double flops = 0, seconds = 0;
    int exact = 0, chains = 0, lanes = 0, threads = 0;
    char why[240] = {};
  };
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]), close(fds[1]);
    r.why_not = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {  // the child: ask Linux for the tile state (once per process, before any thread), then measure
    close(fds[0]);
    Msg m;
    constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
      std::snprintf(m.why, sizeof m.why, "Linux refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM: %s)",
                    std::strerror(errno));
    } else {
      float min_result = 1;
      const FlopsPeak p = run_peak(Kernel{amx_kernel, 4, 256, 64, "amx_bf16"}, threads, passes, seconds, &min_result);
      m.flops = p.flops_per_s, m.seconds = p.seconds, m.exact = min_result == 1.0f;
      m.chains = p.chains, m.lanes = p.lanes, m.threads = p.threads;
    }
    const ssize_t w = write(fds[1], &m, sizeof m);
    _exit(w == static_cast<ssize_t>(sizeof m) ? 0 : 1);
  }
  close(fds[1]);
  Msg m;
  std::size_t got = 0;
  for (ssize_t n; got < sizeof m && (n = read(fds[0], reinterpret_cast<char*>(&m) + got, sizeof m - got)) != 0;)
    if (n > 0) got += static_cast<std::size_t>(n);
    else if (errno != EINTR) break;
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    r.why_not = std::string("the AMX probe's process died of signal ") + std::to_string(WTERMSIG(status)) + " (" +
                strsignal(WTERMSIG(status)) + ")";
    return r;
  }
  if (got != sizeof m) {
    r.why_not = "the AMX probe's process ended without a result";
    return r;
  }
  if (m.why[0] != 0) {
    r.why_not = m.why;
    return r;
  }
  r.peak.flops_per_s = m.flops;
  r.peak.seconds = m.seconds;
  r.peak.isa = "amx_bf16";
  r.peak.chains = m.chains;
  r.peak.lanes = m.lanes;
  r.peak.threads = m.threads;
  r.exact = m.exact != 0;
#else
  (void)threads, (void)passes, (void)seconds;
  r.why_not = "AMX exists on x86-64 Linux only";
#endif
  return r;
}

ClockReading measure_clock(int threads, double seconds) {
  threads = std::max(1, threads);
  ClockReading r;
  const Chain& a = kClockChains[0];
  const Chain& b = kClockChains[1];
  r.methods[0] = a.name;
  r.methods[1] = b.name;
  if (a.cycles_per_op <= 0 || b.cycles_per_op <= 0) return r;
  // Many short passes, each thread running both chains back to back (so that both see the same moment), the best
  // pass of each kept: a neighbour on a shared machine only ever lowers a reading, and a pass of a few milliseconds
  // often runs whole within one time slice (16 passes of 2 x 20 ms read 1.0-3.0 GHz under a load of 6 here; the
  // clock is 2.8).
  const std::uint64_t na = chain_iterations(a, seconds), nb = chain_iterations(b, seconds);
  for (int pass = 0; pass < 16; ++pass) {
    std::vector<double> ha(threads), hb(threads);
    run_pinned(threads, [&](int t) {
      auto t0 = Clock::now();
      volatile std::uint64_t sink = a.fn(na);
      ha[t] = 32.0 * a.cycles_per_op * static_cast<double>(na) / seconds_since(t0);
      t0 = Clock::now();
      sink = b.fn(nb);
      (void)sink;
      hb[t] = 32.0 * b.cycles_per_op * static_cast<double>(nb) / seconds_since(t0);
    });
    double ma = 0, mb = 0;
    for (int t = 0; t < threads; ++t) ma += ha[t] / threads, mb += hb[t] / threads;
    r.hz[0] = std::max(r.hz[0], ma);
    r.hz[1] = std::max(r.hz[1], mb);
  }
  return r;
}

double ClockReading::agreed_hz(double tolerance) const {
  if (!(hz[0] > 0) || !(hz[1] > 0)) return 0;
  const double lo = std::min(hz[0], hz[1]), hi = std::max(hz[0], hz[1]);
  return hi <= lo * (1 + tolerance) ? hi : 0;
}

std::size_t last_level_cache_bytes() {
  std::size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream lvl(dir + "level"), size(dir + "size");
    int level = 0;
    std::string s;
    if (!(lvl >> level) || !(size >> s) || s.empty()) continue;
    std::size_t mult = 1;
    if (s.back() == 'K') mult = 1024, s.pop_back();
    else if (s.back() == 'M') mult = 1024 * 1024, s.pop_back();
    const std::size_t bytes = std::strtoull(s.c_str(), nullptr, 10) * mult;
    if (level >= 2) best = std::max(best, bytes);
  }
  return best;
}

namespace {
// One read pass over `blocks` on `threads` pinned threads, the blocks pulled from a shared counter: its wall time;
// `checksum` (optional) receives the sum of everything read.
struct ReadBlock {
  const float* p;
  std::size_t n;
};
double read_pass(const std::vector<ReadBlock>& blocks, int threads, bool skips, double* checksum = nullptr) {
  Span span(threads);
  std::vector<double> sums(threads);
  std::atomic<std::size_t> next{0};
  run_pinned(threads, [&](int t) {
    span.start[t] = Clock::now();
    double sum = 0;
    // The planted fault steps over the blocks in bytes for floats: one block in four read, whole (the hardware's
    // prefetchers cannot fill 3 MiB gaps, so the probe reports four times the bandwidth on any machine; an
    // element-level skip within a block read 1.9-2.5x, as the prefetchers and the moment allowed).
    const std::size_t stride = skips ? sizeof(float) : 1;
    for (std::size_t b; (b = next.fetch_add(1, std::memory_order_relaxed) * stride) < blocks.size();)
      sum += read_sum(blocks[b].p, blocks[b].n);
    sums[t] = sum;
    span.end[t] = Clock::now();
  });
  double total = 0;
  for (double x : sums) total += x;
  if (checksum) *checksum = total;
  volatile double keep = total;
  (void)keep;
  return span.seconds();
}
// x[0..n) cut into the probe's 1 MiB blocks, appended to `out`.
void cut_blocks(const float* x, std::size_t n, std::vector<ReadBlock>* out) {
  for (std::size_t i = 0; i < n; i += kReadBlock) out->push_back({x + i, std::min(kReadBlock, n - i)});
}
}  // namespace

double measure_read_seconds(const std::vector<std::pair<const void*, std::size_t>>& buffers, int threads, int passes,
                            const RooflineFaults& f) {
  threads = std::max(1, threads);
  std::vector<ReadBlock> blocks;  // every buffer cut into blocks (a tail of under 4 bytes left out)
  for (const auto& [ptr, bytes] : buffers) cut_blocks(static_cast<const float*>(ptr), bytes / sizeof(float), &blocks);
  std::vector<double> times;
  for (int pass = 0; pass < std::max(1, passes); ++pass) times.push_back(read_pass(blocks, threads, f.read_skips));
  return base::median(std::move(times));
}

Bandwidth measure_bandwidth(int threads, std::size_t array_bytes, int passes, const RooflineFaults& f) {
  threads = std::max(1, threads);
  Bandwidth bw;
  bw.threads = threads;
  bw.llc_bytes = last_level_cache_bytes();
  if (array_bytes == 0) array_bytes = std::max<std::size_t>(4 * bw.llc_bytes, std::size_t{64} << 20);
  const std::size_t n = array_bytes / sizeof(float) / 64 * 64;
  bw.array_bytes = n * sizeof(float);
  Buffer a = alloc_floats(n), b = alloc_floats(n), c = alloc_floats(n);
  // Each thread's chunk, 64-element aligned; the thread that reads a chunk also first touches it.
  auto chunk = [&](int t, std::size_t* lo, std::size_t* hi) {
    const std::size_t per = (n / 64 + threads - 1) / threads * 64;
    *lo = std::min(n, per * t);
    *hi = std::min(n, *lo + per);
  };
  run_pinned(threads, [&](int t) {
    std::size_t lo, hi;
    chunk(t, &lo, &hi);
    for (std::size_t i = lo; i < hi; ++i) {
      a[i] = 0;
      b[i] = fill_value(i);
      c[i] = 1;
    }
  });
  for (std::size_t i = 0; i < n % 8; ++i) bw.expected_checksum += static_cast<double>(fill_value(n - n % 8 + i));
  bw.expected_checksum += static_cast<double>(n / 8) * 28.0;  // NOLINT(bugprone-integer-division): 0 + ... + 7 per 8

  std::vector<ReadBlock> blocks;
  cut_blocks(b.get(), n, &blocks);
  std::vector<double> reads, triads;
  for (int p = 0; p < std::max(1, passes); ++p) {
    reads.push_back(static_cast<double>(n) * sizeof(float) / read_pass(blocks, threads, f.read_skips, &bw.checksum));
    Span span(threads);
    run_pinned(threads, [&](int t) {
      std::size_t lo, hi;
      chunk(t, &lo, &hi);
      span.start[t] = Clock::now();
      triad(a.get() + lo, b.get() + lo, c.get() + lo, 0.5f, hi - lo);
      span.end[t] = Clock::now();
    });
    triads.push_back(3.0 * static_cast<double>(n) * sizeof(float) / span.seconds());
  }
  bw.read_bytes_per_s = base::median(reads);
  bw.read_best_bytes_per_s = *std::max_element(reads.begin(), reads.end());
  bw.triad_bytes_per_s = base::median(triads);
  volatile float keep = a[n / 2];
  (void)keep;
  return bw;
}

}  // namespace claimcheck::kernels
