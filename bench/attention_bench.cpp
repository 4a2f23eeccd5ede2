// Custom causal attention (each version) against PyTorch 2.x's at::scaled_dot_product_attention (its CPU flash
// kernel where ATen picks it), fp32, B=1, H=8, D=64, T in {256, 1024, 4096}, at equal thread counts; and this
// CPU's measured FMA peak, so that GFLOP/s can be read as a share of it.
// Every version is validated against the fp64 reference before anything is timed (llm.c's rule).
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <new>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "claimcheck/base/threads.h"
#include "claimcheck/kernels/attention.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/kernels/roofline.h"
#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/gemv.h"
#include "verify.h"

namespace K = claimcheck::kernels;
namespace ref = claimcheck::ref;

namespace {

int g_threads = 1;

// 64-byte aligned, as LibTorch's own allocator gives: a 16-byte aligned buffer (std::vector's) makes every other
// 256-bit load and every 512-bit load straddle two cache lines, for the project's kernels and LibTorch's alike.
template <typename T>
struct Aligned64 {
  using value_type = T;
  Aligned64() = default;
  template <typename U>
  Aligned64(const Aligned64<U>&) {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64})); }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{64}); }
  template <typename U>
  bool operator==(const Aligned64<U>&) const {
    return true;
  }
  template <typename U>
  bool operator!=(const Aligned64<U>&) const {
    return false;
  }
};
using Buffer = std::vector<float, Aligned64<float>>;

struct Data {
  Buffer q, k, v, out;
  ref::AttnShape s;
};

Data make(int T) {
  Data d;
  d.s = {1, 8, T, 64};
  std::mt19937 rng(42);
  std::normal_distribution<float> n;
  for (auto* x : {&d.q, &d.k, &d.v}) {
    x->resize(d.s.elements());
    for (auto& e : *x) e = n(rng);
  }
  d.out.resize(d.s.elements());
  return d;
}

// Useful FLOPs of causal attention: QK^T and PV over the T(T+1)/2 visible pairs, 2 FLOP per multiply-add.
double flops(const ref::AttnShape& s) { return 2.0 * 2.0 * s.B * s.H * (s.T * (s.T + 1.0) / 2) * s.D; }

void BM_custom(benchmark::State& st, int version) {
  Data d = make(static_cast<int>(st.range(0)));
  K::AttentionOptions o;
  o.threads = g_threads;
  for (auto _ : st) {
    K::attention_forward(version, d.q.data(), d.k.data(), d.v.data(), d.out.data(), {d.s.B, d.s.H, d.s.T, d.s.D}, o);
    benchmark::DoNotOptimize(d.out.data());
  }
  bench::verify(st, ref::attention_sampled_error(d.q.data(), d.k.data(), d.v.data(), d.out.data(), d.s), 1e-4,
                "attention");
  st.counters["FLOP/s"] = benchmark::Counter(flops(d.s), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = g_threads;
}

// The library's own call and nothing else: the inputs wrapped as tensors once, the output left in LibTorch's tensor
// (the earlier row also copied the output into a vector inside the loop).
void BM_libtorch(benchmark::State& st) {
  Data d = make(static_cast<int>(st.range(0)));
  ref::torch_set_threads(g_threads);
  ref::TorchSdpa sdpa(d.q.data(), d.k.data(), d.v.data(), d.s);
  for (auto _ : st) {
    sdpa.run();
    benchmark::DoNotOptimize(sdpa.out());
  }
  st.counters["FLOP/s"] = benchmark::Counter(flops(d.s), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = ref::torch_get_threads();
}

// LibTorch's bf16 matmul (oneDNN) at M = N = K = st.range(0): the competitor an AMX or bf16 GEMM is held against
// (the median of 3 calls per iteration, tensors made outside the timing). Registered where the CPU has bf16
// instructions: elsewhere oneDNN emulates bf16, seconds per call and no competitor to anything.
bool cpu_flag(const std::string& flag) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("flags", 0) == 0) return (line + " ").find(" " + flag + " ") != std::string::npos;
  return false;
}
void BM_libtorch_matmul_bf16(benchmark::State& st) {
  const int n = static_cast<int>(st.range(0));
  ref::torch_set_threads(g_threads);
  for (auto _ : st) st.SetIterationTime(ref::torch_matmul_bf16_seconds(n, n, n, 3));
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = ref::torch_get_threads();
}

// C[m][n] of a matmul (A [., Kd], W [N, Kd], C [., N]; bf16 operands) against its fp64 dot product: the error over
// the dot product's sum of |a w|.
double matmul_entry_error(const std::vector<K::bf16_t>& a, const std::vector<K::bf16_t>& w, const float* c, int Kd,
                          int N, int m, int n) {
  double want = 0, absdot = 0;
  for (int k = 0; k < Kd; ++k) {
    const double p = ref::bf16_value(a[static_cast<std::size_t>(m) * Kd + k]) *
                     ref::bf16_value(w[static_cast<std::size_t>(n) * Kd + k]);
    want += p;
    absdot += std::fabs(p);
  }
  return std::fabs(c[static_cast<std::size_t>(m) * N + n] - want) / std::max(absdot, 1e-30);
}
// What fp32 sums of Kd products may lose, over their sum of |a w| (test_gemv's bound).
double matmul_allowed_error(int Kd) { return 16 * std::ldexp(1.0, -24) * std::sqrt(Kd + 1.0); }

// The project's bf16 matmul at M = N = K = st.range(0) (kernels/cpu/matmul_bf16.cpp: AMX tiles where present, else
// vdpbf16ps, else fp32 FMA; `engine` forces one), the median of 3 calls per iteration like the competitor's, packing
// included (oneDNN re-orders its operands inside the call too). The label names the engine; validated against fp64
// before any timing.
void BM_matmul_bf16(benchmark::State& st, const std::string& engine) {
  if (!engine.empty() && !K::matmul_bf16_force(engine)) {
    st.SkipWithError(("no " + engine + " engine on this CPU").c_str());
    return;
  }
  const int n = static_cast<int>(st.range(0));
  std::mt19937 rng(7);
  std::normal_distribution<float> d;
  std::vector<K::bf16_t> a(static_cast<std::size_t>(n) * n), w(a.size());
  for (auto* v : {&a, &w})
    for (auto& e : *v) e = K::to_bf16(d(rng));
  Buffer c(static_cast<std::size_t>(n) * n);
  K::matmul_bf16(a.data(), n, n, w.data(), n, c.data(), {g_threads, {}});  // warm-up (pages, threads)
  for (auto _ : st) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      K::matmul_bf16(a.data(), n, n, w.data(), n, c.data(), {g_threads, {}});
      t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    st.SetIterationTime(t[1]);
  }
  benchmark::DoNotOptimize(c.data());
  // What the last timed call wrote, on 8 x 8 sampled entries (the last row and column among them).
  double worst = 0;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j)
      worst = std::max(worst, matmul_entry_error(a, w, c.data(), n, n, i * (n - 1) / 7, j * (n - 1) / 7));
  bench::verify(st, worst, matmul_allowed_error(n), "bf16 matmul");
  st.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = g_threads;
  st.SetLabel(K::matmul_bf16_engine());
  K::matmul_bf16_force("");
}

// The matmul's fp64 check at a shape with every edge (partial tiles, a K slice boundary), on every engine the
// benchmark times: no timing without it.
bool validate_matmul(const std::string& engine) {
  if (!engine.empty() && !K::matmul_bf16_force(engine)) return false;
  struct Restore {
    ~Restore() { K::matmul_bf16_force(""); }
  } restore;
  const int M = 70, N = 300, Kd = 4130;  // past one K slice (kernels/cpu/matmul_bf16.cpp: 4096)
  std::mt19937 rng(3);
  std::normal_distribution<float> d;
  std::vector<K::bf16_t> a(static_cast<std::size_t>(M) * Kd), w(static_cast<std::size_t>(N) * Kd);
  for (auto* v : {&a, &w})
    for (auto& e : *v) e = K::to_bf16(d(rng));
  std::vector<float> c(static_cast<std::size_t>(M) * N);
  K::matmul_bf16(a.data(), M, Kd, w.data(), N, c.data(), {g_threads, {}});
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      if (!(matmul_entry_error(a, w, c.data(), Kd, N, m, n) <= matmul_allowed_error(Kd))) {
        std::fprintf(stderr, "validation failed: matmul_bf16 (%s) C[%d][%d] = %g, error %g of its sum of |a w|\n",
                     K::matmul_bf16_engine().c_str(), m, n, c[static_cast<std::size_t>(m) * N + n],
                     matmul_entry_error(a, w, c.data(), Kd, N, m, n));
        return false;
      }
  return true;
}

bool validate() {
  for (int T : {1, 77, 256}) {
    Data d = make(T);
    std::vector<double> q(d.q.begin(), d.q.end()), k(d.k.begin(), d.k.end()), v(d.v.begin(), d.v.end()), r(q.size());
    ref::attention_fp64(q.data(), k.data(), v.data(), r.data(), d.s);
    for (int version : K::kAttentionVersions) {
      K::attention_forward(version, d.q.data(), d.k.data(), d.v.data(), d.out.data(), {d.s.B, d.s.H, d.s.T, d.s.D},
                           {g_threads, {}});
      double err = 0;
      for (std::size_t i = 0; i < r.size(); ++i) err = std::max(err, std::fabs(d.out[i] - r[i]));
      if (!(err < 1e-5)) {
        std::fprintf(stderr, "validation failed: %s at T=%d: max |err| %g\n", K::attention_version_name(version), T,
                     err);
        return false;
      }
    }
  }
  return true;
}

// The benchmark's name for each version (the report's rows and ci/bench_ratios.py read these).
const char* bench_name(int version) {
  switch (version) {
    case K::kAttentionPlain:
      return "v1_plain";
    case K::kAttentionTiled:
      return "v2_tiled";
    case K::kAttentionRegister:
      return "v3_register";
  }
  return "unknown";
}

}  // namespace

int main(int argc, char** argv) {
  g_threads = claimcheck::usable_cpus();
  if (!validate()) return 1;
  const bool bf16_cpu = cpu_flag("avx512_bf16") || cpu_flag("amx_bf16");
  // The engine the matmul picks, and the bf16 dot-product engine as a row of its own where that is not the one
  // picked (an AMX CPU): each engine against oneDNN.
  const std::string default_engine = K::matmul_bf16_engine();
  const bool dot_row = default_engine != "avx512_bf16" && K::matmul_bf16_force("avx512_bf16");
  K::matmul_bf16_force("");
  if (bf16_cpu && !validate_matmul("")) return 1;
  if (dot_row && !validate_matmul("avx512_bf16")) return 1;
  for (int version : K::kAttentionVersions)
    benchmark::RegisterBenchmark((std::string("attention/") + bench_name(version)).c_str(), BM_custom, version)
        ->Arg(256)
        ->Arg(1024)
        ->Arg(4096)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  benchmark::RegisterBenchmark("attention/libtorch", BM_libtorch)
      ->Arg(256)
      ->Arg(1024)
      ->Arg(4096)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("fma_peak", bench::BM_fma_peak, g_threads)
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  if (bf16_cpu) {
    // 1024^3 to 4096^3: from a matmul whose operands fit the caches to one that streams them.
    benchmark::RegisterBenchmark("matmul/libtorch_bf16", BM_libtorch_matmul_bf16)
        ->Arg(1024)
        ->Arg(2048)
        ->Arg(4096)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    benchmark::RegisterBenchmark("matmul/custom_bf16", BM_matmul_bf16, std::string())
        ->Arg(1024)
        ->Arg(2048)
        ->Arg(4096)
        ->Unit(benchmark::kMillisecond)
        ->UseManualTime();
    if (dot_row)
      benchmark::RegisterBenchmark("matmul/custom_bf16_dot", BM_matmul_bf16, std::string("avx512_bf16"))
          ->Arg(1024)
          ->Arg(2048)
          ->Arg(4096)
          ->Unit(benchmark::kMillisecond)
          ->UseManualTime();
  }
  benchmark::AddCustomContext("matmul_engine", K::matmul_bf16_engine());
  benchmark::AddCustomContext("v3_path", K::attention_v3_path());
  benchmark::AddCustomContext("simd_path", K::attention_simd_path());
  benchmark::AddCustomContext("fma_probe_isa", K::measure_fma_peak(1, {}, 1, 0.001).isa);
  benchmark::AddCustomContext("libtorch_api", ref::torch_attention_api());
  benchmark::AddCustomContext("libtorch_version", ref::torch_version());
  for (int T : {256, 1024, 4096})
    benchmark::AddCustomContext("libtorch_kernel_T" + std::to_string(T), ref::torch_attention_backend(make(T).s));
  benchmark::AddCustomContext("threads", std::to_string(g_threads));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
