#include "probe.h"

#include "claimcheck/ref/roofline.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace claimcheck {

bool HardwareInfo::has_isa(const std::string& flag) const {
  return std::find(isa.begin(), isa.end(), flag) != isa.end();
}

// The model of the first GPU the NVIDIA kernel driver lists (/proc/driver/nvidia/gpus/*/information), "" for none.
std::string nvidia_gpu_on_host() {
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    std::ifstream info(d.path() / "information");
    for (std::string line; std::getline(info, line);)
      if (line.rfind("Model:", 0) == 0) {
        const auto a = line.find_first_not_of(" \t", 6);
        return a == std::string::npos ? "an NVIDIA GPU" : line.substr(a);
      }
    return "an NVIDIA GPU";
  }
  return "";
}

std::string build_architecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#else
  return "";
#endif
}

std::string emulation_reason(const ref::CpuIdentity& c, const std::string& build_arch) {
  const bool arm = !c.implementer.empty();
  if (c.vendor.empty() || build_arch.empty()) return "";  // nothing described, or an architecture not told apart
  const std::string host = c.model_name.empty() ? c.vendor : c.model_name;
  const std::string tail = ": a time measures the emulator, not a core of the build's architecture";
  if (build_arch == "aarch64" && !arm)
    return "qemu-user: an aarch64 build running on " + host + " (/proc/cpuinfo is the host's: vendor_id " + c.vendor +
           ", no CPU implementer)" + tail;
  if (build_arch == "x86_64" && arm)
    return "an x86-64 build on an Arm CPU (implementer " + c.implementer + ", part " + c.part +
           "): a user-mode emulator (qemu-user, box64, FEX) runs it" + tail;
  if (build_arch == "aarch64" && c.implementer == "0x00" && c.part == "0x051")
    return "qemu: /proc/cpuinfo is QEMU's own (its 'max' CPU: implementer 0x00, reserved for software, part 0x051)" +
           tail;
  if (build_arch == "aarch64" && c.model_name.rfind("ARMv", 0) == 0)
    return "qemu-user: /proc/cpuinfo is QEMU's own (\"model name: " + c.model_name +
           "\", which an arm64 kernel shows only to 32-bit processes)" + tail;
  return "";
}

const std::vector<std::string>& probed_isa_flags() {
  static const std::vector<std::string> flags = {
      "sse4_2",   "avx",      "avx2",        "fma",         "f16c",        "avx512f",  "avx512bw",
      "avx512vl", "avx512dq", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16",
      "amx_int8", "asimd",    "asimddp",     "sve",         "sve2",        "bf16",     "i8mm"};
  return flags;
}

HardwareInfo probe_hardware(const std::filesystem::path& uarch_table) {
  HardwareInfo h;
  ref::CpuIdentity cpu;
  try {
    cpu = ref::read_cpu_identity();
  } catch (const std::exception&) {  // no /proc/cpuinfo (or one that names no CPU): the record says what is known
  }
  h.emulated = emulation_reason(cpu, build_architecture());
  h.cpu_model = cpu.model_name.empty() && !cpu.part.empty() ? cpu.vendor + " part " + cpu.part : cpu.model_name;
  h.cpu_vendor = cpu.vendor;
  h.cpu_family = cpu.family;
  h.cpu_model_number = cpu.model;
  h.libcpuinfo_uarch = cpu.library_uarch;
  if (!uarch_table.empty() && !cpu.vendor.empty()) {
    const ref::Microarch m = ref::identify_microarch(cpu, uarch_table);
    h.microarchitecture = m.name;
    h.microarchitecture_by = m.identified_by;
  }
  for (const std::string& f : probed_isa_flags())
    if (cpu.has(f)) h.isa.push_back(f);
  h.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  h.usable_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : h.logical_cpus;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream ls(line.substr(9));
      std::uint64_t kb = 0;
      ls >> kb;
      h.memory_bytes = kb * 1024;
    }
  }
  h.gpu = probe_gpu(&h.gpu_absent_reason);
  h.gpu_on_host = nvidia_gpu_on_host();
  if (!h.gpu && !h.gpu_on_host.empty())
    h.gpu_absent_reason += "; this host has a GPU (" + h.gpu_on_host +
                           ") that this build does not use: configure with "
                           "the cuda preset to measure it";
  return h;
}

nlohmann::json to_json(const HardwareInfo& h) {
  nlohmann::json j = {
      {"cpu_model", h.cpu_model},
      {"cpu_vendor", h.cpu_vendor},
      {"cpu_family", h.cpu_family},
      {"cpu_model_number", h.cpu_model_number},
      {"microarchitecture", h.microarchitecture.empty() ? nlohmann::json() : nlohmann::json(h.microarchitecture)},
      {"microarchitecture_by",
       h.microarchitecture_by.empty() ? nlohmann::json() : nlohmann::json(h.microarchitecture_by)},
      {"libcpuinfo_uarch", h.libcpuinfo_uarch.empty() ? nlohmann::json() : nlohmann::json(h.libcpuinfo_uarch)},
      {"logical_cpus", h.logical_cpus},
      {"usable_cpus", h.usable_cpus},
      {"isa", h.isa},
      {"memory_bytes", h.memory_bytes}};
  if (h.gpu) {
    const auto& g = *h.gpu;
    j["gpu"] = {{"name", g.name},
                {"sm_count", g.sm_count},
                {"compute_capability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                {"memory_bytes", g.memory_bytes},
                {"memory_clock_khz", g.memory_clock_khz},
                {"bus_width_bits", g.bus_width_bits},
                {"theoretical_bandwidth_bytes_per_s", g.theoretical_bandwidth}};
  } else {
    j["gpu"] = nullptr;
    j["gpu_absent_reason"] = h.gpu_absent_reason;
  }
  if (!h.gpu_on_host.empty()) j["gpu_on_host"] = h.gpu_on_host;
  if (!h.emulated.empty()) j["emulated"] = h.emulated;
  return j;
}

}  // namespace claimcheck
