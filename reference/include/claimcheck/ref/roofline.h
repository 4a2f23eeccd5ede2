// The answer key of the roofline (chapter 6): what this CPU should do at best, from what it says it is, and
// the plain arithmetic the measured sweeps are read with.
//  - the theoretical peak of each engine (fp32 FMA, bf16 dot products, AMX tiles): cores x clock x FLOP per cycle
//    per core, the microarchitecture identified from /proc/cpuinfo (CPUID vendor, family, model; Arm implementer
//    and part) in a table of the vendors' manuals (reference/data/hardware/cpu-uarch.json);
//  - the knee of a batch sweep: where the memory floor (the time of the smallest batch) meets the compute roof (the
//    best per-token time of the sweep);
//  - LibTorch's own read bandwidth (a sum over a large fp32 tensor), the yardstick the probe is held against.
#pragma once
#include <cstddef>
#include <filesystem>
#include <istream>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace claimcheck::ref {

struct CpuIdentity {
  std::string vendor;  // x86: vendor_id ("GenuineIntel", "AuthenticAMD"); Arm: "ARM"
  int family = 0, model = 0;
  std::string model_name;          // x86's "model name" ("" on Arm, whose /proc/cpuinfo has none)
  std::string implementer, part;   // Arm: "CPU implementer" and "CPU part" ("0x41", "0xd40"); "" on x86
  std::vector<std::string> flags;  // x86 "flags", Arm "Features", as /proc/cpuinfo spells them
  double clock_hz = 0;             // the highest clock the system states (cpufreq's maximum, else /proc/cpuinfo's MHz)
  std::string clock_source;
  // libcpuinfo's name for the first core's microarchitecture ("zen3", "sky_lake", "neoverse_v1"; its enum without
  // the cpuinfo_uarch_ prefix): read_cpu_identity fills it where the project was built with libcpuinfo and the library
  // knows the core, "" otherwise.
  std::string library_uarch;
  bool has(const std::string& flag) const;
};
// The first processor's block of a /proc/cpuinfo text (lines starting with '#' skipped); `where` names the source in
// errors. Throws std::runtime_error naming it when the text names no CPU (no vendor_id and no CPU implementer).
CpuIdentity parse_cpuinfo(std::istream& in, const std::string& where);
// parse_cpuinfo of /proc/cpuinfo, with the clock the system states and libcpuinfo's name for the core.
CpuIdentity read_cpu_identity();

// What one core of a microarchitecture does per cycle, from the table (reference/data/hardware/cpu-uarch.json).
struct Microarch {
  std::string name;  // "" when no rule names this CPU: then nothing below is known
  std::string why;   // the rule's sources
  // "table" (the rule's vendor, family and models, or implementer and parts) or "libcpuinfo" (no rule names this CPU
  // by its numbers, and the rule lists libcpuinfo's name for it: cpuinfo_uarch)
  std::string identified_by;
  // fp32 FLOP per cycle per core by the vector ISA a probe ran ("avx512", "avx2", "neon"); more than one figure where
  // CPUID cannot tell them apart (Skylake-SP's one or two 512-bit units).
  std::map<std::string, std::vector<double>> fp32_flop_per_cycle;
  double bf16_dot_flop_per_cycle = 0;  // vdpbf16ps; 0 = none
  bool bf16_dot_lower_bound = false;   // the vendor publishes no rate: the figure is a floor, not the peak
  double amx_bf16_flop_per_cycle = 0;  // AMX tdpbf16ps; 0 = none
  bool known() const { return !name.empty(); }
};
// The first rule of `table` that names `cpu` (vendor, family, model or model range, Arm implementer and part, an ISA
// flag, a model-name pattern). Throws std::runtime_error naming the file and field on a malformed table.
Microarch identify_microarch(const CpuIdentity& cpu, const std::filesystem::path& table);

// Physical cores among the CPUs of this process's affinity mask (SMT siblings count once; sysfs topology).
int usable_physical_cores();
// The size of the highest cache level sysfs lists for one CPU (its index*/level and size; instruction caches left
// out), 0 where it lists none: the answer key's reading, apart from the bandwidth probe's.
std::size_t last_level_cache_bytes_sysfs(const std::filesystem::path& cache_dir = "/sys/devices/system/cpu/cpu0/cache");

// A GEMV over NF4 weights dequantised in registers spends, per weight, its multiply-add (2 FLOP) and as many vector
// operations again to unpack the nibble and look it up in the 16-entry table: 4 FLOP-equivalents at the roof of the
// engine it multiplies on. On the fp32 FMAs (16 lanes a vector: a lookup, a shift and an FMA per 16 weights) that
// roof is the FMA peak (measured from cache, one thread times two: Zen 4 32.3 GB/s of NF4 where this predicts 32.5;
// Zen 5 about 78 where it predicts 73). On the bf16 dot products (32 lanes: a lookup and a shift per 32 weights, a
// vdpbf16ps per 32 products) it is the dot-product peak, twice the FMA's on a core whose vdpbf16ps issues at its FMA
// rate: a floor the kernel reaches less closely (Zen 4, from cache, 2 threads: 72.5 G weights/s where this predicts
// 115), far below what memory brings there. Its compute floor is weights x 4 / that peak; where it exceeds the bytes'
// time at the read roof, NF4 decode is compute-bound on the machine, whatever kernel runs it no faster.
inline constexpr double kNf4FlopEquivalentsPerWeight = 4;
inline double nf4_gemv_compute_seconds(double weights, double engine_peak_flops) {
  return weights * kNf4FlopEquivalentsPerWeight / engine_peak_flops;
}

// cores x clock x FLOP per cycle per core.
inline double theoretical_peak_flops(int cores, double clock_hz, double flop_per_cycle) {
  return static_cast<double>(cores) * clock_hz * flop_per_cycle;
}
// Of the figures a rule allows, the one nearest to `measured` (the only one where there is one); 0 when none.
double nearest_figure(const std::vector<double>& figures, double measured);

struct Knee {
  double batch = 0;                   // where the two asymptotes meet
  double floor_seconds = 0;           // the memory floor: the step time at the smallest batch
  double roof_seconds_per_token = 0;  // the compute roof: the best per-token time of the sweep
};
// batches ascending, step_seconds[i] the time of one step of batches[i] tokens.
Knee sweep_knee(const std::vector<int>& batches, const std::vector<double>& step_seconds);

// LibTorch's own read: an fp32 tensor of `bytes` filled once; bytes_per_s is the median of `passes` sums over it on
// `threads` intra-op threads (bytes/s), so that a check alternating it with the probe pays the sums, not the first
// touch. Throws std::runtime_error when not built with LibTorch.
class TorchRead {
 public:
  explicit TorchRead(std::size_t bytes);  // throws std::runtime_error when not built with LibTorch
  ~TorchRead();
  TorchRead(const TorchRead&) = delete;
  TorchRead& operator=(const TorchRead&) = delete;
  double bytes_per_s(int threads, int passes) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// The same on the CUDA device: the median of `passes` timings of 10 back-to-back sums over an fp32 CUDA tensor of
// `bytes` (host clock, the queue drained by reading the last sum). Throws std::runtime_error where LibTorch sees no
// CUDA device, or there is no LibTorch.
double torch_cuda_read_bandwidth(std::size_t bytes, int passes);
// LibTorch's fp32 GEMM (M x K times K x N) on `threads` intra-op threads (restored after): the best of `repeats`
// timings after a warm-up, in seconds. The library's own ceiling at a shape, timed apart from any code under test's
// settings (its thread count, its dtype). Throws std::runtime_error when not built with LibTorch.
double torch_matmul_fp32_seconds(int M, int N, int K, int threads, int repeats);

}  // namespace claimcheck::ref
