// Custom causal attention (each version) against PyTorch 2.x's at::scaled_dot_product_attention (its CPU flash
// kernel where ATen picks it), fp32, B=1, H=8, D=64, T in {256, 1024, 4096}, at equal thread counts; and this
// CPU's measured FMA peak, so that GFLOP/s can be read as a share of it.
// Every version is validated against the fp64 reference before anything is timed (llm.c's rule).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "claimcheck/base/threads.h"
#include "claimcheck/kernels/attention.h"
#include "claimcheck/ref/attention.h"

namespace K = claimcheck::kernels;
namespace ref = claimcheck::ref;

namespace {

int g_threads = 1;

struct Data {
  std::vector<float> q, k, v, out;
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
  st.counters["FLOP/s"] = benchmark::Counter(flops(d.s), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = g_threads;
}

void BM_libtorch(benchmark::State& st) {
  Data d = make(static_cast<int>(st.range(0)));
  ref::torch_set_threads(g_threads);
  for (auto _ : st) {
    auto out = ref::torch_attention(d.q.data(), d.k.data(), d.v.data(), d.s);
    benchmark::DoNotOptimize(out.data());
  }
  st.counters["FLOP/s"] = benchmark::Counter(flops(d.s), benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = ref::torch_get_threads();
}

// FMA peak: independent accumulator chains, vectorised for the widest ISA, on every thread.
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"), noinline)) float fma_chains(long iters) {
  constexpr int kChains = 16 * 16;  // 16 registers x 16 lanes: enough independent FMAs to hide latency
  float acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = 1.0f + i * 1e-6f;
  const float a = 0.999999f, b = 1e-7f;
  for (long it = 0; it < iters; ++it)
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * a + b;
  float s = 0;
  for (float x : acc) s += x;
  return s;
}

void BM_fma_peak(benchmark::State& st) {
  const long iters = 1000000;  // ~0.5 GFLOP per thread: thread start-up is noise
  for (auto _ : st) {
    std::vector<std::thread> pool;
    std::vector<float> sink(g_threads);
    for (int t = 0; t < g_threads; ++t) pool.emplace_back([&, t] { sink[t] = fma_chains(iters); });
    for (auto& th : pool) th.join();
    benchmark::DoNotOptimize(sink.data());
  }
  st.counters["FLOP/s"] =
      benchmark::Counter(2.0 * 256 * iters * g_threads, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["threads"] = g_threads;
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
        std::fprintf(stderr, "validation failed: %s at T=%d: max |err| %g\n", K::attention_version_name(version), T, err);
        return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  g_threads = claimcheck::usable_cpus();
  if (!validate()) return 1;
  for (int version : K::kAttentionVersions)
    benchmark::RegisterBenchmark((std::string("attention/") + (version == K::kAttentionPlain ? "v1_plain" : "v2_tiled")).c_str(),
                                 BM_custom, version)
        ->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("attention/libtorch", BM_libtorch)
      ->Arg(256)->Arg(1024)->Arg(4096)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::RegisterBenchmark("fma_peak", BM_fma_peak)->Unit(benchmark::kMillisecond)->UseRealTime();
  benchmark::AddCustomContext("simd_path", K::attention_simd_path());
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
