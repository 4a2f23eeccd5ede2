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
#include <cstdlib>
#include <fstream>
#include <memory>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace claimcheck::kernels {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

// Runs fn(t) on `threads` threads, thread t pinned to the t-th allowed CPU, all released together.
template <typename Fn>
void run_pinned(int threads, Fn fn) {
  const std::vector<int> cpus = allowed_cpus();
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      if (!cpus.empty()) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[static_cast<std::size_t>(t) % cpus.size()], &one);
        pthread_setaffinity_np(pthread_self(), sizeof one, &one);
      }
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      fn(t);
    });
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
}

// ---- FMA chains ---------------------------------------------------------------------------------------------
// Each kernel runs `iters` iterations of `chains` independent vector FMAs and returns a value that depends on
// every chain (so nothing is optimised away). FLOPs = iters x chains x lanes x 2.
// Zen 3 / Skylake: FMA latency 4, two FMA pipes: >= 8 chains in flight; 12 ymm chains + 2 constants fit in the
// 16 ymm registers of AVX2, 24 zmm chains in the 32 of AVX-512.
#if defined(__x86_64__) && defined(__GNUC__)
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
  return f.few_chains ? Kernel{fma_portable<1>, 1, 1, 2, "portable"} : Kernel{fma_portable<8>, 8, 1, 2, "portable"};
}

FlopsPeak run_peak(const Kernel& k, int threads, int passes, double seconds) {
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
  }
  return best;
}

// ---- clock --------------------------------------------------------------------------------------------------
// 64 dependent adds per iteration: one cycle each on every x86 core since the Pentium Pro.
__attribute__((noinline)) std::uint64_t add_chain(std::uint64_t iters) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iters; ++i) {
#if defined(__x86_64__)
    asm volatile(
        ".rept 64\n\t"
        "add $1, %0\n\t"
        ".endr"
        : "+r"(x));
#else
    for (int j = 0; j < 64; ++j) asm volatile("" : "+r"(x) : : );
    x += 64;
#endif
  }
  return x;
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
// STEP: the loop's stride in floats, 16 (what it loads); 16 * sizeof(float) is a planted fault (a stride in bytes
// for one in elements) that reads one block in four.
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
      a[s][0] = _mm256_add_ps(a[s][0], _mm256_load_ps(p));
      a[s][1] = _mm256_add_ps(a[s][1], _mm256_load_ps(p + 8));
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
double read_sum(const float* x, std::size_t n, bool skip) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (CPU_HAS("avx2") && CPU_HAS("fma")) return skip ? read_avx2<16 * sizeof(float)>(x, n) : read_avx2<16>(x, n);
#endif
  return skip ? read_portable<16 * sizeof(float)>(x, n) : read_portable<16>(x, n);
}

__attribute__((noinline)) void triad(float* a, const float* b, const float* c, float s, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
}

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

double measure_clock_hz(int threads, double seconds) {
  threads = std::max(1, threads);
  std::uint64_t iters = 1 << 12;
  for (;;) {  // calibrate
    const auto t0 = Clock::now();
    volatile std::uint64_t sink = add_chain(iters);
    (void)sink;
    const double s = seconds_since(t0);
    if (s > seconds / 8) {
      iters = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(iters) * seconds / s));
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<double> hz(threads);
    run_pinned(threads, [&](int t) {
      const auto t0 = Clock::now();
      volatile std::uint64_t sink = add_chain(iters);
      (void)sink;
      hz[t] = 64.0 * static_cast<double>(iters) / seconds_since(t0);
    });
    double mean = 0;
    for (double h : hz) mean += h / threads;
    best = std::max(best, mean);
  }
  return best;
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
  bw.expected_checksum += static_cast<double>(n / 8) * 28.0;  // 0 + 1 + ... + 7 per 8 elements

  std::vector<double> reads, triads;
  for (int p = 0; p < std::max(1, passes); ++p) {
    Span span(threads);
    std::vector<double> sums(threads);
    run_pinned(threads, [&](int t) {
      std::size_t lo, hi;
      chunk(t, &lo, &hi);
      span.start[t] = Clock::now();
      sums[t] = read_sum(b.get() + lo, hi - lo, f.read_skips);
      span.end[t] = Clock::now();
    });
    reads.push_back(static_cast<double>(n) * sizeof(float) / span.seconds());
    bw.checksum = 0;
    for (double s : sums) bw.checksum += s;

    run_pinned(threads, [&](int t) {
      std::size_t lo, hi;
      chunk(t, &lo, &hi);
      span.start[t] = Clock::now();
      triad(a.get() + lo, b.get() + lo, c.get() + lo, 0.5f, hi - lo);
      span.end[t] = Clock::now();
    });
    triads.push_back(3.0 * static_cast<double>(n) * sizeof(float) / span.seconds());
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  bw.read_bytes_per_s = median(reads);
  bw.read_best_bytes_per_s = *std::max_element(reads.begin(), reads.end());
  bw.triad_bytes_per_s = median(triads);
  volatile float keep = a[n / 2];
  (void)keep;
  return bw;
}

}  // namespace claimcheck::kernels
