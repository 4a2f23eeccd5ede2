// Chapter 6 on the GPU (issue 10): kernels/cuda against the strongest competitor at hand, in one run, each timed
// with CUDA events (Google Benchmark's manual time):
//   - the Llama-3-8B-shaped decode chain (32 layers + lm_head, 15 GB of bf16) in a CUDA graph on the project's GEMVs,
//     against the read probe's bandwidth and against the same chain through cuBLAS, also in a CUDA graph;
//   - the NF4 chain against the bf16 chain;
//   - the causal bf16 attention kernel against LibTorch's CUDA scaled_dot_product_attention (flash);
//   - cuBLAS's bf16 GEMM peak (the compute roof), and one Llama layer's GEMMs swept over the batch (1 ... 1024).
// Without a CUDA device every benchmark stops with the reason (SkipWithError), and no ratio is written.
// ci/bench_gpu_ratios.py turns the JSON into the report's rows.
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "claimcheck/kernels/cuda/attention.h"
#include "claimcheck/kernels/cuda/decode.h"
#include "claimcheck/kernels/cuda/probes.h"
#include "claimcheck/kernels/cuda/stream.h"
#include "claimcheck/ref/attention.h"

namespace K = claimcheck::kernels;
namespace C = claimcheck::kernels::cuda;
namespace ref = claimcheck::ref;

namespace {

std::string g_no_device;  // why there is no device ("" where there is one)
constexpr int kLayers = 32, kVocab = 128256;

const K::DecodeShape kLlama{4096, 1024, 14336, kLayers, 128};

C::GpuDecodeChain& chain(const std::string& format) {
  static std::unique_ptr<C::GpuDecodeChain> bf16, nf4;
  auto& c = format == "bf16" ? bf16 : nf4;
  if (!c) c = std::make_unique<C::GpuDecodeChain>(kLlama, kVocab, format, 2024, 16);
  return *c;
}

bool need_device(benchmark::State& st) {
  if (g_no_device.empty()) return true;
  st.SkipWithError(g_no_device.c_str());
  return false;
}

void rate(benchmark::State& st, double bytes, double flops) {
  st.counters["bytes"] = bytes;
  st.counters["bytes/s"] = benchmark::Counter(bytes, benchmark::Counter::kIsIterationInvariantRate);
  if (flops > 0) st.counters["FLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_read(benchmark::State& st) {
  if (!need_device(st)) return;
  double bytes = 0;
  for (auto _ : st) {
    const C::ReadResult r = C::read_bandwidth(std::size_t(4) << 30, 5);
    if (std::abs(r.sum - r.expected_sum) > 0.5) return st.SkipWithError("the read probe's sum is off its closed form");
    st.SetIterationTime(r.seconds);
    bytes = r.bytes;
  }
  rate(st, bytes, 0);
}

void BM_gemm_peak(benchmark::State& st) {
  if (!need_device(st)) return;
  double flops = 0;
  for (auto _ : st) {
    const C::GemmResult g = C::gemm_bf16_cublas(8192, 8192, 8192, 10);
    if (g.max_rel_err > 1e-2) return st.SkipWithError("cuBLAS's GEMM is off its fp64 dot products");
    st.SetIterationTime(g.seconds);
    flops = g.flops;
  }
  rate(st, 0, flops);
}

void BM_chain(benchmark::State& st, const std::string& format, bool cublas, bool graph) {
  if (!need_device(st)) return;
  C::GpuDecodeChain& c = chain(format);
  for (auto _ : st) st.SetIterationTime(graph ? c.time_graph(20, cublas) : c.time_eager(20, cublas));
  rate(st, c.weight_bytes(), c.flops());
}

// One Llama-3-8B layer's seven GEMMs at batch B through cuBLAS (the roofline's knee: flat per step, then linear).
void BM_sweep(benchmark::State& st) {
  if (!need_device(st)) return;
  const int B = static_cast<int>(st.range(0));
  C::SweepPoint p;
  for (auto _ : st) {
    p = C::layer_batch_sweep(K::DecodeShape{4096, 1024, 14336, 1, 128}, {B}, 10).front();
    st.SetIterationTime(p.seconds);
  }
  rate(st, p.bytes, p.flops);
}

void BM_attention(benchmark::State& st, bool ours) {
  if (!need_device(st)) return;
  const C::AttnDims d{1, 32, static_cast<int>(st.range(0)), 128};
  for (auto _ : st) {
    double s = 0;
    if (ours) {
      s = C::time_attention_fwd_bf16(d, /*causal=*/true, 10);
    } else {
      try {
        s = ref::torch_sdpa_cuda_bf16_seconds(ref::AttnShape{d.B, d.H, d.T, d.D}, true, 5);
      } catch (const std::exception& e) {
        return st.SkipWithError(e.what());
      }
    }
    st.SetIterationTime(s);
  }
  rate(st, 0, C::attention_flops(d, true));
}

}  // namespace

int main(int argc, char** argv) {
  std::string why;
  if (C::device_count(&why) == 0) g_no_device = why;
  benchmark::RegisterBenchmark("gpu/bandwidth/read", BM_read)->UseManualTime()->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/gemm/cublas_bf16_8192", BM_gemm_peak)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/decode/bf16_chain_graph", BM_chain, std::string("bf16"), false, true)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/decode/cublas_chain_graph", BM_chain, std::string("bf16"), true, true)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/decode/bf16_chain_eager", BM_chain, std::string("bf16"), false, false)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/decode/cublas_chain_eager", BM_chain, std::string("bf16"), true, false)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/decode/nf4_chain_graph", BM_chain, std::string("nf4"), false, true)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("gpu/sweep/layer_bf16", BM_sweep)
      ->RangeMultiplier(2)
      ->Range(1, 1024)
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  for (bool ours : {true, false})
    benchmark::RegisterBenchmark(ours ? "gpu/attention/ours_causal_bf16" : "gpu/attention/sdpa_causal_bf16",
                                 BM_attention, ours)
        ->Arg(1024)
        ->Arg(4096)
        ->UseManualTime()
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("device", g_no_device.empty() ? C::device_summary() : g_no_device);
  benchmark::AddCustomContext("libtorch_version", ref::torch_version());
  benchmark::AddCustomContext("decode_shape",
                              "Llama-3-8B: 32 layers (hidden 4096, kv_dim 1024, ffn 14336) + lm_head "
                              "128256 x 4096, bf16 (NF4: 4 bits + an fp32 absmax per 64)");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
