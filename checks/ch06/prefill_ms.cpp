// ch06.prefill_ms — 「prefill 4096 token：2 × 8B × 4096 ≈ 66 TFLOP ÷ 989 TFLOPS ≈ 67 ms，compute-bound」
// Analytic on the series' card; measured here: T tokens through one Llama-3-8B-shaped layer's seven GEMMs on the
// project's batched bf16 kernel, against FLOPs over the measured FMA peak (compute-bound) and bytes over the
// measured bandwidth (far below). On a GPU: T tokens through gpu_layers layers and the lm_head, GEMMs through cuBLAS,
// against the bf16 GEMM peak and the read bandwidth measured there.
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../dispatch_expect.h"
#include "claimcheck/ref/ledger.h"
#include "testbed/testbed.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

// The GPU form: T tokens through gpu_layers Llama layers and the lm_head, GEMMs through cuBLAS.
static void prefill_ms_gpu(claimcheck::Context& ctx, ch06::Testbed& tb) {
  namespace G = ch06::gpu;
  const int T = ch06::positive_int(ctx, "tokens", 65536), layers = G::chain_layers(ctx), vocab = G::chain_vocab(ctx);
  const ch06::K::DecodeShape shape = G::shape(ctx, 1);
  const ch06::Roofs& roofs = tb.measure();
  ch06::K::GemvFaults faults;
  ch06::K::parse_gemv_fault(ctx.planted_fault(), &faults);
  const G::C::SweepPoint layer = G::C::layer_batch_sweep(shape, {T}, 5, faults).front();
  const G::C::GemmResult head = G::C::gemm_bf16_cublas(vocab, T, shape.hidden, 5);
  const double t = layers * layer.seconds + head.seconds;
  const double flops = layers * layer.flops + head.flops;
  const double bytes = G::shape_bytes(G::shape(ctx, layers), vocab, false);
  ctx.derive("flops_over_peak", roofs.flops_seconds(flops) * 1e3, "ms");
  ctx.derive("intensity_over_ridge", flops / bytes / roofs.ridge(), "ratio");
  ctx.measure("measured_ms", t * 1e3, "ms");
  ctx.measure("measured_time_over_bytes_roof", t / roofs.bytes_seconds(bytes), "ratio");
  ctx.measure("measured_share_of_peak", roofs.flops_seconds(flops) / t, "ratio");
  tb.record("prefill of " + std::to_string(T) + " tokens",
            {ch06::roofline_point("prefill T=" + std::to_string(T), flops, bytes, t)});
  ctx.assumption("measured on " + tb.device() + ": " + std::to_string(T) +
                 " tokens through one Llama-3-8B-shaped "
                 "layer's seven GEMMs (cuBLAS, bf16), its median time x " +
                 std::to_string(layers) + " layers, plus the " + std::to_string(vocab) +
                 "-row lm_head's GEMM; attention's T^2 term left out, as the series does; "
                 "against the bf16 GEMM peak measured at 8192^3");
}

// The CPU form: one layer, T tokens after a warm-up, three rounds each right after a short peak probe.
static void prefill_ms_cpu(claimcheck::Context& ctx, ch06::Testbed& tb) {
  ch06::K::DecodeShape shape = ch06::decode_shape(ctx);
  shape.layers = 1;
  const int T = ch06::positive_int(ctx, "cpu_tokens", 4096);
  // The bf16 matmul's time is held to its engine's own probe (not measured where the run judges other statements).
  const bool matmul_timed = ctx.wants_any({"matmul_time_over_engine_roof", "matmul_output_matches_reference"});
  const ch06::Roofs& roofs = tb.measure({.engines = matmul_timed});
  const ch06::K::DecodeStack stack(shape, "bf16", ctx.seed());
  const auto mats = ch06::stack_mats(stack);
  const auto opts = ch06::gemv_options(ctx);
  const auto X = ch06::random_activations(static_cast<std::size_t>(T) * shape.ffn, ctx.seed());
  // Each GEMM writes its own output, so that every one of the seven shapes is read back after the timing.
  std::vector<std::vector<float>> Ys;
  for (const auto& m : mats) Ys.emplace_back(static_cast<std::size_t>(T) * m.N);
  ch06::Kernel prefill{"prefill T=" + std::to_string(T), stack.flops() * T, static_cast<double>(stack.weight_bytes())};
  prefill.sample = [&] {
    return ch06::best_seconds(1, [&] {
      for (std::size_t i = 0; i < mats.size(); ++i)
        ch06::K::gemm_bf16(mats[i].w, mats[i].N, mats[i].K, X.data(), T, Ys[i].data(), opts);
    });
  };
  prefill.rounds = 3;
  prefill.warm_ups = 1;
  prefill.bound = ch06::Bound::compute;
  const ch06::Timing paired = tb.time(prefill);
  const double t = paired.seconds;
  // What each timed GEMM (q, k, v, o, gate, up, down) computed in its last run, against the answer key's fp64 dot
  // products on sampled tokens and rows: the worst of the seven.
  auto worst_of_seven = [&](const float* activations) {
    double worst = 0;
    for (std::size_t i = 0; i < mats.size(); ++i)
      worst = ch06::ref::worse(
          worst, ch06::ref::gemm_bf16_sampled_error(mats[i].w, mats[i].N, mats[i].K, activations, T, Ys[i].data()));
    return worst;
  };
  ctx.measure("output_matches_reference", ch06::error_figure(worst_of_seven(X.data())), "ratio");
  // The batched GEMM ran the widest register tiles this machine's record implies (a narrower tile is right, and on a
  // core whose wide FMAs are double-pumped no slower: unseen by any time).
  const std::string tile = ch06::K::gemm_bf16_last_tile(), widest = ch06::widest_fp32_isa(ctx.hardware());
  ctx.measure_bool("gemm_tile_is_widest", claimcheck::checks::at_least_as_wide(tile, widest));
  ctx.detail("gemm_tile", {{"ran", tile}, {"widest_here", widest}});
  // The project's bf16 matmul (kernels/cpu/matmul_bf16.cpp: a prefill's GEMM on the bf16 engines) on every engine this
  // CPU can run, forced in turn and untimed: 40 of the tokens (bf16) through 250 rows of q's weights, M and N off the
  // tiles' multiples, then 40 random rows through 250 rows of a matrix whose K (10,001: odd, a pair of bf16 split at
  // its end) is a multiple of no tile and spans several of any cache slice along K (each partial sum carried into the
  // next), against the answer key's fp64 dot products.
  {
    const int M = 40, N = 250, Kq = mats[0].K, Kl = 10001;
    const auto Wl = ch06::random_bf16(static_cast<std::size_t>(N) * Kl, Kl, ctx.seed() + 7);
    const auto Xl = ch06::random_activations(static_cast<std::size_t>(M) * Kl, ctx.seed() + 7);
    // The two problems, their activations rounded to bf16 once (the answer key's rounding) for every engine.
    struct Problem {
      const ch06::K::bf16_t* W;
      int K;
      std::vector<ch06::K::bf16_t> A;
      std::vector<float> Af;
    };
    std::vector<Problem> problems;
    for (const auto& [W, K, x] : {std::tuple{mats[0].w, Kq, X.data()}, std::tuple{Wl.data(), Kl, Xl.data()}}) {
      Problem p{W, K, std::vector<ch06::K::bf16_t>(static_cast<std::size_t>(M) * K), {}};
      p.Af.resize(p.A.size());
      for (std::size_t i = 0; i < p.A.size(); ++i)
        p.A[i] = ch06::ref::bf16_nearest(x[i]), p.Af[i] = ch06::ref::bf16_value(p.A[i]);
      problems.push_back(std::move(p));
    }
    double engines_error = 0;
    nlohmann::json engines = nlohmann::json::object();
    for (const std::string& e : ch06::K::matmul_bf16_engines_here()) {
      if (!ch06::K::matmul_bf16_force(e)) continue;
      double worst_e = 0;
      for (const Problem& p : problems) {
        // NaN before the call: an engine that adds onto C instead of writing it, or skips a block, leaves a NaN.
        std::vector<float> C(static_cast<std::size_t>(M) * N, std::numeric_limits<float>::quiet_NaN());
        ch06::K::matmul_bf16(p.A.data(), M, p.K, p.W, N, C.data(), opts);
        worst_e = ch06::ref::worse(worst_e, ch06::ref::gemm_bf16_sampled_error(p.W, N, p.K, p.Af.data(), M, C.data()));
      }
      engines[e] = worst_e;
      engines_error = ch06::ref::worse(engines_error, worst_e);
    }
    ch06::K::matmul_bf16_force("");
    ctx.measure("matmul_engines_match_reference", ch06::error_figure(engines_error), "ratio");
    // Unforced, the matmul runs on the fastest engine here: the AMX tiles where the hardware record has them and
    // Linux grants their state, else vdpbf16ps where the record has it (not the kernels' CPUID), else fp32 FMAs.
    const std::string engine = ch06::K::matmul_bf16_engine(opts.faults),
                      best = claimcheck::checks::expected_matmul_engine(ctx.hardware());
    ctx.measure_bool("matmul_engine_is_best", claimcheck::checks::at_least_as_wide(engine, best));
    ctx.detail("matmul_engine", {{"ran", engine}, {"best_here", best}});
    ctx.detail("matmul_engines", engines);
  }
  // The same seven GEMMs on the project's bf16 matmul (a prefill's bf16 activations: X rounded once), unforced, so on
  // the fastest engine here, each compute-bound round paired with that engine's own probe (the bf16 dot products'
  // vdpbf16ps, else the fp32 FMAs); what the last run wrote against the answer key's fp64 dot products.
  if (matmul_timed) {
    const std::string engine = ch06::K::matmul_bf16_engine(opts.faults);
    std::vector<ch06::K::bf16_t> Ab(X.size());
    std::vector<float> Af(X.size());
    for (std::size_t i = 0; i < X.size(); ++i)
      Ab[i] = ch06::ref::bf16_nearest(X[i]), Af[i] = ch06::ref::bf16_value(Ab[i]);
    ch06::Kernel mm{"prefill T=" + std::to_string(T) + " (bf16 matmul, " + engine + ")", stack.flops() * T,
                    static_cast<double>(stack.weight_bytes())};
    mm.sample = [&] {
      return ch06::best_seconds(2, [&] {
        for (std::size_t i = 0; i < mats.size(); ++i)
          ch06::K::matmul_bf16(Ab.data(), T, mats[i].K, mats[i].w, mats[i].N, Ys[i].data(), opts);
      });
    };
    mm.rounds = 3;
    mm.warm_ups = 1;
    mm.bound = ch06::Bound::compute;
    mm.engine = ch06::engine_of_matmul(engine);
    const ch06::Timing mt = tb.time(mm);
    ctx.measure("matmul_output_matches_reference", ch06::error_figure(worst_of_seven(Af.data())), "ratio");
    ctx.measure("matmul_time_over_engine_roof", mt.ratio, "ratio");
    ctx.detail("matmul_timing", {{"engine", engine},
                                 {"roof", mm.engine.empty() ? "fp32 FMA" : mm.engine},
                                 {"ms", mt.seconds * 1e3},
                                 {"roof_gflops", mt.peak / 1e9},
                                 {"rounds", mt.ratios}});
  }
  const double layer_flops = prefill.flops, layer_bytes = prefill.bytes;
  ctx.derive("flops_over_peak", paired.roof_seconds() * 1e3, "ms");
  ctx.derive("intensity_over_ridge", layer_flops / layer_bytes / (paired.peak / roofs.read), "ratio");
  ctx.measure("measured_ms", t * 1e3, "ms");
  ctx.measure("measured_time_over_bytes_roof", t / roofs.bytes_seconds(layer_bytes), "ratio");
  ctx.measure("measured_share_of_peak", 1 / paired.ratio, "ratio");
  tb.record("prefill of " + std::to_string(T) + " tokens through a layer", {ch06::roofline_point(prefill, t)});
  ctx.assumption("measured: " + std::to_string(T) +
                 " tokens through one Llama-3-8B-shaped layer's q, k, v, o, gate, "
                 "up, down (" +
                 std::to_string(layer_bytes / 1e6) + " MB of bf16 weights) on the batched bf16 GEMM (" +
                 ch06::K::gemv_simd_path() + ", fp32 FMA)");
}

static void prefill_ms(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  const auto tokens = ctx.input("tokens").get<std::int64_t>();
  // FLOPs follow the parameters a token meets (a mixture of experts routes it to a few), the weights read every one
  // held (a long prompt reaches every expert): equal for a dense model.
  const ref::ParamCount count = ref::count_params(cfg);
  const std::int64_t params = count.total();

  // Run: 2 FLOP per active parameter per token at peak; intensity against the ridge.
  const double flops = ref::prefill_flops(count.active(), tokens);
  const double intensity = flops / (static_cast<double>(params) * ref::dtype_bytes("bf16"));

  // Verify.
  ctx.measure(flops / hw.peak_flops * 1e3, "ms");
  ctx.measure("tflop", flops, "FLOP");  // the harness converts to the stated TFLOP
  ctx.measure_bool("compute_bound", intensity > hw.ridge());
  ctx.measure("intensity", intensity, "FLOP/byte");
  ctx.assumption(
      "2 FLOP per parameter per token (matmuls, embedding counted as the series does); attention's "
      "T^2 term ignored; 100% of peak");
  const double attn = 2.0 * 2.0 * cfg.layers * static_cast<double>(tokens) * tokens * cfg.heads * cfg.head_dim / 2;
  ctx.alternative("with causal attention FLOPs", (flops + attn) / hw.peak_flops * 1e3, "ms",
                  "QK^T and PV over the causal half");
  ctx.alternative("at 50% MFU", 2 * flops / hw.peak_flops * 1e3, "ms", "a typical achieved fraction of peak");
  if (!ctx.part_selected("measured")) {
    ctx.pending("prefill through a layer, timed here (run with --label measured)");
    return;
  }

  ch06::Testbed(ctx).run(prefill_ms_cpu, prefill_ms_gpu);
}
CLAIMCHECK_REGISTER(prefill_ms)
    .claim("ch06.prefill_ms")
    .derives("flops_over_peak", claimcheck::Source::probe)
    .derives("intensity_over_ridge", claimcheck::Source::probe);
