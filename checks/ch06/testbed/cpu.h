// Shared by the chapter 6 checks that measure this machine: the roofline probe (kernels/cpu/roofline/) held
// against the theoretical peak (reference/), a batch sweep of one Llama-shaped matrix on the bf16 kernels. Kernels
// are timed against these roofs by the testbed (testbed.h). Inputs in ch06_inputs.h, the decode stack's data
// and timing in ch06_decode.h, the GPU's roof in testbed/gpu.h; both roofs give the device-neutral view of
// testbed/roofs.h (Roof::roofs), which the report's roofline draws (details.roofline).
#pragma once
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../dispatch_expect.h"
#include "../ch06_decode.h"
#include "../ch06_inputs.h"
#include "claimcheck/base/threads.h"
#include "claimcheck/base/timing.h"
#include "claimcheck/check.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/kernels/roofline.h"
#include "claimcheck/probe.h"
#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/roofline.h"
#include "roofs.h"

namespace ch06 {

// The further engines' names (Engine::name, Kernel::engine), and the one a bf16 matmul engine runs on ("" = fp32 FMA).
inline constexpr const char* kBf16DotEngine = "bf16 dot products";
inline constexpr const char* kAmxEngine = "AMX bf16 tiles";
inline std::string engine_of_matmul(const std::string& matmul_engine) {
  return matmul_engine == "avx512_bf16" ? kBf16DotEngine : matmul_engine == "amx_bf16" ? kAmxEngine : "";
}

// One compute engine of this CPU: what its probe measured and what the microarchitecture's table says one core does
// per cycle, times the cores and the clock.
// The probe is validated per core: one thread against one core's theoretical figure. All threads together can
// deliver fewer cores' worth than the guest has: a VM's vCPUs may sit on SMT siblings of one host core for a while
// (on the Zen 3 guest here the two threads read 1.0x one thread's peak for seconds at a time, then 1.9-2.0x; one
// thread's peak stayed at 93-95 GFLOP/s throughout). That is the machine of the moment, reported as
// cores_delivered, not a fault of the probe.
struct Engine {
  std::string name;           // "fp32 FMA", "bf16 dot products", "AMX bf16 tiles"
  std::string isa;            // what the probe ran ("avx2", "avx512", "avx512_bf16", "amx_bf16", ...)
  double peak = 0;            // measured FLOP/s, all threads
  double peak_one = 0;        // measured FLOP/s, one thread
  double theory = 0;          // cores x clock x FLOP per cycle per core; 0 where the table does not know this CPU
  double theory_one = 0;      // one core's
  double flop_per_cycle = 0;  // per core, the table's figure held against
  bool lower_bound = false;   // the table's figure is a floor (the vendor publishes no rate): no upper check
  std::string why_not;        // where the engine is absent or its probe could not run
  double share() const { return theory_one > 0 ? peak_one / theory_one : 0; }  // the probe's validation
  double share_all() const { return theory > 0 ? peak / theory : 0; }
  double cores_delivered() const { return peak_one > 0 ? peak / peak_one : 0; }
};

struct Roof {
  K::FlopsPeak peak;  // the fp32 FMA probe: the roof of every kernel here that converts bf16 to fp32 in registers
  K::Bandwidth bw;
  K::ClockReading clock;    // the two clock chains, the higher of the readings before and after the peak probe
  double clock_hz = 0;      // measured under load (the two chains agreeing)
  double clock_one_hz = 0;  // the same with one thread busy (the clock of the one-thread FMA rate)
  ref::CpuIdentity cpu;
  ref::Microarch uarch;
  double theory_system = 0;  // cores x the clock the system states x the fp32 FLOP per cycle of this microarchitecture
  double theory_loaded = 0;  // the same at the clock measured under load
  std::vector<Engine> engines;  // fp32 FMA first, then bf16 dot products and AMX tiles where measured
  int threads = 0;
  int cores = 0;             // physical
  int probe_attempts = 1;    // the FMA probe's attempts (more than one where it first read below kProbeFloor)
  K::RooflineFaults faults;  // planted by a test (the probe's own faults)
  double ridge() const { return peak.flops_per_s / bw.read_bytes_per_s; }
  double theory() const { return std::max(theory_system, theory_loaded); }
  // The device-neutral view (roofs.h): the fp32 FMA roof, the read bandwidth, the other engines' roofs.
  Roofs roofs() const {
    Roofs v{
        cpu.model_name + (uarch.known() ? ", " + uarch.name : ""), bw.read_bytes_per_s, peak.flops_per_s, theory(), {}};
    for (std::size_t i = 1; i < engines.size(); ++i) v.engines.emplace_back(engines[i].name, engines[i].peak);
    return v;
  }
};

inline int isa_vector_bits(const std::string& isa) {
  return isa == "avx512" ? 512 : isa == "avx2" ? 256 : isa == "neon" ? 128 : 32;
}
// The widest fp32 vector ISA this machine has (the hardware record): a probe that fell back to a narrower path is
// held against the machine's width, not its own.
inline std::string widest_fp32_isa(const claimcheck::HardwareInfo& hw) {
#if defined(__aarch64__)
  (void)hw;
  return "neon";
#else
  return claimcheck::checks::record_widest_x86(hw);  // (AVX-512 as the kernels take it: F, BW, VL and DQ)
#endif
}

// Three significant digits, for a figure quoted in an assumption or a reason.
inline std::string fmt3(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// A probe below this share of its theoretical figure is a bug in the probe (or a machine too busy to measure), not
// a roof to judge a kernel against.
constexpr double kProbeFloor = 0.8;
// The further engines (bf16 dot products, AMX tiles), reported beside the roof the kernels are judged against: a
// probe below half its theoretical figure is a bug in it. Their instructions run under the core's own clock licence
// (Intel lowers the clock for AMX and heavy AVX-512 work below the scalar clock the theory is taken at): an AMX probe
// read 0.77-0.85 of it on a Xeon guest, run to run.
constexpr double kFurtherEngineFloor = 0.5;
// Above this share of its theoretical figure (where the table's figure is the core's rate, not a floor) a probe
// counts work it did not do, or the table misnames the core: no roof either. One thread of each probe read 0.97-0.99
// on Zen 3, Zen 4 and Zen 5 guests at the clock measured under load, 0.78-0.90 on a Xeon (its AVX-512 and AMX
// clock licences); ch06.ridge_measured judges the fp32 probe itself more tightly (1.05).
constexpr double kProbeCeiling = 1.1;

// The clock under load, both chains agreeing within 10% (the higher of the readings before and after the peak
// probe for each chain). Throws where they disagree: one of them is being shortcut by this core (unless no time is
// judged: then the higher chain, reported only).
inline double agreed_clock(const std::string& id, K::ClockReading& into, const K::ClockReading& a,
                           const K::ClockReading& b, int threads, const K::RooflineFaults& faults, bool judged = true) {
  into = a;
  for (int i = 0; i < 2; ++i) into.hz[i] = std::max(a.hz[i], b.hz[i]);
  // A disagreement that a moment's load made goes away when measured again; a chain a core shortcuts stays.
  for (int again = 0; again < 3 && into.hz[0] > 0 && !(into.agreed_hz(0.1) > 0); ++again) {
    const K::ClockReading c = K::measure_clock(threads, 0.002, faults);
    for (int i = 0; i < 2; ++i) into.hz[i] = std::max(into.hz[i], c.hz[i]);
  }
  const double hz = into.agreed_hz(0.1);
  if (!judged && into.hz[0] > 0 && !(hz > 0)) return std::max(into.hz[0], into.hz[1]);
  if (into.hz[0] > 0 && !(hz > 0))
    throw std::runtime_error(id + ": the two clock probes disagree: " + into.methods[0] + " reads " +
                             std::to_string(into.hz[0] / 1e9) + " GHz, " + into.methods[1] + " reads " +
                             std::to_string(into.hz[1] / 1e9) + " GHz (a core that shortcuts one chain; not a clock)");
  return hz;
}

// The probe, with the fault a test planted (probe_few_chains), and the theoretical peak it is held against.
// A known microarchitecture's probe below kProbeFloor of its theoretical peak throws (the check errors: no figure is
// judged against a roof that is not one). validate = false leaves the fp32 probe to the caller: ch06.ridge_measured,
// whose claim is the probe itself, judges it. with_engines: the bf16 dot-product and AMX probes too, where this CPU
// has them (validated whatever `validate` says). A run that judges no time (--statement on what the timed kernels
// computed, a planted fault's test beside others) holds no figure against the roof: the probes are reported, not
// validated (a neighbour's load would refuse them for nothing).
inline Roof measure_roof(claimcheck::Context& ctx, bool with_bandwidth = true, bool validate = true,
                         bool with_engines = false) {
  const bool judged = ctx.timing_judged();
  Roof r;
  r.threads = claimcheck::usable_cpus();
  K::RooflineFaults faults;
  K::parse_roofline_fault(ctx.planted_fault(), &faults);
  r.faults = faults;
  r.cpu = ref::read_cpu_identity();
  r.uarch = ref::identify_microarch(r.cpu, ctx.root() / "reference/data/hardware/cpu-uarch.json");
  r.cores = ref::usable_physical_cores();
  const std::string isa = widest_fp32_isa(ctx.hardware());
  const auto figs = r.uarch.fp32_flop_per_cycle.find(isa);
  // The clock before and after the peak, the higher kept: a neighbour that slows the clock probe for a moment must
  // not make the theoretical peak look lower than what the FMA probe reached beside it. Up to three attempts while
  // the peak reads below kProbeFloor of the theoretical one (a shared VM's host takes its cores away for a while:
  // 0.67 once on the Zen 3 guest, 0.97 a minute later), the best kept.
  Engine fp32{"fp32 FMA"};
  for (int attempt = 1; attempt <= 3; ++attempt) {
    Roof a = r;
    const K::ClockReading before = K::measure_clock(r.threads, 0.002, faults);
    a.peak = K::measure_fma_peak(r.threads, faults, /*passes=*/5);
    // One thread, with the clock of one busy core (a core alone may run faster than all of them together).
    const K::FlopsPeak one = K::measure_fma_peak(1, faults, /*passes=*/3);
    K::ClockReading c1;
    // (validate = false: the claim judges the two chains' agreement itself, ch06.ridge_measured's clock_chains_apart.)
    const double clock_one = agreed_clock(ctx.claim_id(), c1, K::measure_clock(1, 0.002, faults),
                                          K::measure_clock(1, 0.002, faults), 1, faults, judged && validate);
    a.clock_hz = agreed_clock(ctx.claim_id(), a.clock, before, K::measure_clock(r.threads, 0.002, faults), r.threads,
                              faults, judged && validate);
    a.clock_one_hz = clock_one;
    Engine e{"fp32 FMA", a.peak.isa, a.peak.flops_per_s, one.flops_per_s};
    if (figs != r.uarch.fp32_flop_per_cycle.end()) {
      const double clock1 = std::max({clock_one, a.clock_hz, r.cpu.clock_hz});
      e.flop_per_cycle = ref::nearest_figure(figs->second, one.flops_per_s / clock1);
      a.theory_system = ref::theoretical_peak_flops(r.cores, r.cpu.clock_hz, e.flop_per_cycle);
      a.theory_loaded = ref::theoretical_peak_flops(r.cores, a.clock_hz, e.flop_per_cycle);
      e.theory = a.theory();
      e.theory_one = ref::theoretical_peak_flops(1, clock1, e.flop_per_cycle);
    }
    if (attempt == 1 || e.share() > fp32.share()) r = a, fp32 = e;
    r.probe_attempts = attempt;
    if (!judged || !(fp32.theory > 0) || fp32.share() >= kProbeFloor) break;
  }
  if (with_bandwidth) r.bw = K::measure_bandwidth(r.threads, 0, 5, faults);
  if (figs == r.uarch.fp32_flop_per_cycle.end()) {
    fp32.why_not = r.uarch.known()
                       ? "the table has no fp32 figure for " + isa + " on " + r.uarch.name
                       : "no rule of the microarchitecture table names this CPU (" + r.cpu.vendor + " family " +
                             std::to_string(r.cpu.family) + " model " + std::to_string(r.cpu.model) + ")";
  }
  r.engines.push_back(fp32);
  if (with_engines) {
    const double clock = std::max(r.clock_hz, r.cpu.clock_hz);
    const K::FlopsPeak bf = K::measure_bf16_peak(r.threads, 3, 0.05, faults);
    if (bf.flops_per_s > 0) {
      Engine e{kBf16DotEngine, bf.isa, bf.flops_per_s, K::measure_bf16_peak(1, 3, 0.05, faults).flops_per_s};
      e.flop_per_cycle = r.uarch.bf16_dot_flop_per_cycle;
      e.lower_bound = r.uarch.bf16_dot_lower_bound;
      e.theory = ref::theoretical_peak_flops(r.cores, clock, e.flop_per_cycle);
      e.theory_one = e.theory / r.cores;
      r.engines.push_back(e);
    }
    const K::AmxPeak amx = K::measure_amx_peak(r.threads, 3, 0.05, faults);
    if (amx.peak.flops_per_s > 0 || ctx.hardware().has_isa("amx_bf16")) {
      const K::AmxPeak amx1 = amx.peak.flops_per_s > 0 ? K::measure_amx_peak(1, 3, 0.05, faults) : K::AmxPeak{};
      Engine e{kAmxEngine, "amx_bf16", amx.peak.flops_per_s, amx1.peak.flops_per_s};
      e.flop_per_cycle = r.uarch.amx_bf16_flop_per_cycle;
      e.theory = ref::theoretical_peak_flops(r.cores, clock, e.flop_per_cycle);
      e.theory_one = e.theory / r.cores;
      e.why_not = amx.why_not;
      if (amx.peak.flops_per_s > 0 && (!amx.exact || !amx1.exact))
        throw std::runtime_error(ctx.claim_id() +
                                 ": the AMX probe's accumulators missed their closed form (a probe that "
                                 "skipped work): not a roof");
      r.engines.push_back(e);
    }
  }
  for (const Engine& e : r.engines) {
    if (!judged || !(validate || &e != &r.engines.front())) continue;
    // All threads together deliver at most one thread's rate per thread (a core alone runs at least as fast as
    // all of them together; a VM may deliver fewer, see Engine): more is work counted that was not done. (No
    // theoretical figure needed: held on a CPU the table does not know too.)
    if (e.peak_one > 0 && r.threads > 0 && e.cores_delivered() > kProbeCeiling * r.threads)
      throw std::runtime_error(ctx.claim_id() + ": the " + e.name + " probe (" + e.isa + ") read " +
                               fmt3(e.peak / 1e9) + " GFLOP/s on " + std::to_string(r.threads) + " threads, " +
                               fmt3(e.cores_delivered()) + "x its one thread's " + fmt3(e.peak_one / 1e9) +
                               " GFLOP/s: more than the threads it ran, a probe that counts work it did not do, "
                               "not a roof");
    // validate = false: the claim judges each probe against its theoretical figure itself (ch06.ridge_measured's
    // statements), so a miscount reads FAIL there, not an error.
    if (!(e.theory > 0) || !validate) continue;
    const double floor = &e == &r.engines.front() ? kProbeFloor : kFurtherEngineFloor;
    auto refuse = [&](const std::string& beyond, const char* why) {
      throw std::runtime_error(ctx.claim_id() + ": the " + e.name + " probe (" + e.isa + ") read " +
                               fmt3(e.peak_one / 1e9) + " GFLOP/s on one thread, " + fmt3(e.share()) +
                               " of one core's theoretical " + fmt3(e.theory_one / 1e9) + " GFLOP/s (" + r.uarch.name +
                               "): " + beyond + ", " + why + ", not a roof");
    };
    if (!e.lower_bound && e.share() > kProbeCeiling)
      refuse("above " + fmt3(kProbeCeiling), "a probe that counts work it did not do or a core the table misnames");
    if (e.peak > 0 && e.share() < floor) refuse("below " + fmt3(floor), "a probe bug or a machine too busy to measure");
  }
  return r;
}

inline nlohmann::json engine_json(const Engine& e) {
  nlohmann::json j = {{"engine", e.name},
                      {"isa", e.isa},
                      {"peak_gflops", e.peak / 1e9},
                      {"one_thread_gflops", e.peak_one / 1e9},
                      {"cores_delivered", e.cores_delivered()}};
  if (e.theory > 0) {
    j["theoretical_gflops"] = e.theory / 1e9;
    j["flop_per_cycle_per_core"] = e.flop_per_cycle;
    j["one_thread_share_of_one_core"] = e.share();
    j["share_of_theoretical"] = e.share_all();
    if (e.lower_bound) j["theoretical_is_a_floor"] = true;
  }
  if (!e.why_not.empty()) j["why_not"] = e.why_not;
  return j;
}

inline nlohmann::json roof_json(const Roof& r) {
  nlohmann::json engines = nlohmann::json::array();
  for (const auto& e : r.engines) engines.push_back(engine_json(e));
  return {{"threads", r.threads},
          {"peak_gflops", r.peak.flops_per_s / 1e9},
          {"peak_isa", r.peak.isa},
          {"peak_chains_per_thread", r.peak.chains},
          {"read_gb_s", r.bw.read_bytes_per_s / 1e9},
          {"array_mb", static_cast<double>(r.bw.array_bytes) / 1e6},
          {"llc_mb", static_cast<double>(r.bw.llc_bytes) / 1e6},
          {"ridge_flop_per_byte", r.bw.read_bytes_per_s > 0 ? r.ridge() : 0.0},
          {"clock_measured_ghz", r.clock_hz / 1e9},
          {"clock_chains_ghz", {{r.clock.methods[0], r.clock.hz[0] / 1e9}, {r.clock.methods[1], r.clock.hz[1] / 1e9}}},
          {"clock_system_ghz", r.cpu.clock_hz / 1e9},
          {"clock_source", r.cpu.clock_source},
          {"cpu", r.cpu.model_name},
          {"microarchitecture", r.uarch.known() ? r.uarch.name : "unknown"},
          {"microarchitecture_why", r.uarch.why},
          {"microarchitecture_by", r.uarch.identified_by},  // "table" (CPUID's numbers) or "libcpuinfo"
          {"libcpuinfo_uarch", r.cpu.library_uarch},
          {"physical_cores", r.cores},
          {"fma_probe_attempts", r.probe_attempts},
          {"engines", engines},
          {"theoretical_gflops_system_clock", r.theory_system / 1e9},
          {"theoretical_gflops_loaded_clock", r.theory_loaded / 1e9}};
}

// One step of a batch of B tokens through W (bf16 [N, K]) per batch size: the time of the best of a few runs, and
// what the last of them wrote against the answer key's fp64 dot products (ref::gemm_bf16_sampled_error): each batch
// size runs its own tiles (a direct tile per 1-16 tokens, the panel GEMM above), so each is checked.
struct SweepPoint {
  int batch = 0;
  double seconds = 0;
  double error = 0;
};
inline std::vector<SweepPoint> batch_sweep(const claimcheck::base::aligned_vector<K::bf16_t>& W, int N, int Kd,
                                           const std::vector<int>& batches, const K::GemvOptions& o,
                                           std::uint64_t seed) {
  const int maxb = *std::max_element(batches.begin(), batches.end());
  const std::vector<float> X = random_activations(static_cast<std::size_t>(maxb) * Kd, seed);
  std::vector<float> Y(static_cast<std::size_t>(maxb) * N);
  K::gemm_bf16(W.data(), N, Kd, X.data(), 1, Y.data(), o);  // warm-up: page-in, thread start
  std::vector<SweepPoint> out;
  for (int b : batches) {
    const int reps = b >= 128 ? 2 : b >= 16 ? 3 : 5;
    // NaN first: a token or row this batch leaves unwritten must not read the last batch's (the same) answer.
    std::fill_n(Y.begin(), static_cast<std::size_t>(b) * N, std::numeric_limits<float>::quiet_NaN());
    const double t = best_seconds(reps, [&] { K::gemm_bf16(W.data(), N, Kd, X.data(), b, Y.data(), o); });
    out.push_back({b, t, ref::gemm_bf16_sampled_error(W.data(), N, Kd, X.data(), b, Y.data())});
  }
  return out;
}
// The largest output error over a sweep's batch sizes.
inline double sweep_error(const std::vector<SweepPoint>& sweep) {
  double e = 0;
  for (const SweepPoint& p : sweep) e = ref::worse(e, p.error);
  return e;
}
// FLOPs and compulsory bytes of one sweep point (bf16 weights read once, fp32 activations in and out).
inline double sweep_flops(int N, int Kd, int b) { return 2.0 * N * Kd * b; }
inline double sweep_bytes(int N, int Kd, int b) { return 2.0 * N * Kd + 4.0 * b * (static_cast<double>(N) + Kd); }

}  // namespace ch06
