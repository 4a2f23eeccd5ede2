// The roofline's answer key: the theoretical peak from what the CPU says it is, and the knee of a sweep.
#include "claimcheck/ref/roofline.h"

#include <sched.h>

#include <algorithm>
#include <set>
#include <utility>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace claimcheck::ref {

namespace {
std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

CpuIdentity read_cpu_identity() {
  CpuIdentity c;
  std::ifstream in("/proc/cpuinfo");
  double mhz = 0;
  for (std::string line; std::getline(in, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (!c.vendor.empty()) break;  // the first processor's block is enough
      continue;
    }
    const std::string key = trim(line.substr(0, colon)), val = trim(line.substr(colon + 1));
    if (key == "vendor_id") c.vendor = val;
    else if (key == "cpu family") c.family = std::atoi(val.c_str());
    else if (key == "model") c.model = std::atoi(val.c_str());
    else if (key == "model name") c.model_name = val;
    else if (key == "cpu MHz") mhz = std::atof(val.c_str());
  }
  std::ifstream fmax("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (fmax >> khz && khz > 0) {
    c.clock_hz = khz * 1e3;
    c.clock_source = "cpufreq cpuinfo_max_freq";
  } else if (mhz > 0) {
    c.clock_hz = mhz * 1e6;
    c.clock_source = "/proc/cpuinfo cpu MHz (no cpufreq in this machine: a VM's nominal clock)";
  }
  return c;
}

FmaUnits fma_units(const CpuIdentity& cpu, const std::vector<std::string>& isa, const std::filesystem::path& table) {
  std::ifstream in(table);
  if (!in) throw std::runtime_error(table.string() + ": field '(file)': cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw std::runtime_error(table.string() + ": field '(json)': " + e.what());
  }
  if (!j.contains("rules") || !j["rules"].is_array())
    throw std::runtime_error(table.string() + ": field 'rules': expected a list");
  for (std::size_t i = 0; i < j["rules"].size(); ++i) {
    const auto& r = j["rules"][i];
    const std::string where = table.string() + ": field 'rules[" + std::to_string(i) + "]";
    for (const char* k : {"vendor", "isa", "why"})
      if (r.contains(k) && !r[k].is_string()) throw std::runtime_error(where + "." + k + "': expected a string");
    for (const char* k : {"family_min", "model_min"})
      if (r.contains(k) && !r[k].is_number_integer()) throw std::runtime_error(where + "." + k + "': expected an integer");
    if (r.contains("vendor") && r["vendor"].get<std::string>() != cpu.vendor) continue;
    if (r.contains("family_min") && cpu.family < r["family_min"].get<int>()) continue;
    if (r.contains("model_min") && cpu.model < r["model_min"].get<int>()) continue;
    if (r.contains("isa") && std::find(isa.begin(), isa.end(), r["isa"].get<std::string>()) == isa.end()) continue;
    if (!r.contains("fma_units") || !r["fma_units"].is_number_integer() || r["fma_units"].get<int>() < 1)
      throw std::runtime_error(where + ".fma_units': expected a positive integer");
    if (!r.contains("vector_bits") || !r["vector_bits"].is_number_integer() || r["vector_bits"].get<int>() < 32)
      throw std::runtime_error(where + ".vector_bits': expected an integer >= 32");
    return {r["fma_units"].get<int>(), r["vector_bits"].get<int>(), r.value("why", "")};
  }
  throw std::runtime_error(table.string() + ": field 'rules': no rule matches " + cpu.vendor + " family " +
                           std::to_string(cpu.family));
}

int usable_physical_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  std::set<std::pair<int, int>> cores;  // (package, core) of each usable CPU: SMT siblings count once
  int cpus = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &set)) continue;
    ++cpus;
    const std::string dir = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::ifstream pk(dir + "physical_package_id"), co(dir + "core_id");
    int p = 0, k = c;
    if (!(pk >> p)) p = 0;
    if (!(co >> k)) k = c;
    cores.insert({p, k});
  }
  return cores.empty() ? std::max(1, cpus) : static_cast<int>(cores.size());
}

double theoretical_peak_flops(int cores, double clock_hz, const FmaUnits& u, int isa_vector_bits) {
  const int lanes = std::min(u.vector_bits, isa_vector_bits) / 32;
  return static_cast<double>(cores) * clock_hz * u.units * lanes * 2.0;
}

Knee sweep_knee(const std::vector<int>& batches, const std::vector<double>& step_seconds) {
  if (batches.size() < 2 || batches.size() != step_seconds.size())
    throw std::invalid_argument("sweep_knee: need at least two (batch, time) points");
  for (std::size_t i = 0; i < batches.size(); ++i)
    if (batches[i] < 1 || (i > 0 && batches[i] <= batches[i - 1]) || !(step_seconds[i] > 0))
      throw std::invalid_argument("sweep_knee: batches must ascend from 1 and every time be positive");
  Knee k;
  k.floor_seconds = step_seconds.front();
  k.roof_seconds_per_token = step_seconds.back() / batches.back();
  for (std::size_t i = 0; i < batches.size(); ++i)
    k.roof_seconds_per_token = std::min(k.roof_seconds_per_token, step_seconds[i] / batches[i]);
  k.batch = k.floor_seconds / k.roof_seconds_per_token;
  return k;
}

}  // namespace claimcheck::ref
