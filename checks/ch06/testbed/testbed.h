// The roofline testbed (CUTLASS's testbed.h, for roofs): a ch06 check states the kernel it measures (its name, the
// FLOPs it does and the bytes it must move, from its shape, and one timed sample of it) and the testbed, which picked
// the device and measured its roofs, times it against the roof that bounds it:
//  - on this CPU (cpu.h), round by round against the same moment's probe, because a shared host's
//    bandwidth and cores drift by a third from one second to the next: a memory-bound kernel after one read of its
//    own buffers by the probe's reader (or of the probe's array, where it names none), a compute-bound one after a
//    short FMA peak probe;
//  - on a GPU (gpu.h), where the probe found a CUDA device that this build has code for: the median sample
//    against the roofs measured once, or the floor of the two where the kernel names neither.
// Which roof bounds a kernel is its intensity against the measured ridge, unless the check names it. The roofs
// (roofs.h) title and draw the report's roofline with the device's name.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/base/timing.h"
#include "cpu.h"
#include "gpu.h"
#include "roofs.h"

namespace ch06 {

class DecodeChain;

enum class Bound { memory, compute };

// What a check measures.
struct Kernel {
  std::string name;                // the roofline's label
  double flops = 0, bytes = 0;     // from the shape, not from the kernel's own count
  std::function<double()> sample;  // seconds of one timed sample (a CUDA graph's median replay, on a GPU)
  int rounds = 1;                  // samples, each paired with its roof's probe on the CPU; their median is the time
  int warm_ups = 0;                // samples run first and not kept (page-in, a thread pool's start)
  // The buffers it reads: on the CPU, each memory-bound sample follows one read of these very pages (from whatever
  // cache holds them), so that a kernel at the memory roof reads about 1x on any machine. Empty: the probe's array.
  std::vector<std::pair<const void*, std::size_t>> reads;
  std::optional<Bound> bound;  // the roof it is held against; unnamed: the one its intensity puts it under
  // The CPU engine whose probe is its compute roof: "" the fp32 FMA probe's, else an engine measure(engines = true)
  // measured ("bf16 dot products", "AMX bf16 tiles"), each compute-bound round paired with that probe.
  std::string engine;
};

// A kernel's time against its roof at the moments it ran.
struct Timing {
  Bound bound = Bound::memory;
  double seconds = 0;          // the median sample (on the CPU without buffers named: the median round's)
  double ratio = 0;            // the time over what its roof allows it (median over rounds): 1 = at the roof
  double read = 0, peak = 0;   // bytes/s and FLOP/s of the roofs it was held against
  std::vector<double> ratios;  // each round's, in order
  double roof_seconds() const { return ratio > 0 ? seconds / ratio : 0; }
};

class Testbed {
 public:
  // Picks the device: the GPU where the probe found a CUDA device in a build with CUDA (one it has no code for
  // skips the claim with the reason, never a CPU figure in its place); this CPU otherwise, saying so in the row
  // where the host has a GPU it could not use. cpu_only: a claim whose figure is this CPU's wherever it runs.
  explicit Testbed(claimcheck::Context& ctx, bool cpu_only = false)
      : ctx_(ctx), gpu_form_(!cpu_only && gpu::present(ctx)) {}

  // A testbed over roofs measured already (a test's): no device picked, none measured.
  Testbed(claimcheck::Context& ctx, const Roof& cpu) : ctx_(ctx), cpu_(cpu), roofs_(cpu.roofs()) {}
  Testbed(claimcheck::Context& ctx, const gpu::Roof& g, double theory_peak = 0)
      : ctx_(ctx), gpu_form_(true), gpu_(g), roofs_(g.roofs(theory_peak)) {}

  // A check whose GPU form measures otherwise than its CPU form (cuBLAS's layer GEMMs where this CPU sweeps one
  // matrix, both chains graphed) hands both forms here; the testbed runs the one of the device it picked.
  using Form = std::function<void(claimcheck::Context&, Testbed&)>;
  void run(const Form& cpu, const Form& gpu) { (gpu_form_ ? gpu : cpu)(ctx_, *this); }

  // The decode chain of the device picked, and the library's on the same weights (decode_chain.h).
  std::unique_ptr<DecodeChain> decode_chain() const;

  // What the roofs are measured with: the CPU's bandwidth, its probe validated against the theoretical peak (the
  // ridge's check validates it itself), its other engines; the GPU's GEMM peak and the datasheet's.
  struct Needs {
    bool bandwidth = true, validate = true, engines = false;
    double gpu_theory_peak = 0;
  };
  // Measures the roofs (after the check has read its inputs: a bad one costs no probe time).
  const Roofs& measure(const Needs& n) {
    if (gpu_form_) {
      gpu_ = gpu::measure_roof(ctx_);
      roofs_ = gpu_->roofs(n.gpu_theory_peak);
    } else {
      cpu_ = measure_roof(ctx_, n.bandwidth, n.validate, n.engines);
      roofs_ = cpu_->roofs();
    }
    return roofs_;
  }
  const Roofs& measure() { return measure(Needs{}); }
  bool measured() const { return cpu_ || gpu_; }

  const Roofs& roofs() const { return roofs_; }
  const std::string& device() const { return roofs_.device; }
  const Roof& cpu_roof() const {
    if (!cpu_) throw std::logic_error("ch06::Testbed: no CPU roof measured");
    return *cpu_;
  }
  const gpu::Roof& gpu_roof() const {
    if (!gpu_) throw std::logic_error("ch06::Testbed: no GPU roof measured");
    return *gpu_;
  }

  Timing time(const Kernel& k) const {
    if (!cpu_ && !gpu_) throw std::logic_error("ch06::Testbed: time() before measure()");
    Timing t;
    t.bound = k.bound ? *k.bound : roofs_.memory_bound(k.flops, k.bytes) ? Bound::memory : Bound::compute;
    if (!ctx_.timing_judged()) {
      // A run that judges no time (a planted-fault test's, on what the kernel computed): two samples, unpaired (an
      // output that accumulates over calls shows in the second), so that the kernel's buffers hold its output; the
      // figures they give are reported, not judged.
      k.sample();
      t.seconds = k.sample();
      t.read = roofs_.read, t.peak = engine_peak(k.engine);
      const double roof = t.bound == Bound::memory ? roofs_.bytes_seconds(k.bytes) : k.flops / t.peak;
      t.ratio = roof > 0 ? t.seconds / roof : 0;
      t.ratios = {t.ratio};
      return t;
    }
    for (int i = 0; i < k.warm_ups; ++i) k.sample();
    const int rounds = std::max(1, k.rounds);
    if (gpu_) {
      const double roof =
          k.bound ? (t.bound == Bound::memory ? roofs_.bytes_seconds(k.bytes) : roofs_.flops_seconds(k.flops))
                  : roofs_.floor_seconds(k.flops, k.bytes);
      std::vector<double> s;
      for (int i = 0; i < rounds; ++i) s.push_back(k.sample());
      for (double x : s) t.ratios.push_back(x / roof);
      t.seconds = claimcheck::base::median(std::move(s));
      t.ratio = t.seconds / roof;
      t.read = roofs_.read, t.peak = roofs_.peak;
      return t;
    }
    const Roof& r = *cpu_;
    t.read = r.bw.read_bytes_per_s, t.peak = engine_peak(k.engine);
    if (t.bound == Bound::memory && !k.reads.empty()) {
      // Each sample over the read of its own buffers just before; the median sample against the median ratio.
      double read_bytes = 0;
      for (const auto& b : k.reads) read_bytes += static_cast<double>(b.second);
      std::vector<double> samples;
      for (int i = 0; i < rounds; ++i) {
        const double read = K::measure_read_seconds(k.reads, r.threads, 1, r.faults);
        samples.push_back(k.sample());
        t.ratios.push_back(samples.back() / (read * k.bytes / read_bytes));
      }
      t.seconds = claimcheck::base::median(std::move(samples));
      t.ratio = claimcheck::base::median(t.ratios);
      t.read = k.bytes / t.roof_seconds();
      return t;
    }
    // Each sample after a short FMA peak probe (compute-bound) or a read pass over the probe's array (4x the
    // last-level cache; the first round's is the probe's own): the round whose time x rate is the median.
    const bool compute = t.bound == Bound::compute;
    const double work = compute ? k.flops : k.bytes;
    struct Round {
      double seconds, rate;  // the sample, and its roof's rate that moment (FLOP/s or bytes/s)
    };
    std::vector<Round> rs;
    for (int i = 0; i < rounds; ++i) {
      const double rate = compute  ? engine_probe(k.engine, r)
                          : i == 0 ? r.bw.read_bytes_per_s
                                   : K::measure_bandwidth(r.threads, r.bw.array_bytes, 3, r.faults).read_bytes_per_s;
      rs.push_back({k.sample(), rate});
      t.ratios.push_back(rs.back().seconds * rate / work);
    }
    const Round m = claimcheck::base::median_by(rs, [](const Round& x) { return x.seconds * x.rate; });
    t.seconds = m.seconds, t.ratio = m.seconds * m.rate / work;
    (compute ? t.peak : t.read) = m.rate;
    return t;
  }

  // details.roof (the probe's record) and details.roofline: "<what> on <device>", the roofs measured (or those the
  // check judged against, where it paired them) and the points.
  void record(const std::string& what, const nlohmann::json& points) const { record(what, points, roofs_); }
  void record(const std::string& what, const nlohmann::json& points, const Roofs& drawn) const {
    ctx_.detail("roof", gpu_ ? gpu::roof_json(*gpu_) : roof_json(cpu_roof()));
    ctx_.detail("roofline", roofline_chart(what + " on " + roofs_.device, drawn, points));
  }

 private:
  // The compute roof of an engine (Kernel::engine) as measured, and a fresh short probe of it (a compute-bound
  // round's).
  double engine_peak(const std::string& engine) const {
    if (engine.empty()) return roofs_.peak;
    for (const auto& [name, flops] : roofs_.engines)
      if (name == engine) return flops;
    throw std::logic_error("ch06::Testbed: no '" + engine + "' roof measured (measure with engines = true)");
  }
  static double engine_probe(const std::string& engine, const Roof& r) {
    if (engine.empty()) return K::measure_fma_peak(r.threads, r.faults, /*passes=*/2).flops_per_s;
    if (engine == kBf16DotEngine) return K::measure_bf16_peak(r.threads, 2, 0.05, r.faults).flops_per_s;
    if (engine == kAmxEngine) return K::measure_amx_peak(r.threads, 2, 0.05, r.faults).peak.flops_per_s;
    throw std::logic_error("ch06::Testbed: no probe of an engine '" + engine + "'");
  }

  claimcheck::Context& ctx_;
  bool gpu_form_ = false;
  std::optional<Roof> cpu_;
  std::optional<gpu::Roof> gpu_;
  Roofs roofs_;
};

// A point of the roofline for a kernel that ran in `seconds`.
inline nlohmann::json roofline_point(const Kernel& k, double seconds) {
  return roofline_point(k.name, k.flops, k.bytes, seconds);
}

// A batch sweep of one bf16 matrix on this CPU (inputs rows, cols, batches), on the testbed's roofs (measured here,
// after the inputs, with `needs`). With `beyond_llc`, the matrix is stacked as `layers` copies of itself into one
// tall [layers * rows, cols] matrix at least as large as the read probe's arrays (4x the last-level cache): a
// kernel that re-reads its weights then re-reads them from memory, as a model's layers would, on a CPU whose cache
// holds one matrix as on one whose cache does not.
struct SweepRun {
  int N = 0, Kd = 0;
  int rows = 0, layers = 1;  // N = rows * layers
  std::vector<int> batches;
  std::vector<SweepPoint> points;
  claimcheck::base::aligned_vector<K::bf16_t> W;  // the swept matrix, for a check that re-times a point
  K::GemvOptions opts;
};
// The sweep's inputs (rows, cols, batches), read before any probe: a bad one costs no probe time.
inline SweepRun sweep_inputs(claimcheck::Context& ctx, int must_batch = 1) {
  SweepRun s;
  s.rows = positive_int(ctx, "rows", 65536);
  s.Kd = positive_int(ctx, "cols", 65536);
  s.batches = batch_list(ctx, "batches", must_batch);
  return s;
}
// The roofs measured with `needs` (unless the check measured them already), then the sweep.
inline SweepRun run_sweep(claimcheck::Context& ctx, Testbed& tb, int must_batch = 1, const Testbed::Needs& needs = {},
                          bool beyond_llc = false) {
  SweepRun s = sweep_inputs(ctx, must_batch);
  if (!tb.measured()) tb.measure(needs);
  const std::size_t one = static_cast<std::size_t>(s.rows) * s.Kd;
  if (beyond_llc) {
    const double target = static_cast<double>(tb.cpu_roof().bw.array_bytes);
    s.layers = std::max(1, static_cast<int>(std::ceil(target / (2.0 * static_cast<double>(one)))));
    if (static_cast<long long>(s.layers) * s.rows > std::numeric_limits<int>::max())
      throw std::runtime_error("inputs.rows: " + std::to_string(s.layers) + " stacked copies of " +
                               std::to_string(s.rows) + " rows exceed the GEMV's int row count");
  }
  s.N = s.rows * s.layers;
  s.W = random_bf16(one, s.Kd, ctx.seed());
  if (s.layers > 1) {
    s.W.resize(one * static_cast<std::size_t>(s.layers));
    for (int l = 1; l < s.layers; ++l) std::copy_n(s.W.data(), one, s.W.data() + one * static_cast<std::size_t>(l));
  }
  s.opts = gemv_options(ctx);
  s.points = batch_sweep(s.W, s.N, s.Kd, s.batches, s.opts, ctx.seed());
  return s;
}

}  // namespace ch06
