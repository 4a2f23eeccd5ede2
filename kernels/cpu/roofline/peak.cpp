// The roofline probe's compute roofs: peak FLOP/s with enough independent chains for the ISA dispatched (fp32 FMA on
// AVX-512, AVX2, NEON or the portable baseline), bf16 dot products (vdpbf16ps) and AMX bf16 tiles, on pinned threads.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "../isa.h"
#include "claimcheck/kernels/roofline.h"
#include "probe.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

namespace claimcheck::kernels {
namespace {

using probe::Clock;
using probe::run_pinned;
using probe::seconds_since;
using probe::Span;

// Each kernel runs `iters` iterations of `chains` independent vector FMAs and returns a value that depends on
// every chain (so nothing is optimised away). FLOPs = iters x chains x lanes x 2.
// Zen 3 / Skylake: FMA latency 4, two FMA pipes: >= 8 chains in flight; 12 ymm chains + 2 constants fit in the
// 16 ymm registers of AVX2, 24 zmm chains in the 32 of AVX-512.
#if defined(__x86_64__) && defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12's AVX-512 headers (_mm512_reduce_add_ps)
#pragma GCC diagnostic ignored "-Wuninitialized"
template <int C>
CC_PROBE("avx2,fma")
float fma_avx2(long iters) {
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
CC_PROBE("avx512f")
float fma_avx512(long iters) {
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
// bf16 pairs dotted into fp32 lanes: 32 multiply-adds (64 FLOP) per vdpbf16ps. The pairs hold 1.0 and 2^-10, so that
// each instruction adds exactly 2^-9 to each of its 16 lanes: the kernel returns the sum of every lane over the
// iterations, per iteration, which a caller holds to the work it says it did (C instructions of 16 lanes per
// iteration: C x 16 x 2^-9). Each accumulator starts at its own index (accumulators alike from the start are one to
// the compiler, which then runs one chain and copies it: GCC did). Exact: blocks of at most 2^14 iterations, so that
// a lane stays below 15 + 32 and the sum of the block's 256 lanes below 2^14, with 9 bits below the point: 23 bits.
CC_PROBE("avx512f,avx512bf16") float bf16_avx512(long iters) {
  constexpr int C = 16;
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3a80);  // 1.0, 2^-10
  double total = 0;
  for (long done = 0; done < iters;) {
    const long n = std::min(iters - done, 1L << 14);
    __m512 acc[C];
    for (int i = 0; i < C; ++i) acc[i] = _mm512_set1_ps(static_cast<float>(i));
    for (long it = 0; it < n; ++it) {
#pragma GCC unroll 16
      for (int i = 0; i < C; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    }
    __m512 s = acc[0];
    for (int i = 1; i < C; ++i) s = _mm512_add_ps(s, acc[i]);
    total += static_cast<double>(_mm512_reduce_add_ps(s)) - 16.0 * C * (C - 1) / 2.0;  // less the starting values
    done += n;
  }
  return static_cast<float>(total / static_cast<double>(iters));  // per iteration: C x 16 x 2^-9 = 0.5
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

// The FMA probe's kernel on `path` ("avx512", "avx2", "neon", "portable"), where this CPU and build run it.
Kernel path_kernel(const std::string& path, const RooflineFaults& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (path == "avx512" && isa::cpu().avx512)
    return f.few_chains ? Kernel{fma_avx512<1>, 1, 16, 2, "avx512"} : Kernel{fma_avx512<24>, 24, 16, 2, "avx512"};
  if (path == "avx2" && isa::cpu().avx2_fma)  // a planted fault counts 16 lanes of the ymm's 8
    return f.few_chains ? Kernel{fma_avx2<1>, 1, 8, 2, "avx2"}
                        : Kernel{fma_avx2<12>, 12, f.avx2_overcount ? 16 : 8, 2, "avx2"};
#endif
#if defined(__aarch64__)
  if (path == "neon")
    return f.few_chains ? Kernel{fma_neon<1>, 1, 4, 2, "neon"} : Kernel{fma_neon<24>, 24, 4, 2, "neon"};
#endif
  if (path == "portable")
    return f.few_chains ? Kernel{fma_portable<1>, 1, 1, 2, "portable"} : Kernel{fma_portable<8>, 8, 1, 2, "portable"};
  return {};
}

Kernel fp32_kernel(const RooflineFaults& f) {
  if (f.scalar) return Kernel{fma_portable<1>, 1, 1, 2, "portable"};  // a planted fault: no SIMD path dispatched
  std::vector<std::string> paths = fma_peak_paths_here();             // the widest first
  if (f.prefers_avx2) std::reverse(paths.begin(), paths.end());       // (a planted fault: the narrowest first)
  for (const std::string& p : paths)
    if (const Kernel k = path_kernel(p, f); k.fn) return k;
  return path_kernel("portable", f);
}

// The smallest and largest value any run of the kernel returned go into result_min / result_max (the AMX and bf16
// probes' closed forms).
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
  best.iterations = iters;
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
    for (float v : sink)
      best.result_min = std::min<double>(best.result_min, v), best.result_max = std::max<double>(best.result_max, v);
  }
  return best;
}

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
  if (name == "probe_counts_double") {
    out->counts_double = true;
    return true;
  }
  if (name == "probe_amx_k16") {
    out->amx_k16 = true;
    return true;
  }
  if (name == "probe_bf16_lanes_doubled") {
    out->bf16_lanes_doubled = true;
    return true;
  }
  if (name == "probe_bf16_as_fma") {
    out->bf16_as_fma = true;
    return true;
  }
  if (name == "probe_fill_floor") {
    out->fill_floor = true;
    return true;
  }
  if (name == "probe_threads_twice") {
    out->threads_twice = true;
    return true;
  }
  if (name == "probe_read_skips") {
    out->read_skips = true;
    return true;
  }
  if (name == "probe_read_overcount") {
    out->read_overcount = true;
    return true;
  }
  if (name == "probe_avx2_overcount") {
    out->avx2_overcount = true;
    return true;
  }
  if (name == "probe_clock_miscount") {
    out->clock_miscount = true;
    return true;
  }
  if (name == "probe_clock_halved") {
    out->clock_halved = true;
    return true;
  }
  if (name == "probe_llc_as_l1") {
    out->llc_as_l1 = true;
    return true;
  }
  if (name == "probe_prefers_avx2") {
    out->prefers_avx2 = true;
    return true;
  }
  return name.empty();
}

std::string roofline_simd_path() { return fp32_kernel({}).isa; }

FlopsPeak measure_fma_peak(int threads, const RooflineFaults& f, int passes, double seconds) {
  Kernel k = fp32_kernel(f);
  if (f.counts_double) k.flops_per_lane_op *= 2;  // a planted fault: an FMA counted as four FLOP
  FlopsPeak p = run_peak(k, threads, passes, seconds);
  // A planted fault: the rate of several threads multiplied by their number once more (one thread's stays right).
  if (f.threads_twice && threads > 1) p.flops_per_s *= threads;
  return p;
}

std::vector<std::string> fma_peak_paths_here() {
  std::vector<std::string> paths;
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa::cpu().avx512) paths.push_back("avx512");
  if (isa::cpu().avx2_fma) paths.push_back("avx2");
#endif
#if defined(__aarch64__)
  paths.push_back("neon");
#endif
  return paths;
}

FlopsPeak measure_fma_peak_on(const std::string& path, int threads, const RooflineFaults& f, int passes,
                              double seconds) {
  Kernel k = path_kernel(path, f);
  if (!k.fn) throw std::invalid_argument("measure_fma_peak_on: no '" + path + "' FMA probe on this CPU");
  if (f.counts_double) k.flops_per_lane_op *= 2;
  return run_peak(k, threads, passes, seconds);
}

FlopsPeak measure_bf16_peak(int threads, int passes, double seconds, const RooflineFaults& f) {
#if defined(__x86_64__) && defined(__GNUC__)
  // Four FLOP per lane and instruction: two products and two adds (a planted fault counts two, an FMA's).
  if (isa::cpu().avx512_bf16)
    return run_peak(Kernel{bf16_avx512, 16, f.bf16_lanes_doubled ? 32 : 16, f.bf16_as_fma ? 2 : 4, "avx512_bf16"},
                    threads, passes, seconds);
#endif
  (void)threads, (void)passes, (void)seconds, (void)f;
  return {};
}

AmxPeak measure_amx_peak(int threads, int passes, double seconds, const RooflineFaults& f) {
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
      // 64 FLOP per output lane and tile product: 32 bf16 pairs, each a product and an add (planted: 16 pairs).
      const FlopsPeak p =
          run_peak(Kernel{amx_kernel, 4, 256, f.amx_k16 ? 32 : 64, "amx_bf16"}, threads, passes, seconds);
      m.flops = p.flops_per_s, m.seconds = p.seconds, m.exact = p.result_min == 1.0 && p.result_max == 1.0;
      m.chains = p.chains, m.lanes = p.lanes, m.threads = p.threads;
    }
    const ssize_t w = write(fds[1], &m, sizeof m);
    _exit(w == static_cast<ssize_t>(sizeof m) ? 0 : 1);
  }
  close(fds[1]);
  Msg m;
  std::size_t got = 0;
  for (ssize_t n; got < sizeof m && (n = read(fds[0], reinterpret_cast<char*>(&m) + got, sizeof m - got)) != 0;)
    if (n > 0)
      got += static_cast<std::size_t>(n);
    else if (errno != EINTR)
      break;
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
  (void)threads, (void)passes, (void)seconds, (void)f;
  r.why_not = "AMX exists on x86-64 Linux only";
#endif
  return r;
}

}  // namespace claimcheck::kernels
