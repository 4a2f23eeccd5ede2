// The answer key of the roofline (chapter 6): what this CPU should do at best, from what it says it is, and
// the plain arithmetic the measured sweeps are read with.
//  - the theoretical peak: cores x clock x FMA units x lanes x 2, the clock read from the system and the FMA
//    units from a table of the vendors' manuals (reference/data/hardware/cpu-fma.json);
//  - the knee of a batch sweep: where the memory floor (the time of the smallest batch) meets the compute roof (the
//    best per-token time of the sweep);
//  - LibTorch's own read bandwidth (a sum over a large fp32 tensor), the yardstick the probe is held against.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace claimcheck::ref {

struct CpuIdentity {
  std::string vendor;      // vendor_id of /proc/cpuinfo
  int family = 0, model = 0;
  std::string model_name;
  double clock_hz = 0;     // the highest clock the system states (cpufreq's maximum, else /proc/cpuinfo's MHz)
  std::string clock_source;
};
CpuIdentity read_cpu_identity();

struct FmaUnits {
  int units = 1;
  int vector_bits = 128;
  std::string why;
};
// The first rule of `table` that matches the vendor, family, model and one of the ISA flags (lower case, as
// /proc/cpuinfo spells them). Throws std::runtime_error naming the file and field on a malformed table.
FmaUnits fma_units(const CpuIdentity& cpu, const std::vector<std::string>& isa, const std::filesystem::path& table);

// Physical cores among the CPUs of this process's affinity mask (SMT siblings count once; sysfs topology).
int usable_physical_cores();

// cores x clock x units x lanes x 2 FLOP (lanes = min(vector_bits, isa_bits) / 32).
double theoretical_peak_flops(int cores, double clock_hz, const FmaUnits& u, int isa_vector_bits);

struct Knee {
  double batch = 0;              // where the two asymptotes meet
  double floor_seconds = 0;      // the memory floor: the step time at the smallest batch
  double roof_seconds_per_token = 0;  // the compute roof: the best per-token time of the sweep
};
// batches ascending, step_seconds[i] the time of one step of batches[i] tokens.
Knee sweep_knee(const std::vector<int>& batches, const std::vector<double>& step_seconds);

// LibTorch: the median of `passes` sums over an fp32 tensor of `bytes`, on `threads` intra-op threads (bytes/s).
// Throws std::runtime_error when not built with LibTorch.
double torch_read_bandwidth(std::size_t bytes, int threads, int passes);
// The same on the CUDA device: the median of `passes` timings of 10 back-to-back sums over an fp32 CUDA tensor of
// `bytes` (host clock, the queue drained by reading the last sum). Throws std::runtime_error where LibTorch sees no
// CUDA device, or there is no LibTorch.
double torch_cuda_read_bandwidth(std::size_t bytes, int passes);

}  // namespace claimcheck::ref
