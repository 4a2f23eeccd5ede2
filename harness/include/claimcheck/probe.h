// The hardware probe: what the machine at hand is, for the report's hardware record
// and for expectations re-derived on this machine.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace claimcheck {

struct GpuInfo {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::uint64_t memory_bytes = 0;
  int memory_clock_khz = 0;     // peak memory clock
  int bus_width_bits = 0;
  double theoretical_bandwidth = 0;  // bytes/s = 2 (DDR) x clock x bus width / 8
};

struct HardwareInfo {
  std::string cpu_model;
  std::string cpu_vendor;         // vendor_id ("GenuineIntel", "AuthenticAMD"), "ARM" on Arm
  int cpu_family = 0, cpu_model_number = 0;  // CPUID family and model (x86)
  std::string microarchitecture;  // from the answer key's table (reference/data/hardware/cpu-uarch.json); "" unknown
  int logical_cpus = 0;          // online
  int usable_cpus = 0;           // in this process's affinity mask
  std::vector<std::string> isa;  // the flags that matter here: avx2, avx512f, avx512_bf16, amx_bf16, ...
  std::uint64_t memory_bytes = 0;
  std::optional<GpuInfo> gpu;
  std::string gpu_absent_reason;  // why there is no GPU (not built with CUDA, no device, ...)
  // An NVIDIA GPU the kernel driver lists on this host ("NVIDIA H200"), whether or not this build can use it: where
  // it cannot, the rows measured on the CPU in its place say so. "" when the driver lists none.
  std::string gpu_on_host;

  bool has_isa(const std::string& flag) const;
};

// `uarch_table`: the microarchitecture table to name the CPU with (none: the name is left empty).
HardwareInfo probe_hardware(const std::filesystem::path& uarch_table = {});
nlohmann::json to_json(const HardwareInfo& h);

// Implemented in probe_gpu_cuda.cpp (CUDA builds) or probe_gpu_none.cpp.
std::optional<GpuInfo> probe_gpu(std::string* why_absent);
std::string cuda_runtime_version();  // "" without CUDA

}  // namespace claimcheck
