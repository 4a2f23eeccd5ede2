// The hardware probe: what the machine at hand is, for the report's hardware record
// and for expectations re-derived on this machine.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/roofline.h"

namespace claimcheck {

struct GpuInfo {
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  std::uint64_t memory_bytes = 0;
  int memory_clock_khz = 0;  // peak memory clock
  int bus_width_bits = 0;
  double theoretical_bandwidth = 0;  // bytes/s = 2 (DDR) x clock x bus width / 8
};

struct HardwareInfo {
  std::string cpu_model;
  std::string cpu_vendor;                    // vendor_id ("GenuineIntel", "AuthenticAMD"), "ARM" on Arm
  int cpu_family = 0, cpu_model_number = 0;  // CPUID family and model (x86)
  std::string microarchitecture;     // from the answer key's table (reference/data/hardware/cpu-uarch.json); "" unknown
  std::string microarchitecture_by;  // "table" (by CPUID's numbers) or "libcpuinfo" (by the library's name); "" unknown
  std::string libcpuinfo_uarch;      // libcpuinfo's name for the core ("zen3"); "" where absent or unknown to it
  int logical_cpus = 0;              // online
  int usable_cpus = 0;               // in this process's affinity mask
  std::vector<std::string> isa;      // the flags that matter here: avx2, avx512f, avx512_bf16, amx_bf16, ...
  std::uint64_t memory_bytes = 0;
  std::optional<GpuInfo> gpu;
  std::string gpu_absent_reason;  // why there is no GPU (not built with CUDA, no device, ...)
  // An NVIDIA GPU the kernel driver lists on this host ("NVIDIA H200"), whether or not this build can use it: where
  // it cannot, the rows measured on the CPU in its place say so. "" when the driver lists none.
  std::string gpu_on_host;
  // Why this process's CPU is emulated ("qemu-user: ..."), "" on a real CPU (emulation_reason). Under emulation the
  // CPU fields above describe what /proc/cpuinfo says (the host's CPU, or QEMU's made-up one), and a time measures
  // the emulator, not a core of the build's architecture.
  std::string emulated;

  bool has_isa(const std::string& flag) const;
};

// The flags HardwareInfo::isa can hold, the vocabulary of an expected file's `isa:FLAG` (expected/schema.json's
// `when` pattern lists the same; a flag outside it would read false on every machine).
const std::vector<std::string>& probed_isa_flags();

// The architecture this program was built for: "x86_64", "aarch64", or "" for another.
std::string build_architecture();
// Why a program built for `build_arch` that reads `cpuinfo` (the parsed /proc/cpuinfo) runs on an emulated CPU, ""
// when nothing says so. qemu-user passes the host's /proc/cpuinfo through (7.2: an aarch64 program on an x86-64 host
// reads the host's vendor_id and flags, no "CPU implementer"); from 8.1 on it writes its own for Arm guests (its
// "max" CPU: implementer 0x00, part 0x051, and a "model name: ARMv8 Processor rev N (v8l)" line that an arm64 kernel
// shows only to 32-bit processes).
std::string emulation_reason(const ref::CpuIdentity& cpuinfo, const std::string& build_arch);

// `uarch_table`: the microarchitecture table to name the CPU with (none: the name is left empty).
HardwareInfo probe_hardware(const std::filesystem::path& uarch_table = {});
nlohmann::json to_json(const HardwareInfo& h);

// Implemented in probe_gpu_cuda.cpp (CUDA builds) or probe_gpu_none.cpp.
std::optional<GpuInfo> probe_gpu(std::string* why_absent);
std::string cuda_runtime_version();  // "" without CUDA

}  // namespace claimcheck
