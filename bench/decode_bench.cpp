// Decode on the CPU (chapter 6): the project's bf16 and NF4 GEMV kernels and a 2-layer Llama-3-8B-shaped decode
// stack on them, against LibTorch's bf16 at::matmul over the same weights at equal threads, and this machine's
// read bandwidth (the roofline probe's read-only reduction) as the yardstick: decode is memory-bound, so time per
// token = weight bytes / bandwidth. Also the batched bf16 GEMM over a batch sweep (the roofline's knee).
// Every kernel is validated against the fp64 reference before anything is timed.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "claimcheck/base/aligned.h"
#include "claimcheck/base/threads.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/kernels/roofline.h"
#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/gemv.h"
#include "verify.h"

namespace K = claimcheck::kernels;
namespace ref = claimcheck::ref;

namespace {

int g_threads = 1;

K::DecodeShape llama3_8b(int layers) {
  K::DecodeShape s;
  s.hidden = 4096;
  s.kv_dim = 1024;
  s.ffn = 14336;
  s.layers = layers;
  s.head_dim = 128;
  return s;
}
constexpr int kLayers = 2;

// Built once, on first use (~0.9 GB bf16, ~0.25 GB nf4).
const K::DecodeStack& bf16_stack() {
  static const K::DecodeStack s(llama3_8b(kLayers), "bf16", 2024);
  return s;
}
const K::DecodeStack& nf4_stack() {
  static const K::DecodeStack s(llama3_8b(kLayers), "nf4", 2024);
  return s;
}
std::vector<float> input(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& e : x) e = d(rng);
  return x;
}

void counters(benchmark::State& st, double bytes, double flops) {
  st.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["bytes"] = bytes;
  st.counters["threads"] = g_threads;
}

const std::vector<double>& nf4_levels() {
  static const std::vector<double> levels =
      ref::load_nf4_levels(CLAIMCHECK_SOURCE_DIR "/reference/data/quant/nf4-absmax64.json");
  return levels;
}

// What a chain's step computed (y, from x) against the answer key's fp64 step over the same weights (NF4 with the
// products this CPU's kernel owes), layer by layer as ch06.decode_4bit's output_matches_reference reads it
// (ref::decode_step_error_by_layer): about 1e-6 for fp32 accumulation.
double chain_error(const K::DecodeStack& s, const float* x, const float* y) {
  const K::DecodeShape& d = s.shape();
  const int rows[7] = {d.hidden, d.kv_dim, d.kv_dim, d.hidden, d.ffn, d.ffn, d.hidden};
  const int cols[7] = {d.hidden, d.hidden, d.hidden, d.hidden, d.hidden, d.hidden, d.ffn};
  std::vector<float> inputs(static_cast<std::size_t>(d.hidden) * d.layers), out(static_cast<std::size_t>(d.hidden));
  std::vector<float> qk(static_cast<std::size_t>(d.hidden + d.kv_dim) * d.layers);  // each layer's q and k
  s.step(x, out.data(), {g_threads, {}}, inputs.data(), qk.data());
  return ref::decode_step_error_by_layer(
      {d.hidden, d.kv_dim, d.ffn, d.layers, d.head_dim},
      [&](int l, int m, const double* in, double* o) {
        if (const K::Nf4Matrix* q = s.nf4_weight(l, m))
          ref::gemv_nf4_fp64(q->packed.data(), q->scales.data(), rows[m], cols[m], nf4_levels(), in, o, nullptr,
                             bench::nf4_products());
        else
          ref::gemv_bf16_fp64(s.bf16_weights(l)[m], rows[m], cols[m], in, o);
      },
      x, inputs.data(), out.data(), y, qk.data());
}

void BM_chain(benchmark::State& st, bool nf4) {
  const K::DecodeStack& s = nf4 ? nf4_stack() : bf16_stack();
  const auto x = input(s.shape().hidden, 1);
  std::vector<float> out(s.shape().hidden);
  const K::GemvOptions o{g_threads, {}};
  for (auto _ : st) {
    s.step(x.data(), out.data(), o);
    benchmark::DoNotOptimize(out.data());
  }
  // The last timed step's output, against fp64 once per chain (about a second; every repetition computes the same).
  static double error[2] = {-1, -1};
  if (error[nf4] < 0) error[nf4] = chain_error(s, x.data(), out.data());
  bench::verify(st, error[nf4], 1e-4, nf4 ? "NF4 decode chain" : "bf16 decode chain");
  counters(st, static_cast<double>(s.weight_bytes()), s.flops());
}

// The chain's share of the read bandwidth, paired: each iteration runs one pass of the read probe and then one
// decode step, back to back, so the drift of a shared machine (its bandwidth moves by tens of percent within an hour)
// moves both sides of each pair. Manual time is the step's; share = median over the pairs of
// (weight bytes / step time) / probe read bytes/s.
void BM_chain_vs_read(benchmark::State& st) {
  const K::DecodeStack& s = bf16_stack();
  const auto x = input(s.shape().hidden, 1);
  std::vector<float> out(s.shape().hidden);
  const K::GemvOptions o{g_threads, {}};
  const double bytes = static_cast<double>(s.weight_bytes());
  std::vector<double> shares;
  for (auto _ : st) {
    const K::Bandwidth bw = K::measure_bandwidth(g_threads, std::size_t{256} << 20, 1);
    const auto t0 = std::chrono::steady_clock::now();
    s.step(x.data(), out.data(), o);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(out.data());
    st.SetIterationTime(t);
    shares.push_back(bytes / t / bw.read_bytes_per_s);
  }
  std::sort(shares.begin(), shares.end());
  const std::size_t n = shares.size();
  counters(st, bytes, s.flops());
  st.counters["read_share"] = n == 0 ? 0.0 : n % 2 ? shares[n / 2] : (shares[n / 2 - 1] + shares[n / 2]) / 2;
  st.counters["pairs"] = static_cast<double>(n);
}

void BM_libtorch_chain(benchmark::State& st) {
  const K::DecodeStack& s = bf16_stack();
  const K::DecodeShape& sh = s.shape();
  const int rows[7] = {sh.hidden, sh.kv_dim, sh.kv_dim, sh.hidden, sh.ffn, sh.ffn, sh.hidden};
  const int cols[7] = {sh.hidden, sh.hidden, sh.hidden, sh.hidden, sh.hidden, sh.hidden, sh.ffn};
  std::vector<ref::Bf16Mat> mats;
  for (int l = 0; l < sh.layers; ++l)
    for (int m = 0; m < 7; ++m) mats.push_back({s.bf16_weights(l)[m], rows[m], cols[m]});
  ref::torch_set_threads(g_threads);
  ref::TorchDecodeChain chain(mats, sh.head_dim);
  const auto x = input(sh.hidden, 1);
  std::vector<float> out(sh.hidden);
  for (auto _ : st) {
    chain.step(x.data(), out.data());
    benchmark::DoNotOptimize(out.data());
  }
  counters(st, static_cast<double>(s.weight_bytes()), s.flops());
  st.counters["threads"] = ref::torch_get_threads();
}

struct Mat {
  int N, K;
  claimcheck::base::aligned_vector<K::bf16_t> w;  // on a cache line, as LibTorch's tensor is
};
const Mat& matrix(int N, int Kd) {
  static std::vector<std::unique_ptr<Mat>> cache;
  for (const auto& m : cache)
    if (m->N == N && m->K == Kd) return *m;
  const auto w = K::decode_weights_bf16(N, Kd, 77, g_threads);
  cache.push_back(std::make_unique<Mat>(Mat{N, Kd, {w.begin(), w.end()}}));
  return *cache.back();
}

void BM_gemv_bf16(benchmark::State& st, int N, int Kd) {
  const Mat& m = matrix(N, Kd);
  const auto x = input(Kd, 2);
  std::vector<float> y(N);
  const K::GemvOptions o{g_threads, {}};
  for (auto _ : st) {
    K::gemv_bf16(m.w.data(), N, Kd, x.data(), y.data(), o);
    benchmark::DoNotOptimize(y.data());
  }
  bench::verify(st, ref::gemm_bf16_sampled_error(m.w.data(), N, Kd, x.data(), 1, y.data()), 1e-4, "bf16 GEMV");
  counters(st, 2.0 * N * Kd, 2.0 * N * Kd);
}

void BM_gemv_libtorch(benchmark::State& st, int N, int Kd) {
  const Mat& m = matrix(N, Kd);
  const auto x = input(Kd, 2);
  std::vector<float> y(N);
  ref::torch_set_threads(g_threads);
  for (auto _ : st) {
    ref::torch_matmul_bf16(m.w.data(), N, Kd, x.data(), 1, y.data());
    benchmark::DoNotOptimize(y.data());
  }
  counters(st, 2.0 * N * Kd, 2.0 * N * Kd);
  st.counters["threads"] = ref::torch_get_threads();
}

void BM_gemv_nf4(benchmark::State& st, int N, int Kd) {
  const K::Nf4Matrix q = K::quantize_nf4(matrix(N, Kd).w.data(), N, Kd, g_threads);
  const auto x = input(Kd, 2);
  std::vector<float> y(N);
  const K::GemvOptions o{g_threads, {}};
  for (auto _ : st) {
    K::gemv_nf4(q, x.data(), y.data(), o);
    benchmark::DoNotOptimize(y.data());
  }
  bench::verify(st,
                ref::gemv_nf4_sampled_error(q.packed.data(), q.scales.data(), N, Kd, nf4_levels(), x.data(), y.data(),
                                            bench::nf4_products()),
                1e-4, "NF4 GEMV");
  counters(st, static_cast<double>(q.bytes()), 2.0 * N * Kd);
}

void BM_gemm_bf16(benchmark::State& st, int N, int Kd) {
  const int B = static_cast<int>(st.range(0));
  const Mat& m = matrix(N, Kd);
  const auto X = input(B * Kd, 3);
  std::vector<float> Y(static_cast<std::size_t>(B) * N);
  const K::GemvOptions o{g_threads, {}};
  for (auto _ : st) {
    K::gemm_bf16(m.w.data(), N, Kd, X.data(), B, Y.data(), o);
    benchmark::DoNotOptimize(Y.data());
  }
  bench::verify(st, ref::gemm_bf16_sampled_error(m.w.data(), N, Kd, X.data(), B, Y.data()), 1e-4, "batched bf16 GEMM");
  counters(st, 2.0 * N * Kd, 2.0 * N * Kd * B);
  st.counters["tokens/s"] = benchmark::Counter(B, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_gemm_libtorch(benchmark::State& st, int N, int Kd) {
  const int B = static_cast<int>(st.range(0));
  const Mat& m = matrix(N, Kd);
  const auto X = input(B * Kd, 3);
  std::vector<float> Y(static_cast<std::size_t>(B) * N);
  ref::torch_set_threads(g_threads);
  for (auto _ : st) {
    ref::torch_matmul_bf16(m.w.data(), N, Kd, X.data(), B, Y.data());
    benchmark::DoNotOptimize(Y.data());
  }
  counters(st, 2.0 * N * Kd, 2.0 * N * Kd * B);
  st.counters["threads"] = ref::torch_get_threads();
}

// The yardstick: the roofline probe's read-only reduction over a 256 MiB array, one fresh pass per iteration
// (its allocation and first touch not timed: manual time = the pass).
void BM_bandwidth_read(benchmark::State& st) {
  const std::size_t bytes = std::size_t{256} << 20;
  double checksum_err = 0;
  for (auto _ : st) {
    const K::Bandwidth bw = K::measure_bandwidth(g_threads, bytes, 1);
    st.SetIterationTime(static_cast<double>(bw.array_bytes) / bw.read_bytes_per_s);
    checksum_err = std::max(checksum_err, std::fabs(bw.checksum - bw.expected_checksum) / bw.expected_checksum);
  }
  counters(st, static_cast<double>(bytes), 0.0);
  st.counters["checksum_rel_err"] = checksum_err;
}

// The compute roof: the roofline probe's fp32 FMA peak on the same threads (manual time = its best pass).
// A cross-check of the yardstick: a plain AVX2 sum over a 256 MiB array on g_threads threads.
__attribute__((target("avx2"))) float sum_avx2(const float* p, std::size_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (std::size_t i = 0; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
  }
  float o[8];
  _mm256_storeu_ps(o, _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  return o[0] + o[1] + o[2] + o[3] + o[4] + o[5] + o[6] + o[7];
}
void BM_bandwidth_simple(benchmark::State& st) {
  const std::size_t n = (std::size_t{256} << 20) / 4;
  float* a = static_cast<float*>(std::aligned_alloc(64, n * 4));
  const std::size_t per = n / g_threads / 32 * 32;
  {
    std::vector<std::thread> t;
    for (int i = 0; i < g_threads; ++i) t.emplace_back([&, i] { std::fill(a + i * per, a + (i + 1) * per, 1.0f); });
    for (auto& th : t) th.join();
  }
  std::vector<float> sums(g_threads);
  for (auto _ : st) {
    std::vector<std::thread> t;
    for (int i = 0; i < g_threads; ++i) t.emplace_back([&, i] { sums[i] = sum_avx2(a + i * per, per); });
    for (auto& th : t) th.join();
    benchmark::DoNotOptimize(sums.data());
  }
  counters(st, static_cast<double>(per) * g_threads * 4, 0.0);
  std::free(a);
}

// ---- validation ------------------------------------------------------------------------------------------------
bool close(double got, double want, double absdot, int Kd, const char* what, int n) {
  const double tol = 16.0 * std::ldexp(1.0, -24) * std::sqrt(Kd + 1.0) * absdot + 1e-30;
  if (std::fabs(got - want) <= tol) return true;
  std::fprintf(stderr, "validation failed: %s row %d: %.9g vs fp64 %.9g (tol %.3g)\n", what, n, got, want, tol);
  return false;
}

bool validate() {
  const auto levels = ref::load_nf4_levels(CLAIMCHECK_SOURCE_DIR "/reference/data/quant/nf4-absmax64.json");
  const K::GemvOptions o{g_threads, {}};
  for (const auto& [N, Kd] : {std::pair{37, 1001}, std::pair{64, 4096}, std::pair{130, 640}}) {
    const auto W = K::decode_weights_bf16(N, Kd, 5, 1);
    const int B = 7;
    const auto X = input(B * Kd, 4);
    std::vector<double> xd(X.begin(), X.begin() + Kd), r(N), a(N);
    ref::gemv_bf16_fp64(W.data(), N, Kd, xd.data(), r.data(), a.data());
    std::vector<float> y(N), Y(static_cast<std::size_t>(B) * N);
    K::gemv_bf16(W.data(), N, Kd, X.data(), y.data(), o);
    K::gemm_bf16(W.data(), N, Kd, X.data(), B, Y.data(), o);
    for (int n = 0; n < N; ++n)
      if (!close(y[n], r[n], a[n], Kd, "gemv_bf16", n) || !close(Y[n], r[n], a[n], Kd, "gemm_bf16", n)) return false;
    if (Kd % 64 == 0) {
      const K::Nf4Matrix q = K::quantize_nf4(W.data(), N, Kd, g_threads);
      const auto c = ref::check_nf4_quantization(W.data(), N, Kd, q.packed.data(), q.scales.data(), levels);
      if (!c.ok()) {
        std::fprintf(stderr, "validation failed: NF4 quantisation: %s\n", c.first_detail.c_str());
        return false;
      }
      ref::gemv_nf4_fp64(q.packed.data(), q.scales.data(), N, Kd, levels, xd.data(), r.data(), a.data(),
                         bench::nf4_products());
      K::gemv_nf4(q, X.data(), y.data(), o);
      for (int n = 0; n < N; ++n)
        if (!close(y[n], r[n], a[n], Kd, "gemv_nf4", n)) return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  g_threads = claimcheck::usable_cpus();
  if (!validate()) return 1;
  const bool torch = ref::torch_available();
  auto reg = [](const std::string& name, auto fn, auto... args) {
    return benchmark::RegisterBenchmark(name.c_str(), fn, args...)->Unit(benchmark::kMillisecond)->UseRealTime();
  };
  benchmark::RegisterBenchmark("bandwidth/read", BM_bandwidth_read)->Unit(benchmark::kMillisecond)->UseManualTime();
  reg("bandwidth/read_simple_avx2", BM_bandwidth_simple);
  benchmark::RegisterBenchmark("fma_peak", bench::BM_fma_peak, g_threads)
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime();
  reg("decode/bf16_chain", BM_chain, false);
  reg("decode/nf4_chain", BM_chain, true);
  benchmark::RegisterBenchmark("decode/bf16_chain_vs_read", BM_chain_vs_read)
      ->Unit(benchmark::kMillisecond)
      ->UseManualTime()
      ->Iterations(8);
  if (torch) reg("decode/libtorch_bf16_chain", BM_libtorch_chain);
  for (const auto& [N, Kd] : {std::pair{14336, 4096}, std::pair{4096, 14336}}) {
    const std::string shape = std::to_string(N) + "x" + std::to_string(Kd);
    reg("gemv/bf16/" + shape, BM_gemv_bf16, N, Kd);
    if (torch) reg("gemv/libtorch_bf16/" + shape, BM_gemv_libtorch, N, Kd);
    reg("gemv/nf4/" + shape, BM_gemv_nf4, N, Kd);
  }
  // NF4 from cache (2.4 MB of codes and scales, in the L2 and L3 caches): the dequantisation's own rate, what
  // memory's bandwidth is held against in the benchmark table (is the kernel fast enough to be memory-bound?).
  reg("gemv/nf4_cached/1024x4096", BM_gemv_nf4, 1024, 4096);
  auto* g = reg("gemm/bf16/14336x4096", BM_gemm_bf16, 14336, 4096);
  for (int B : {1, 2, 4, 8, 16, 32, 64, 128, 256, 512}) g->Arg(B);
  if (torch) {
    auto* t = reg("gemm/libtorch_bf16/14336x4096", BM_gemm_libtorch, 14336, 4096);
    for (int B : {1, 8, 32, 128, 512}) t->Arg(B);
  }
  benchmark::AddCustomContext("simd_path", K::gemv_simd_path());
  benchmark::AddCustomContext("libtorch_api", ref::torch_gemv_api());
  benchmark::AddCustomContext("libtorch_version", ref::torch_version());
  benchmark::AddCustomContext("threads", std::to_string(g_threads));
  benchmark::AddCustomContext("decode_shape", "Llama-3-8B (hidden 4096, kv_dim 1024, ffn 14336), " +
                                                  std::to_string(kLayers) + " layers, no norms");
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
