#include "probe.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace claimcheck {

bool HardwareInfo::has_isa(const std::string& flag) const {
  return std::find(isa.begin(), isa.end(), flag) != isa.end();
}

HardwareInfo probe_hardware() {
  HardwareInfo h;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, flags;
  while (std::getline(cpuinfo, line)) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string val = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name" && h.cpu_model.empty()) h.cpu_model = val;
    if (key == "flags" && flags.empty()) flags = val;
  }
  static const char* interesting[] = {"sse4_2",     "avx",         "avx2",     "fma",      "f16c",
                                      "avx512f",    "avx512bw",    "avx512vl", "avx512_vnni", "avx512_bf16",
                                      "avx512_fp16", "amx_tile",   "amx_bf16", "amx_int8"};
  std::istringstream fs(flags);
  std::vector<std::string> all;
  for (std::string f; fs >> f;) all.push_back(f);
  for (const char* f : interesting)
    if (std::find(all.begin(), all.end(), f) != all.end()) h.isa.push_back(f);
  h.logical_cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpu_set_t set;
  h.usable_cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : h.logical_cpus;
  std::ifstream meminfo("/proc/meminfo");
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream ls(line.substr(9));
      std::uint64_t kb = 0;
      ls >> kb;
      h.memory_bytes = kb * 1024;
    }
  }
  h.gpu = probe_gpu(&h.gpu_absent_reason);
  return h;
}

nlohmann::json to_json(const HardwareInfo& h) {
  nlohmann::json j = {{"cpu_model", h.cpu_model},   {"logical_cpus", h.logical_cpus},
                      {"usable_cpus", h.usable_cpus}, {"isa", h.isa},
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
  return j;
}

}  // namespace claimcheck
