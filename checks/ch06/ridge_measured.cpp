// ch06.ridge_measured — 「ridge = 算力 ÷ 带宽」, on this machine: the knee of a batch sweep against the ridge
// of the measured roofs (peak FLOP/s of the FMA probe over STREAM-style read bandwidth). The probe is held
// against the theoretical peak (cores x clock x FMA units x lanes x 2) and against LibTorch's own read.
#include <chrono>
#include <thread>

#include "claimcheck/base/timing.h"
#include "claimcheck/ref/ledger.h"
#include "testbed/testbed.h"

// The compute roof's batch: the smallest whose per-token time is within 5% of the sweep's best (per_token[i] is
// batch i's step time over its batch).
static std::size_t roof_index(const std::vector<double>& per_token) {
  const double best = *std::min_element(per_token.begin(), per_token.end());
  std::size_t i = 0;
  while (per_token[i] > 1.05 * best) ++i;
  return i;
}

// On a GPU: one Llama layer's GEMMs through cuBLAS swept over the batch; the roofs are the read probe and the bf16
// GEMM peak (8192^3 through cuBLAS), the theoretical peak the datasheet's (inputs.gpu_hardware).
static void ridge_measured_gpu(claimcheck::Context& ctx, ch06::Testbed& tb) {
  namespace G = ch06::gpu;
  const std::vector<int> batches = ch06::batch_list(ctx, "batches");
  const ch06::K::DecodeShape shape = G::shape(ctx, 1);  // the inputs first: a bad one costs no device time
  const auto spec = ch06::ref::load_hardware_spec(ctx.input_path("gpu_hardware"));
  tb.measure({.gpu_theory_peak = spec.peak_flops});
  const G::Roof& roof = tb.gpu_roof();
  ch06::K::GemvFaults faults;
  ch06::K::parse_gemv_fault(ctx.planted_fault(), &faults);
  const auto sweep = G::C::layer_batch_sweep(shape, batches, 10, faults);
  std::vector<double> per_token;
  for (const auto& p : sweep) per_token.push_back(p.seconds / p.batch);
  const std::size_t top = roof_index(per_token);
  const ch06::ref::Knee knee =
      top > 0 ? ch06::ref::sweep_knee({1, sweep[top].batch}, {sweep[0].seconds, sweep[top].seconds})
              : ch06::ref::sweep_knee({1, 2}, {sweep[0].seconds, 2 * sweep[0].seconds});
  const double knee_intensity = sweep[0].flops * knee.batch / sweep[0].bytes;
  ctx.derive("measured_ridge", roof.ridge(), "FLOP/byte");
  ctx.measure(knee_intensity, "FLOP/byte");
  ctx.measure("peak_vs_theoretical", roof.peak / spec.peak_flops, "ratio");
  ctx.measure_bool("read_checksum_exact", roof.read_exact);
  std::string torch_why = "LibTorch's read gave 0";
  double torch_read = 0;
  try {  // LibTorch's own read on the device: its sum over the probe's 4 GiB
    torch_read = ch06::ref::torch_cuda_read_bandwidth(std::size_t(4) << 30, 5);
  } catch (const std::exception& e) {
    torch_why = e.what();
  }
  if (torch_read > 0)
    ctx.measure("read_vs_libtorch", roof.read / torch_read, "ratio");
  else
    ctx.pending("the GPU probe's read against LibTorch's own (" + torch_why + ")");
  ctx.detail("libtorch_read_gb_s", torch_read / 1e9);
  ctx.measure("peak_gflops", roof.peak / 1e9, "GFLOP/s");
  ctx.measure("theoretical_gflops", spec.peak_flops / 1e9, "GFLOP/s");
  ctx.measure("read_gb_s", roof.read / 1e9, "GB/s");
  ctx.measure("knee_batch", knee.batch, "count");
  ctx.measure("roof_batch", sweep[top].batch, "count");
  nlohmann::json pts = nlohmann::json::array(), bx = nlohmann::json::array(), by = nlohmann::json::array();
  for (const auto& p : sweep) {
    pts.push_back(ch06::roofline_point("B=" + std::to_string(p.batch), p.flops, p.bytes, p.seconds));
    bx.push_back(p.batch);
    by.push_back(p.seconds / p.batch * 1e3);
  }
  tb.record("batch sweep of one Llama layer", pts);
  ctx.detail("curve", {{"title", "time per token against batch size (one Llama layer; knee at B = " +
                                     std::to_string(static_cast<int>(knee.batch + 0.5)) + ")"},
                       {"x_label", "batch (tokens)"},
                       {"y_label", "ms per token"},
                       {"log_x", true},
                       {"series", nlohmann::json::array({{{"name", "ms per token"}, {"x", bx}, {"y", by}}})}});
  ctx.assumption("measured on " + tb.device() +
                 ": knee = where batch 1's time (the memory floor) meets the per-token "
                 "time of the smallest batch within 5% of the best (the compute roof); the ridge = the bf16 GEMM peak "
                 "(8192^3 through cuBLAS, validated against fp64 dot products) over the read-only probe's bandwidth "
                 "(4 GiB, its sum checked against the closed form); theoretical peak: " +
                 spec.name);
}

// The probes themselves, which this claim judges rather than validates: each engine against its theoretical peak,
// the clock chains, the read's checksum. A planted-fault run that judges these alone stops after them.
static void probe_statements(claimcheck::Context& ctx, const ch06::Roof& roof) {
  // The probe itself: one thread against one core's theoretical peak (all threads can deliver fewer cores' worth where
  // a VM's vCPUs share a host core: cores_delivered, reported).
  const ch06::Engine& fma = roof.engines.front();
  if (fma.theory > 0)
    ctx.measure("peak_vs_theoretical", fma.share(), "ratio");
  else
    ctx.pending("the FMA probe against its theoretical peak: " + fma.why_not);
  // The same one-thread rate at the clock the chains measured with one thread busy, whatever the system states: the
  // theory takes the higher of the two clocks, so a clock probe that reads low is hidden wherever the stated clock
  // (cpufreq's maximum) is the higher; here it is not.
  if (fma.flop_per_cycle > 0 && roof.clock_one_hz > 0)
    ctx.measure("peak_at_measured_clock", fma.peak_one / (fma.flop_per_cycle * roof.clock_one_hz), "ratio");
  else
    ctx.pending("the FMA probe at the measured clock: " + (fma.why_not.empty() ? "no clock measured" : fma.why_not));
  ctx.measure("fma_cores_delivered", fma.cores_delivered(), "ratio");
  // Per thread it ran on: at most one thread's rate each (a rate of several threads counted twice reads 2).
  ctx.measure("fma_cores_per_thread", roof.threads > 0 ? fma.cores_delivered() / roof.threads : 0.0, "ratio");
  // The probe ran the widest fp32 vector path the machine has (its hardware record): a probe dispatched to a narrower
  // one reads a lower roof where the narrower path is slower, and hides that where it is not.
  ctx.measure_bool("probe_isa_is_widest", roof.peak.isa == ch06::widest_fp32_isa(ctx.hardware()));
  ctx.detail("probe_isa", roof.peak.isa);
  // The probe on every vector path this CPU runs (a CPU without AVX-512 dispatches to the AVX2 one), one thread each
  // against its own table figure at the same clock: the share farthest from 1, and its path. The best of 7 passes: a
  // fresh clone's suite read the AVX2 path at 0.78 once with 3 (a moment of the host's, no load the guest saw).
  const double clock1 = fma.flop_per_cycle > 0 ? fma.theory_one / fma.flop_per_cycle : 0;
  if (clock1 > 0) {
    double worst = 1;
    std::string worst_path, why_not;
    for (const std::string& path : ch06::K::fma_peak_paths_here()) {
      const auto fig = roof.uarch.fp32_flop_per_cycle.find(path);
      if (fig == roof.uarch.fp32_flop_per_cycle.end()) {
        why_not += (why_not.empty() ? "" : "; ") + path + ": no table figure";
        continue;
      }
      const double one = ch06::K::measure_fma_peak_on(path, 1, roof.faults, 7).flops_per_s;
      const double share =
          one / ch06::ref::theoretical_peak_flops(1, clock1, ch06::ref::nearest_figure(fig->second, one / clock1));
      if (!(std::fabs(share - 1) <= std::fabs(worst - 1))) worst = share, worst_path = path;
    }
    ctx.measure("probe_paths_vs_theoretical", worst, "ratio");
    ctx.detail("probe_paths_worst", worst_path.empty() ? why_not : worst_path);
  }
  // The two clock chains (different instructions of known latency) against each other, under load: the theoretical
  // peak rests on their clock, and the testbed accepts them 10% apart (a moment's load); a chain that counts its
  // operations wrong sits apart from the other on every reading.
  const double clock_lo = std::min(roof.clock.hz[0], roof.clock.hz[1]),
               clock_hi = std::max(roof.clock.hz[0], roof.clock.hz[1]);
  ctx.measure("clock_chains_apart", clock_lo > 0 ? clock_hi / clock_lo - 1 : INFINITY, "ratio");
  // The bf16 dot-product probe's count of its own work, where it runs: its kernel returns the sum of its lanes per
  // iteration, and each vdpbf16ps adds 2 x 1.0 x 2^-10 to each of a zmm's 16 fp32 lanes (the instruction's
  // definition), which gives the instructions it ran; at 64 FLOP each (16 lanes x 2 pairs x a product and an add),
  // over its iterations, threads and seconds, the rate it should have reported. A CPU whose table figure is a floor
  // cannot hold a FLOP miscounted upwards to that figure: this does.
  if (ctx.hardware().has_isa("avx512_bf16")) {
    const ch06::K::FlopsPeak p = ch06::K::measure_bf16_peak(1, 1, 0.02, roof.faults);
    const double per_instruction = 16 * std::ldexp(1.0, -9);
    const double instructions = p.result_min / per_instruction;  // per iteration
    const double recount = instructions * 64 * static_cast<double>(p.iterations) * p.threads / p.seconds;
    ctx.measure("bf16_dot_flops_recount",
                p.flops_per_s > 0 && p.result_min == p.result_max && recount > 0 ? p.flops_per_s / recount : 1e300,
                "ratio");
    ctx.detail("bf16_dot_recount", {{"instructions_per_iteration", instructions},
                                    {"iterations", p.iterations},
                                    {"reported_gflops", p.flops_per_s / 1e9},
                                    {"recounted_gflops", recount / 1e9}});
  }
  // Every other engine of this CPU against its own theoretical figure.
  for (std::size_t i = 1; i < roof.engines.size(); ++i) {
    const ch06::Engine& e = roof.engines[i];
    const std::string key = e.isa == "amx_bf16" ? "amx" : "bf16_dot";
    // Against the table's figure; where the table gives only a floor (a core faster than it is no miscount), the
    // share is judged up to 1.
    if (e.peak_one > 0 && e.theory > 0)
      ctx.measure(key + "_vs_theoretical", e.lower_bound ? std::min(e.share(), 1.0) : e.share(), "ratio");
    else
      ctx.pending("the " + e.name + " probe against its theoretical peak: " +
                  (e.why_not.empty() ? "the microarchitecture table has no figure for it" : e.why_not));
  }
  // The read's sum against the closed form of its fill (element i holds i mod 8), here and not the probe's own: on
  // the timed array, and on a small one whose 64-element groups do not split evenly among the threads and whose
  // last 1 MiB read block is short (a first touch or a block loop that drops a tail shows there).
  const auto fill_sum = [](std::size_t bytes) {
    const std::size_t n = bytes / sizeof(float);
    return static_cast<double>(n / 8) * 28.0 + static_cast<double>((n % 8) * (n % 8 - 1) / 2 * (n % 8 > 0));
  };
  const ch06::K::Bandwidth odd = ch06::K::measure_bandwidth(
      roof.threads, (static_cast<std::size_t>(std::max(1, roof.threads)) * (std::size_t{1} << 18) + 64) * sizeof(float),
      1, roof.faults);
  // And the read of a caller's buffer (the yardstick of each kernel's own bytes): 2^19 + 37 floats filled here with
  // 1 + i mod 7 (no element 0, no period that a block's start aligns with), so that its last block is shorter than
  // one pass of the four streams and every element of every tail counts.
  std::vector<float> own((std::size_t{1} << 19) + 37);
  double own_want = 0;
  for (std::size_t i = 0; i < own.size(); ++i) own_want += own[i] = static_cast<float>(1 + i % 7);
  double own_sum = -1;
  ch06::K::measure_read_seconds({{own.data(), own.size() * sizeof(float)}}, roof.threads, 1, roof.faults, &own_sum);
  ctx.measure_bool("read_checksum_exact", roof.bw.checksum == fill_sum(roof.bw.array_bytes) &&
                                              odd.checksum == fill_sum(odd.array_bytes) && odd.array_bytes > 0 &&
                                              own_sum == own_want);
  // The read array against the last-level cache the answer key reads (the highest level sysfs lists): at least 4x,
  // or some of the read comes from the cache and the roof is too high (an array sized by a lower level fits in a
  // large L3).
  const std::size_t llc = ch06::ref::last_level_cache_bytes_sysfs();
  if (llc > 0)
    ctx.measure("read_array_over_llc", static_cast<double>(roof.bw.array_bytes) / static_cast<double>(llc), "ratio");
  else
    ctx.pending("the read array against the last-level cache: sysfs lists no cache for cpu0");
}

// On this CPU: one Llama-3-8B up_proj-shaped bf16 matrix swept over the batch on the FMA probe's roofs.
static void ridge_measured_cpu(claimcheck::Context& ctx, ch06::Testbed& tb) {
  // Prepare and run: one Llama-3-8B up_proj-shaped matrix (bf16), well beyond the last-level cache, swept over the
  // batches; the ridge is the peak over the bandwidth of batch 1's moment. The probe is this claim's figure: judged
  // below, not validated before.
  ch06::sweep_inputs(ctx, 1);  // (read before the probes)
  tb.measure({.validate = false, .engines = true});
  const ch06::Roof& roof = tb.cpu_roof();
  probe_statements(ctx, roof);
  if (ctx.wants_only({"peak_vs_theoretical", "peak_at_measured_clock", "fma_cores_delivered", "fma_cores_per_thread",
                      "probe_isa_is_widest", "probe_paths_vs_theoretical", "clock_chains_apart",
                      "bf16_dot_vs_theoretical", "bf16_dot_flops_recount", "amx_vs_theoretical", "read_checksum_exact",
                      "read_array_over_llc"}))
    return;
  const ch06::SweepRun run = ch06::run_sweep(ctx, tb, 1);
  const int N = run.N, Kd = run.Kd;
  const auto& sweep = run.points;
  // Batch 1 timed right after the probe's reader read the same matrix, 15 times (the median pair): the memory floor
  // against the bandwidth those very bytes are read at that moment (the ridge's bandwidth). Against the probe's array
  // of 4x the LLC instead, the knee read 0.51x the ridge on an Intel Xeon guest whose 480 MiB LLC holds part of the
  // 112 MiB matrix: the GEMV read it at 56 GB/s where the array read 31.5 (2026-12-03); that ridge is reported apart.
  const auto x1 = ch06::random_activations(static_cast<std::size_t>(Kd), ctx.seed());
  std::vector<float> y1(static_cast<std::size_t>(N));
  ch06::Kernel k1{"B=1", ch06::sweep_flops(N, Kd, 1), ch06::sweep_bytes(N, Kd, 1)};
  k1.sample = [&] {
    return ch06::best_seconds(1, [&] { ch06::K::gemm_bf16(run.W.data(), N, Kd, x1.data(), 1, y1.data(), run.opts); });
  };
  k1.rounds = 15;  // (one run per read: the best of several after one read reads the matrix from what the runs left)
  k1.bound = ch06::Bound::memory;
  k1.reads = {{run.W.data(), run.W.size() * sizeof(run.W[0])}};
  const ch06::Timing b1 = tb.time(k1);
  // The compute roof timed against the peak of its own moment, as the floor is against the bandwidth of its own:
  // the smallest batch whose per-token time is within 5% of the sweep's best, re-timed three times right after a
  // short peak probe (the median pair). A neighbour that holds a core during the large batches then slows the peak
  // it is judged by too (unpaired, a parallel ctest once read the knee at 0.48x the ridge).
  std::vector<double> per_token;
  for (const auto& p : sweep) per_token.push_back(p.seconds / p.batch);
  const std::size_t top = roof_index(per_token);
  const int top_batch = sweep[top].batch;
  const std::vector<float> X = ch06::random_activations(static_cast<std::size_t>(top_batch) * Kd, ctx.seed());
  std::vector<float> Y(static_cast<std::size_t>(top_batch) * N);
  ch06::Kernel ktop{"B=" + std::to_string(top_batch), ch06::sweep_flops(N, Kd, top_batch),
                    ch06::sweep_bytes(N, Kd, top_batch)};
  ktop.sample = [&] {
    return ch06::best_seconds(
        1, [&] { ch06::K::gemm_bf16(run.W.data(), N, Kd, X.data(), top_batch, Y.data(), run.opts); });
  };
  ktop.rounds = 3;
  ktop.bound = ch06::Bound::compute;
  const ch06::Timing roof_pair = tb.time(ktop);
  // What the two timed ends and every batch of the sweep computed, against the answer key's fp64 dot products.
  const double output_error = ch06::ref::worse(
      ch06::ref::worse(ch06::ref::gemm_bf16_sampled_error(run.W.data(), N, Kd, x1.data(), 1, y1.data()),
                       ch06::ref::gemm_bf16_sampled_error(run.W.data(), N, Kd, X.data(), top_batch, Y.data())),
      ch06::sweep_error(sweep));
  // The knee from the two paired ends: batch 1's time (the memory floor) and the top batch's (the compute roof).
  const ch06::ref::Knee knee =
      top_batch > 1 ? ch06::ref::sweep_knee({1, top_batch}, {b1.seconds, roof_pair.seconds})
                    : ch06::ref::sweep_knee({1, 2}, {b1.seconds, 2 * b1.seconds});  // no batch beat B = 1: knee at 1
  const double knee_intensity =
      ch06::sweep_flops(N, Kd, 1) * knee.batch / ch06::sweep_bytes(N, Kd, 1);  // FLOP per weight byte at the knee

  // The probe and LibTorch's own read in pairs run back to back (this VM's bandwidth drifts by a third from minute to
  // minute: LibTorch's sum read 14-15 GB/s in one minute and 20 in another, the same from C++ as from Python), the
  // median of five pairs' ratios.
  double torch_read = 0, probe_read = 0, pair_ratio = 0;
  std::string torch_why;
  try {
    const std::size_t torch_bytes = std::max<std::size_t>(roof.bw.array_bytes, std::size_t{512} << 20);
    // Each side's array filled once for the five pairs (not the timed samples above: their probes keep the
    // conditions the bands were measured in).
    const ch06::K::BandwidthArraysKept kept;
    const ch06::ref::TorchRead torch_reader(torch_bytes);
    std::vector<double> probe, lib, ratio;
    for (int pair = 0; pair < 5; ++pair) {
      probe.push_back(ch06::K::measure_bandwidth(roof.threads, roof.bw.array_bytes, 1, roof.faults).read_bytes_per_s);
      lib.push_back(torch_reader.bytes_per_s(roof.threads, 1));
      if (lib.back() > 0) ratio.push_back(probe.back() / lib.back());
      // LibTorch's OpenMP threads (libgomp) spin for milliseconds after a parallel region before they sleep: the
      // probe's pinned threads started at once shared both cores with them and read 14-26 GB/s where they read 33
      // alone (read_vs_libtorch 0.49-0.78 in 3 of 5 runs on a Zen 4 guest, 2026-12-06; 1.11-1.33 in 4 of 4 with
      // OMP_WAIT_POLICY=passive). The next pair starts once they are idle.
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    probe_read = claimcheck::base::median(probe);
    torch_read = claimcheck::base::median(lib);
    if (!ratio.empty()) pair_ratio = claimcheck::base::median(ratio);
  } catch (const std::exception& e) {
    torch_why = e.what();
  }

  // Verify.
  ctx.derive("measured_ridge", roof_pair.peak / b1.read, "FLOP/byte");
  ctx.measure(knee_intensity, "FLOP/byte");
  // Every other engine of this CPU: its ridge over the same bandwidth (against its theoretical figure above).
  for (std::size_t i = 1; i < roof.engines.size(); ++i) {
    const ch06::Engine& e = roof.engines[i];
    const std::string key = e.isa == "amx_bf16" ? "amx" : "bf16_dot";
    if (e.peak > 0) ctx.measure(key + "_ridge", e.peak / b1.read, "FLOP/byte");
  }
  ctx.measure("output_matches_reference", ch06::error_figure(output_error), "ratio");
  if (pair_ratio > 0)
    ctx.measure("read_vs_libtorch", pair_ratio, "ratio");
  else
    ctx.pending("the probe's read against LibTorch's own (" +
                (torch_why.empty() ? std::string("LibTorch's read gave 0") : torch_why) + ")");
  ctx.measure("peak_gflops", roof.peak.flops_per_s / 1e9, "GFLOP/s");
  ctx.measure("theoretical_gflops", roof.theory() / 1e9, "GFLOP/s");
  ctx.measure("read_gb_s", roof.bw.read_bytes_per_s / 1e9, "GB/s");
  ctx.measure("matrix_read_gb_s", b1.read / 1e9, "GB/s");
  ctx.measure("ridge_beyond_llc", roof_pair.peak / roof.bw.read_bytes_per_s, "FLOP/byte");
  ctx.measure("knee_batch", knee.batch, "count");
  ctx.measure("roof_batch", top_batch, "count");
  ctx.measure("roof_peak_gflops", roof_pair.peak / 1e9, "GFLOP/s");
  nlohmann::json pts = nlohmann::json::array(), bx = nlohmann::json::array(), by = nlohmann::json::array();
  for (const auto& p : sweep) {
    const double f = ch06::sweep_flops(N, Kd, p.batch), b = ch06::sweep_bytes(N, Kd, p.batch);
    pts.push_back(ch06::roofline_point("B=" + std::to_string(p.batch), f, b, p.seconds));
    bx.push_back(p.batch);
    by.push_back(p.seconds / p.batch * 1e3);
  }
  ctx.detail("libtorch_read_gb_s", torch_read / 1e9);  // the medians of the five pairs, each side
  ctx.detail("probe_read_paired_gb_s", probe_read / 1e9);
  ch06::Roofs drawn = tb.roofs();  // the roofs the knee was judged against: batch 1's bandwidth, the top batch's peak
  drawn.read = b1.read;
  drawn.peak = roof_pair.peak;
  tb.record("batch sweep of one " + std::to_string(N) + "x" + std::to_string(Kd) + " bf16 matrix", pts, drawn);
  ctx.detail("curve", {{"title", "time per token against batch size (" + std::to_string(N) + "x" + std::to_string(Kd) +
                                     " bf16; knee at B = " + std::to_string(static_cast<int>(knee.batch + 0.5)) + ")"},
                       {"x_label", "batch (tokens)"},
                       {"y_label", "ms per token"},
                       {"log_x", true},
                       {"series", nlohmann::json::array({{{"name", "ms per token"}, {"x", bx}, {"y", by}}})}});
  ctx.assumption(
      "knee = where the memory floor (the step time at batch 1, timed right after the probe's reader read the same "
      "matrix, whose bandwidth makes the ridge) meets the compute roof (the per-token time of the smallest batch "
      "within 5% of the sweep's best, timed right after a peak probe whose FLOP/s makes the ridge); at batch B a bf16 "
      "weight does 2B FLOP per 2 bytes, so the knee's intensity is B FLOP/byte");
  ctx.assumption(
      "peak: " + std::to_string(roof.peak.chains) + " independent " + roof.peak.isa +
      " FMA chains per "
      "thread on " +
      std::to_string(roof.threads) + " pinned threads; bandwidth: a read-only reduction over " +
      std::to_string(roof.bw.array_bytes >> 20) +
      " MiB per pass (>= 4x the last-level cache), four streams per thread, the median of 5 passes; LibTorch's read: "
      "the median of its sums over a tensor of that size, interleaved with the probe");
  ctx.assumption(
      "theoretical peak: " + std::to_string(roof.cores) + " physical cores x clock x " +
      ch06::fmt3(roof.engines.front().flop_per_cycle) + " fp32 FLOP per cycle per core (" +
      (roof.uarch.known() ? roof.uarch.name + ": " + roof.uarch.why : std::string("microarchitecture unknown")) +
      "), at the higher of the system's clock and the clock measured under load (two dependent chains "
      "agreeing: " +
      roof.clock.methods[0] + ", " + roof.clock.methods[1] + ")");
}

static void ridge_measured(claimcheck::Context& ctx) { ch06::Testbed(ctx).run(ridge_measured_cpu, ridge_measured_gpu); }
CLAIMCHECK_REGISTER(ridge_measured).claim("ch06.ridge_measured").derives("measured_ridge", claimcheck::Source::probe);
