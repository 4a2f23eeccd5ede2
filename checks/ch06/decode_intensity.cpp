// ch06.decode_intensity — 「decode 强度 ≈ 1 远低于 295，是 memory-bound，所以 batch 大才快」
// Analytic on Llama-3-8B and the H100 card; measured here on Llama-3-8B up_proj-shaped bf16 matrices stacked beyond
// the last-level cache: batch 1 runs at the bandwidth roof (its time is its bytes over the measured read
// bandwidth), and a batch of B tokens costs about what one costs until the knee, so per-token time falls B-fold.
#include "claimcheck/ref/ledger.h"
#include "testbed/testbed.h"

// The GPU form: one Llama layer's seven GEMMs through cuBLAS at batches 1 ... B.
static void decode_intensity_gpu(claimcheck::Context& ctx, ch06::Testbed& tb) {
  namespace G = ch06::gpu;
  const std::vector<int> batches = ch06::batch_list(ctx, "batches", 4);
  const ch06::K::DecodeShape shape = G::shape(ctx, 1);  // the inputs first: a bad one costs no device time
  const ch06::Roofs& roofs = tb.measure();
  ch06::K::GemvFaults faults;
  ch06::K::parse_gemv_fault(ctx.planted_fault(), &faults);
  const auto sweep = G::C::layer_batch_sweep(shape, batches, 20, faults);
  const G::C::SweepPoint& p1 = sweep.front();
  const auto& p4 = sweep[static_cast<std::size_t>(std::find(batches.begin(), batches.end(), 4) - batches.begin())];
  ctx.measure("b1_vs_bandwidth_roof", p1.seconds / roofs.bytes_seconds(p1.bytes), "ratio");
  ctx.measure_bool("measured_memory_bound", roofs.memory_bound(p1.flops, p1.bytes));
  ctx.measure("per_token_speedup_b4", p1.seconds / (p4.seconds / 4), "ratio");
  nlohmann::json pts = nlohmann::json::array(), rows = nlohmann::json::array();
  for (const auto& p : sweep) {
    pts.push_back(ch06::roofline_point("B=" + std::to_string(p.batch), p.flops, p.bytes, p.seconds));
    rows.push_back({{"batch", p.batch}, {"ms", p.seconds * 1e3}, {"ms_per_token", p.seconds / p.batch * 1e3}});
  }
  ctx.detail("sweep", rows);
  tb.record("batch 1 to " + std::to_string(batches.back()) + " of one Llama layer", pts);
  ctx.assumption("measured on " + tb.device() +
                 ": one Llama-3-8B-shaped layer's q, k, v, o, gate, up, down through "
                 "cublasGemmEx (bf16, fp32 accumulation), the median of 20 runs per batch; batch 1 against its bytes "
                 "over the read probe's bandwidth");
}

// The CPU form: the same matrix stacked beyond the last-level cache, batch 1 against its own read.
static void decode_intensity_cpu(claimcheck::Context& ctx, ch06::Testbed& tb) {
  // The matrix stacked beyond the last-level cache: on a CPU whose cache holds one up_proj, a kernel re-reading the
  // weights per token would re-read them from the cache and look batched.
  const ch06::SweepRun run = ch06::run_sweep(ctx, tb, /*must_batch=*/4, {}, /*beyond_llc=*/true);
  const int N = run.N, Kd = run.Kd;
  const std::vector<int>& batches = run.batches;
  const auto& sweep = run.points;
  // Batch 1 against one read of its own matrix by the read probe, step by step (15 rounds: the median ratio), as
  // ch06.decode_measured: a bandwidth probed seconds before, over another array, follows a shared host's drift and
  // a quieter moment's faster read than the GEMV can follow.
  const auto x1 = ch06::random_activations(static_cast<std::size_t>(Kd), ctx.seed());
  std::vector<float> y1(static_cast<std::size_t>(N));
  ch06::Kernel k1{"B=1", ch06::sweep_flops(N, Kd, 1), ch06::sweep_bytes(N, Kd, 1)};  // the activations too
  k1.sample = [&] {
    return ch06::best_seconds(1, [&] { ch06::K::gemm_bf16(run.W.data(), N, Kd, x1.data(), 1, y1.data(), run.opts); });
  };
  k1.rounds = 15;
  k1.warm_ups = 1;
  k1.reads = {{run.W.data(), run.W.size() * sizeof(ch06::K::bf16_t)}};
  k1.bound = ch06::Bound::memory;
  const ch06::Timing b1 = tb.time(k1);
  ctx.measure(
      "output_matches_reference",
      ch06::error_figure(ch06::ref::worse(
          ch06::ref::gemm_bf16_sampled_error(run.W.data(), N, Kd, x1.data(), 1, y1.data()), ch06::sweep_error(sweep))),
      "ratio");
  ctx.measure("b1_vs_bandwidth_roof", b1.ratio, "ratio");
  // The probe's bandwidth (its array, its own byte count) against the same reader's rate over this matrix (bytes the
  // check counts, and at least the probe's array: from memory on any CPU), one pass of each side by side, the median
  // of 7 pairs (a shared host's memory speed moves by a third between seconds): a probe counting bytes it did not
  // read is no roof, and the batch ratios above, each over a read of its own matrix, would not see it.
  if (ctx.wants("probe_read_vs_own_read")) {
    const ch06::Roof& r = tb.cpu_roof();
    const ch06::K::BandwidthArraysKept kept;
    std::vector<double> pairs;
    for (int i = 0; i < 7; ++i) {
      const double probe = ch06::K::measure_bandwidth(r.threads, r.bw.array_bytes, 1, r.faults).read_bytes_per_s;
      const double own = static_cast<double>(run.W.size() * sizeof(ch06::K::bf16_t)) /
                         ch06::K::measure_read_seconds(k1.reads, r.threads, 1, r.faults);
      pairs.push_back(probe / own);
    }
    ctx.detail("probe_read_vs_own_read_pairs", pairs);
    ctx.measure("probe_read_vs_own_read", claimcheck::base::median(pairs), "ratio");
  }
  ctx.detail("b1_step_over_read", b1.ratios);
  ctx.measure_bool("measured_memory_bound", tb.roofs().flops_seconds(k1.flops) < b1.roof_seconds());
  const std::size_t i4 = static_cast<std::size_t>(std::find(batches.begin(), batches.end(), 4) - batches.begin());
  ctx.measure("per_token_speedup_b4", sweep.front().seconds / (sweep[i4].seconds / 4), "ratio");
  nlohmann::json pts = nlohmann::json::array(), rows = nlohmann::json::array();
  for (const auto& p : sweep) {
    const double f = ch06::sweep_flops(N, Kd, p.batch), b = ch06::sweep_bytes(N, Kd, p.batch);
    pts.push_back(ch06::roofline_point("B=" + std::to_string(p.batch), f, b, p.seconds));
    rows.push_back({{"batch", p.batch}, {"ms", p.seconds * 1e3}, {"ms_per_token", p.seconds / p.batch * 1e3}});
  }
  ctx.detail("sweep", rows);
  tb.record("batch 1 to " + std::to_string(batches.back()) + " of one " + std::to_string(N) + "x" + std::to_string(Kd) +
                " bf16 matrix",
            pts);
  ctx.detail("stacked_layers", run.layers);
  ctx.assumption("measured: a " + std::to_string(run.rows) + "x" + std::to_string(Kd) + " bf16 matrix stacked " +
                 std::to_string(run.layers) + " times, as that many layers (" + std::to_string(2LL * N * Kd >> 20) +
                 " MiB, at least the read probe's " + std::to_string(tb.cpu_roof().bw.array_bytes >> 20) +
                 " MiB arrays: 4x the last-level cache) through the project's batched GEMV; batch 1's time against "
                 "its bytes over the read of the same matrix by the probe's reader just before it (the median of 15 "
                 "such pairs); batch 4 lies below this CPU's ridge (" +
                 std::to_string(tb.roofs().ridge()) + " FLOP/byte), so it should cost about what batch 1 costs");
}

static void decode_intensity(claimcheck::Context& ctx) {
  namespace ref = claimcheck::ref;
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));
  // The parameters a token meets (a mixture of experts routes it to a few; all of them in a dense model), and the
  // bytes the step reads for them.
  const ref::ParamCount count = ref::count_params(cfg);
  const auto active = static_cast<double>(count.active());

  // Run: FLOP per token over bytes per token at batch 1, and the batch at which it meets the ridge.
  const double bytes = ref::decode_bytes_per_token(cfg, {});
  const double intensity = 2.0 * active / bytes;

  // Verify.
  ctx.measure(intensity, "FLOP/byte");
  ctx.measure_bool("memory_bound", intensity < hw.ridge());
  ctx.measure("knee_batch", hw.ridge() / intensity, "count");
  ctx.assumption(
      "2 FLOP per parameter per token, every bf16 weight read once per step; a batch of B tokens "
      "reuses each weight B times, so intensity ~ B until the ridge");
  ctx.alternative("matmul FLOPs only (no embedding lookup FLOPs)",
                  2.0 * (active - static_cast<double>(count.embedding)) / bytes, "FLOP/byte",
                  "the lookup moves bytes but does no multiply-adds");
  if (!ctx.part_selected("measured")) {
    ctx.pending("batch 1 against the bandwidth roof, measured here (run with --label measured)");
    return;
  }

  ch06::Testbed(ctx).run(decode_intensity_cpu, decode_intensity_gpu);
}
CLAIMCHECK_REGISTER(decode_intensity).claim("ch06.decode_intensity");
