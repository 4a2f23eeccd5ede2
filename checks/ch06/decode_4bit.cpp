// ch06.decode_4bit — 「4-bit 量化字节 1/4、时间也 1/4」 (decode is bytes / bandwidth)
// Analytic on Llama-3-8B under the format named in the expected file; measured here: the same Llama-3-8B-shaped
// stack decoded with bf16 weights and with NF4 weights (one fp32 absmax per 64, dequantised in registers).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "../dispatch_expect.h"
#include "claimcheck/base/timing.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/ref/roofline.h"
#include "testbed/testbed.h"

// The GPU form: both chains (gpu_layers + lm_head) on kernels/cuda's GEMVs, each step in a CUDA graph.
static void decode_4bit_gpu(claimcheck::Context& ctx, ch06::Testbed&) {
  namespace G = ch06::gpu;
  const ch06::K::DecodeShape shape = G::shape(ctx, G::chain_layers(ctx));
  const int vocab = G::chain_vocab(ctx), steps = std::max(20, ch06::positive_int(ctx, "steps", 100));
  ch06::K::GemvFaults faults;
  ch06::K::parse_gemv_fault(ctx.planted_fault(), &faults);
  G::C::GpuDecodeChain c16(shape, vocab, "bf16", ctx.seed(), claimcheck::usable_cpus(), faults),
      c4(shape, vocab, "nf4", ctx.seed(), claimcheck::usable_cpus(), faults);
  double t16 = 1e300, t4 = 1e300;
  for (int i = 0; i < 3; ++i) {
    t16 = std::min(t16, c16.time_graph(steps));
    t4 = std::min(t4, c4.time_graph(steps));
  }
  const double byte_ratio = G::shape_bytes(shape, vocab, true) / G::shape_bytes(shape, vocab, false);
  ctx.measure("time_ratio", t4 / t16, "ratio");
  ctx.measure_bool("nf4_faster", t4 < t16);
  ctx.measure("measured_byte_ratio", byte_ratio, "ratio");
  ctx.measure("time_ratio_over_byte_ratio", t4 / t16 / byte_ratio, "ratio");
  ctx.measure("nf4_gb_s", c4.weight_bytes() / t4 / 1e9, "GB/s");
  ctx.measure("bf16_gb_s", c16.weight_bytes() / t16 / 1e9, "GB/s");
  ctx.detail("ms", {{"bf16", t16 * 1e3},
                    {"nf4", t4 * 1e3},
                    {"bf16_mb", c16.weight_bytes() / 1e6},
                    {"nf4_mb", c4.weight_bytes() / 1e6},
                    {"device", G::C::device_summary()}});
  ctx.assumption("measured on " + G::C::device_summary() + ": " + std::to_string(shape.layers) +
                 " Llama-3-8B-shaped "
                 "layers and the lm_head, each chain's step in a CUDA graph, the best of 3 interleaved medians of " +
                 std::to_string(steps) + " replays; NF4 = 4 bits + one fp32 absmax per 64 weights (" +
                 std::to_string(byte_ratio) + " of bf16's bytes), dequantised in registers");
}

// The CPU form: both stacks from the same seed (the NF4 one quantises the bf16 weights), paired samples.
static void decode_4bit_cpu(claimcheck::Context& ctx, ch06::Testbed& tb, const claimcheck::ref::QuantFormat& q) {
  namespace ref = claimcheck::ref;
  const ch06::K::DecodeShape shape = ch06::decode_shape(ctx);
  // A run that judges no time (a planted-fault test's, on outputs and counts): one round of one step per format.
  const bool timing = ctx.timing_judged();
  const int steps = timing ? ch06::positive_int(ctx, "steps", 100) : 1;
  const int rounds = timing ? ch06::positive_int(ctx, "rounds", 999) : 1;
  const auto opts = ch06::gemv_options(ctx);
  // The paths, held to the hardware record (not the kernels' CPUID): the timed one the widest this machine has (a
  // narrower one computes the same values more slowly), and every path it can run among those
  // gemv_paths_match_reference checks below.
  {
    const std::vector<std::string> want = claimcheck::checks::expected_gemv_paths(ctx.hardware()),
                                   have = ch06::K::gemv_paths_here(opts.faults);
    const std::string timed = ch06::K::gemv_simd_path(opts.faults),
                      missing = claimcheck::checks::missing_names(want, have);
    // What the row kernels themselves say they ran, on one small GEMV of each format on the timed path: a dispatch
    // that names a path and runs another (a fallback to the portable loop) computes the same values.
    const int n = 64, k = 1024;
    const auto w = ch06::K::decode_weights_bf16(n, k, ctx.seed(), 1, opts.faults);
    const auto q = ch06::K::quantize_nf4(w.data(), n, k, opts.threads);
    const auto x = ch06::random_activations(static_cast<std::size_t>(k), ctx.seed());
    std::vector<float> y(static_cast<std::size_t>(n));
    ch06::K::gemv_bf16(w.data(), n, k, x.data(), y.data(), opts);
    const std::string bf16_ran = ch06::K::gemv_last_rows("bf16");
    ch06::K::gemv_nf4(q, x.data(), y.data(), opts);
    const std::string nf4_ran = ch06::K::gemv_last_rows("nf4");
    const std::string bf16_want = claimcheck::checks::expected_gemv_rows(ctx.hardware(), "bf16"),
                      nf4_want = claimcheck::checks::expected_gemv_rows(ctx.hardware(), "nf4");
    ctx.measure_bool("gemv_path_is_widest", claimcheck::checks::at_least_as_wide(timed, want.front()) &&
                                                claimcheck::checks::at_least_as_wide(bf16_ran, bf16_want) &&
                                                claimcheck::checks::at_least_as_wide(nf4_ran, nf4_want));
    ctx.measure_bool("gemv_paths_complete", missing.empty());
    ctx.detail("gemv_paths", {{"timed", timed},
                              {"widest_here", want.front()},
                              {"rows_ran", {{"bf16", bf16_ran}, {"nf4", nf4_ran}}},
                              {"rows_widest_here", {{"bf16", bf16_want}, {"nf4", nf4_want}}},
                              {"checked", have},
                              {"missing", missing}});
  }
  if (ctx.wants_only({"gemv_path_is_widest", "gemv_paths_complete"})) return;  // (a planted-fault test's run)
  const ch06::K::DecodeStack s16(shape, "bf16", ctx.seed(), opts.faults), s4(shape, "nf4", ctx.seed(), opts.faults);
  // What the stacks hold, before any timing: their bytes against the shape and the format file (the byte ratio and
  // the GB/s rest on them, not on the stacks' own count), and the NF4 codes and scales against NF4's definition of
  // the bf16 weights (sampled rows; the output check below reads the same codes as the kernel, so it cannot see them).
  const std::vector<double> levels = ref::load_nf4_levels(ctx.input_path("quant"));
  const double shape_weights = static_cast<double>(shape.layers) * ch06::layer_weights(shape);
  ctx.measure_bool("kernel_bytes_match_format",
                   static_cast<double>(s16.weight_bytes()) == 2 * shape_weights &&
                       static_cast<double>(s4.weight_bytes()) == shape_weights * q.bits_per_param() / 8);
  std::string first_bad;
  ctx.measure("quantization_mismatches",
              static_cast<double>(ch06::nf4_quantization_mismatches(s16, s4, levels, &first_bad)), "count");
  if (!first_bad.empty()) ctx.detail("first_quantization_mismatch", first_bad);
  // The NF4 matrix dequantised whole to bf16 (what a dequantise-first kernel multiplies), against NF4's own
  // level x scale on 16 rows spread over the first matrix.
  if (const ch06::K::Nf4Matrix* Q = s4.nf4_weight(0, 0)) {
    const std::vector<ch06::K::bf16_t> dq = ch06::K::dequantize_nf4_bf16(*Q, opts.faults);
    const bool whole = dq.size() == static_cast<std::size_t>(Q->N) * Q->K;
    long bad = whole ? 0 : 1;  // (a matrix of another size: one mismatch, and no element read past its end)
    for (int i = 0; i < 16 && whole; ++i) {
      const long r = static_cast<long>(i) * (Q->N - 1) / 15;
      bad += ch06::ref::nf4_dequant_mismatches(Q->packed.data(), Q->scales.data(), Q->K, levels, dq.data() + r * Q->K,
                                               r, 1);
    }
    ctx.measure("dequant_mismatches", static_cast<double>(bad), "count");
  }
  // The machine's balance, from the probe and the answer key alone (nothing the NF4 kernel does moves it): the NF4
  // step's floor is the larger of its bytes at the read roof and its dequantisation at the roof of the engine the
  // CPU's NF4 arithmetic runs on (ref::nf4_gemv_compute_seconds: the bf16 dot products where the CPU has them,
  // ref::nf4_products_for, else the fp32 FMAs); the bf16 step's is its bytes at the read roof. Their ratio is the
  // time ratio a kernel at its roof shows here, and it chooses the expectation (expected/ch06/decode_4bit.json).
  // The NF4 step's products are the CPU's to choose too, never the kernel's to say.
  const ref::Nf4Products products = ref::nf4_products_for(ctx.hardware().has_isa("avx512_bf16"));
  ch06::Testbed::Needs needs;
  needs.engines = products == ref::Nf4Products::bf16;
  const ch06::Roofs& roofs = tb.measure(needs);
  std::string engine = "fp32 FMA";
  double engine_peak = roofs.peak;
  if (needs.engines) {
    engine = ch06::kBf16DotEngine;
    engine_peak = 0;
    for (const auto& [name, flops] : roofs.engines)
      if (name == engine) engine_peak = flops;
    if (!(engine_peak > 0))
      throw std::runtime_error(ctx.claim_id() +
                               ": this CPU has avx512_bf16 and the bf16 dot-product probe read "
                               "nothing: no roof for the NF4 kernel's engine");
  }
  const double weights = static_cast<double>(s16.weight_bytes()) / 2;
  const double bf16_floor = roofs.bytes_seconds(static_cast<double>(s16.weight_bytes()));
  const double nf4_memory_floor = roofs.bytes_seconds(static_cast<double>(s4.weight_bytes()));
  const double nf4_compute_floor = ref::nf4_gemv_compute_seconds(weights, engine_peak);
  const double byte_ratio = static_cast<double>(s4.weight_bytes()) / static_cast<double>(s16.weight_bytes());
  const double predicted_ratio = std::max(nf4_memory_floor, nf4_compute_floor) / bf16_floor;
  ctx.derive("nf4_predicted_time_over_bytes", predicted_ratio / byte_ratio, "ratio");
  ctx.derive("nf4_predicted_time_ratio", predicted_ratio, "ratio");
  // Each NF4 sample (the median of `steps` steps) between two bf16 samples, the median of the pairs' ratios
  // (base/timing.h's bracketed): a VM's memory speed drifts by a third from one second to the next (a neighbour's
  // load moves it more), and rounds of several steps per format left 0.27-0.34 to the moment.
  // The last timed step of each format computed y16 and y4: both against the answer key's fp64 step.
  // Both on the same input x, the one the answer key's step is given.
  const auto x = ch06::random_activations(static_cast<std::size_t>(shape.hidden), ctx.seed());
  std::vector<float> y16(static_cast<std::size_t>(shape.hidden)), y4(y16.size());
  const claimcheck::base::Bracketed pairs = claimcheck::base::bracketed(
      rounds, [&] { return ch06::time_stack(s16, opts, steps, x.data(), y16.data()); },
      [&] { return ch06::time_stack(s4, opts, steps, x.data(), y4.data()); });
  ctx.measure(
      "output_matches_reference",
      ch06::error_figure(ch06::ref::worse(ch06::stack_output_error(s16, x.data(), y16.data(), opts),
                                          ch06::stack_output_error(s4, x.data(), y4.data(), opts, levels, products))),
      "ratio");
  // The same kernels on every other path this CPU can run (a CPU without avx512_bf16 runs the fp32 NF4 kernel; one
  // without AVX-512, the AVX2 one), untimed, after the timing.
  std::string worst_path;
  double scale = 0;
  ctx.measure("gemv_paths_match_reference",
              ch06::error_figure(ch06::gemv_paths_error(s16.bf16_weights(0)[0], *s4.nf4_weight(0, 0), levels, opts,
                                                        ctx.seed(), &worst_path, &scale)),
              "ratio");
  // The weights the stack and the tail matrices were built with, at the generator's stated scale (1/sqrt(K)): every
  // output figure is relative to its own scale, so a generator that leaves a matrix empty or scales it by another
  // size moves none of them.
  for (int m = 0; m < 7; ++m) {
    const ch06::MatShape ms = ch06::mat_shape(shape, m);
    scale = ch06::farther_from_one(
        scale, ch06::weights_scale(s16.bf16_weights(0)[static_cast<std::size_t>(m)], ms.rows, ms.cols));
  }
  ctx.measure("weights_scale", scale, "ratio");
  ctx.detail("gemv_paths_worst", worst_path);
  const double time_ratio = pairs.ratio, t16 = pairs.best_a, t4 = pairs.best_b;
  const std::vector<double>& ratios = pairs.ratios;
  ctx.measure("time_ratio_over_predicted", time_ratio / predicted_ratio, "ratio");
  ctx.measure("time_ratio", time_ratio, "ratio");
  ctx.measure("time_ratio_over_byte_ratio", time_ratio / byte_ratio, "ratio");
  ctx.measure_bool("nf4_faster", time_ratio < 1);
  ctx.measure("measured_byte_ratio", byte_ratio, "ratio");
  ctx.measure("nf4_gb_s", static_cast<double>(s4.weight_bytes()) / t4 / 1e9, "GB/s");
  ctx.measure("bf16_gb_s", static_cast<double>(s16.weight_bytes()) / t16 / 1e9, "GB/s");
  ctx.detail("ms", {{"bf16", t16 * 1e3},
                    {"nf4", t4 * 1e3},
                    {"bf16_mb", s16.weight_bytes() / 1e6},
                    {"nf4_mb", s4.weight_bytes() / 1e6},
                    {"kernel_isa", ch06::K::gemv_simd_path(opts.faults)},
                    {"nf4_engine", engine},
                    {"nf4_products", ref::nf4_products_name(products)}});
  ctx.detail("pair_ratios", ratios);
  ctx.assumption("the machine's balance: the NF4 step's floor " + ch06::fmt3(nf4_memory_floor * 1e3) +
                 " ms at the read roof (" + ch06::fmt3(roofs.read / 1e9) + " GB/s) or " +
                 ch06::fmt3(nf4_compute_floor * 1e3) + " ms dequantising at the roof of its engine, " + engine + " (" +
                 ch06::fmt3(engine_peak / 1e9) + " GFLOP/s, " + ch06::fmt3(ref::kNf4FlopEquivalentsPerWeight) +
                 " FLOP-equivalents per weight), the bf16 step's " + ch06::fmt3(bf16_floor * 1e3) +
                 " ms: a kernel at its roof shows a time ratio of " + ch06::fmt3(predicted_ratio) + " (" +
                 (nf4_compute_floor > nf4_memory_floor ? "compute-bound" : "memory-bound: the bytes' ratio") + ")");
  ctx.assumption(
      "measured: " + std::to_string(shape.layers) + " Llama-3-8B-shaped layers, " + std::to_string(rounds) +
      " NF4 samples each between two bf16 samples (each the median of " + std::to_string(steps) +
      " steps), the median of the pairs' ratios (the GB/s: each format's best sample); NF4 = 4 bits + one "
      "fp32 absmax per 64 weights (" +
      std::to_string(byte_ratio) + " of bf16's bytes), its products in " + ref::nf4_products_name(products) +
      (products == ref::Nf4Products::bf16 ? " (the CPU has vdpbf16ps: levels and activations rounded to bf16)" : ""));
}

static void decode_4bit(claimcheck::Context& ctx) {
  namespace ref = claimcheck::ref;
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  const ref::QuantFormat q = ref::load_quant_format(ctx.input_path("quant"));

  // Run: bytes read per token in bf16 and in the 4-bit format.
  const double bf16 = ref::decode_bytes_per_token(cfg, {});
  const double q4 = ref::quantized_weight_bytes(cfg, q);

  // Verify.
  ctx.measure(q4 / bf16, "ratio");
  ctx.assumption("format: " + q.name +
                 "; decode stays memory-bound at 4 bits (intensity 4 FLOP/byte, still far "
                 "left of the ridge of " +
                 std::to_string(hw.ridge()) + ")");
  for (const char* alt : {"alt_flat", "alt_bnb"}) {
    const ref::QuantFormat a = ref::load_quant_format(ctx.input_path(alt));
    ctx.alternative(a.name, ref::quantized_weight_bytes(cfg, a) / bf16, "ratio",
                    std::to_string(a.bits_per_param()) + " bits per quantised weight");
  }
  if (!ctx.part_selected("measured")) {
    ctx.pending("the NF4 chain against the bf16 chain, timed here (run with --label measured)");
    return;
  }

  ch06::Testbed(ctx).run([&](claimcheck::Context& c, ch06::Testbed& tb) { decode_4bit_cpu(c, tb, q); },
                         decode_4bit_gpu);
}
CLAIMCHECK_REGISTER(decode_4bit)
    .claim("ch06.decode_4bit")
    .derives("nf4_predicted_time_over_bytes", claimcheck::Source::probe)
    .derives("nf4_predicted_time_ratio", claimcheck::Source::probe);
