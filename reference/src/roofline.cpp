// The roofline's answer key: the theoretical peak from what the CPU says it is, and the knee of a sweep.
#include "claimcheck/ref/roofline.h"

#include "fault.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>
#ifdef CLAIMCHECK_HAS_LIBCPUINFO
#include <cpuinfo.h>  // its types only: the library is opened at run time
#include <dlfcn.h>
#endif

namespace claimcheck::ref {

namespace {
std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}
}  // namespace

bool CpuIdentity::has(const std::string& flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

CpuIdentity parse_cpuinfo(std::istream& in, const std::string& where) {
  CpuIdentity c;
  double mhz = 0;
  bool any = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] == '#') continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) {
      if (any && trim(line).empty()) break;  // the first processor's block is enough
      continue;
    }
    const std::string key = trim(line.substr(0, colon)), val = trim(line.substr(colon + 1));
    any = any || key == "processor";
    if (key == "vendor_id")
      c.vendor = val;
    else if (key == "cpu family")
      c.family = std::atoi(val.c_str());
    else if (key == "model")
      c.model = std::atoi(val.c_str());
    else if (key == "model name")
      c.model_name = val;
    else if (key == "cpu MHz")
      mhz = std::atof(val.c_str());
    else if (key == "CPU implementer")
      c.implementer = val;
    else if (key == "CPU part")
      c.part = val;
    else if (key == "flags" || key == "Features") {
      std::istringstream fs(val);
      for (std::string f; fs >> f;) c.flags.push_back(f);
    }
  }
  if (c.vendor.empty() && !c.implementer.empty()) c.vendor = "ARM";
  if (c.vendor.empty())
    throw std::runtime_error(where +
                             ": field 'vendor_id': no CPU is described (neither vendor_id nor CPU implementer)");
  if (mhz > 0) {
    c.clock_hz = mhz * 1e6;
    c.clock_source = "/proc/cpuinfo cpu MHz (no cpufreq in this machine: a VM's nominal clock)";
  }
  return c;
}

namespace {
// libcpuinfo's name for the first core's microarchitecture: the enum cpuinfo_uarch_NAME as NAME, for the cores the
// table can use (those whose name tells the FLOP per cycle); "" where the library is absent or does not know it.
std::string library_uarch_name() {
#ifdef CLAIMCHECK_HAS_LIBCPUINFO
  // Opened in a link-map namespace of its own (dlmopen), never linked: LibTorch's libc10 exports a cpuinfo of its
  // own. Linked, the system libcpuinfo.so interposed on it (ATen misread the CPU: its SDPA ran 2.7-3.2x slower here,
  // every LibTorch claim with it); merely dlopen'ed, its one relocation against its own cpuinfo_isa bound to libc10's
  // and its initialisation wrote its older layout there. In a new namespace it sees only its own symbols. Asked once
  // per process.
  static const std::string name = [] {
    void* h = dlmopen(LM_ID_NEWLM, "libcpuinfo.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!h) return std::string();
    auto init = reinterpret_cast<bool (*)()>(dlsym(h, "cpuinfo_initialize"));
    auto count = reinterpret_cast<std::uint32_t (*)()>(dlsym(h, "cpuinfo_get_cores_count"));
    auto core = reinterpret_cast<const cpuinfo_core* (*)(std::uint32_t)>(dlsym(h, "cpuinfo_get_core"));
    if (!init || !count || !core || !init() || count() == 0) return std::string();
    switch (static_cast<std::uint32_t>(core(0)->uarch)) {
      case 0x00100208:
        return std::string("haswell");  // the enum's values, stable across the library's versions
      case 0x00100209:
        return std::string("broadwell");
      case 0x0010020A:
        return std::string("sky_lake");
      case 0x0010020C:
        return std::string("sunny_cove");
      case 0x00200109:
        return std::string("zen");
      case 0x0020010A:
        return std::string("zen2");
      case 0x0020010B:
        return std::string("zen3");
      case 0x0020010C:
        return std::string("zen4");
      case 0x00300400:
        return std::string("neoverse_n1");
      case 0x00300402:
        return std::string("neoverse_v1");
      case 0x00300403:
        return std::string("neoverse_n2");
      case 0x00300404:
        return std::string("neoverse_v2");
      default:
        return std::string();
    }
  }();
  return name;
#else
  return "";
#endif
}
}  // namespace

CpuIdentity read_cpu_identity() {
  std::ifstream in("/proc/cpuinfo");
  CpuIdentity c = parse_cpuinfo(in, "/proc/cpuinfo");
  c.library_uarch = library_uarch_name();
  std::ifstream fmax("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double khz = 0;
  if (fmax >> khz && khz > 0) {
    c.clock_hz = khz * 1e3;
    c.clock_source = "cpufreq cpuinfo_max_freq";
  }
  return c;
}

namespace {
// "0x10-0x1f", "0x47", "207": whether `model` is in it (decimal or hex, a single value or a range).
bool in_model_range(const std::string& spec, int model, const std::string& where) {
  auto num = [&](const std::string& t) {
    std::size_t used = 0;
    long v = -1;
    try {
      v = std::stol(t, &used, 0);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t.size() || v < 0)
      throw std::runtime_error(where + "': expected a model or a range of models, got '" + spec + "'");
    return v;
  };
  const auto dash = spec.find('-');
  if (dash == std::string::npos) return num(spec) == model;
  return model >= num(spec.substr(0, dash)) && model <= num(spec.substr(dash + 1));
}
const nlohmann::json* string_list(const nlohmann::json& r, const char* key, const std::string& where) {
  if (!r.contains(key)) return nullptr;
  const auto& v = r[key];
  bool ok = v.is_array() && !v.empty();
  for (const auto& x : ok ? v : nlohmann::json::array()) ok = ok && x.is_string();
  if (!ok) throw std::runtime_error(where + "." + key + "': expected a non-empty list of strings");
  return &v;
}
double positive_number(const nlohmann::json& v, const std::string& where) {
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    throw std::runtime_error(where + "': expected a positive number, got " + v.dump());
  return v.get<double>();
}
}  // namespace

Microarch identify_microarch(const CpuIdentity& cpu, const std::filesystem::path& table) {
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
  static const std::set<std::string> keys = {"name",         "vendor",      "family",
                                             "models",       "implementer", "parts",
                                             "isa",          "model_name",  "fp32_flop_per_cycle",
                                             "bf16_dot",     "amx_bf16",    "why",
                                             "cpuinfo_uarch"};
  Microarch by_numbers, by_library;
  for (std::size_t i = 0; i < j["rules"].size(); ++i) {
    const auto& r = j["rules"][i];
    const std::string where = table.string() + ": field 'rules[" + std::to_string(i) + "]";
    if (!r.is_object()) throw std::runtime_error(where + "': expected an object");
    for (const auto& [k, v] : r.items())
      if (!keys.count(k)) throw std::runtime_error(where + "." + k + "': unknown key");
    for (const char* k : {"name", "vendor", "implementer", "isa", "model_name", "why"})
      if (r.contains(k) && !r[k].is_string()) throw std::runtime_error(where + "." + k + "': expected a string");
    if (!r.contains("name") || r["name"].get<std::string>().empty())
      throw std::runtime_error(where + ".name': expected the microarchitecture's name");
    if (r.contains("family") && !r["family"].is_number_integer())
      throw std::runtime_error(where + ".family': expected an integer");
    const nlohmann::json* models = string_list(r, "models", where);
    const nlohmann::json* parts = string_list(r, "parts", where);
    const nlohmann::json* library_names = string_list(r, "cpuinfo_uarch", where);
    // Every rule's figures are checked, matching or not: a typo in a rule for another CPU is still a typo.
    Microarch m;
    m.name = r["name"].get<std::string>();
    m.why = r.value("why", "");
    if (!r.contains("fp32_flop_per_cycle") || !r["fp32_flop_per_cycle"].is_object() || r["fp32_flop_per_cycle"].empty())
      throw std::runtime_error(where + ".fp32_flop_per_cycle': expected an object of ISA -> list of FLOP per cycle");
    for (const auto& [isa, figs] : r["fp32_flop_per_cycle"].items()) {
      const std::string w = where + ".fp32_flop_per_cycle." + isa;
      if (!figs.is_array() || figs.empty()) throw std::runtime_error(w + "': expected a non-empty list of numbers");
      for (std::size_t f = 0; f < figs.size(); ++f)
        m.fp32_flop_per_cycle[isa].push_back(positive_number(figs[f], w + "[" + std::to_string(f) + "]"));
    }
    if (r.contains("bf16_dot")) {
      const auto& b = r["bf16_dot"];
      if (!b.is_object() || !b.contains("flop_per_cycle"))
        throw std::runtime_error(where + ".bf16_dot': expected {\"flop_per_cycle\": N, \"lower_bound\": bool}");
      m.bf16_dot_flop_per_cycle = positive_number(b["flop_per_cycle"], where + ".bf16_dot.flop_per_cycle");
      if (b.contains("lower_bound") && !b["lower_bound"].is_boolean())
        throw std::runtime_error(where + ".bf16_dot.lower_bound': expected true or false");
      m.bf16_dot_lower_bound = b.value("lower_bound", false);
    }
    if (r.contains("amx_bf16")) {
      const auto& b = r["amx_bf16"];
      if (!b.is_object() || !b.contains("flop_per_cycle"))
        throw std::runtime_error(where + ".amx_bf16': expected {\"flop_per_cycle\": N}");
      m.amx_bf16_flop_per_cycle = positive_number(b["flop_per_cycle"], where + ".amx_bf16.flop_per_cycle");
    }
    std::regex name_re;
    if (r.contains("model_name")) {
      try {
        name_re = std::regex(r["model_name"].get<std::string>());
      } catch (const std::regex_error& e) {
        throw std::runtime_error(where + ".model_name': not a regular expression (" + e.what() + ")");
      }
    }
    bool match = r.contains("vendor") && r["vendor"].get<std::string>() == cpu.vendor;
    match = match && (!r.contains("family") || r["family"].get<int>() == cpu.family);
    if (models) {  // every range parsed, matching or not
      bool any = false;
      for (const auto& spec : *models)
        any = in_model_range(spec.get<std::string>(), cpu.model, where + ".models") || any;
      match = match && any;
    }
    match = match && (!r.contains("implementer") || r["implementer"].get<std::string>() == cpu.implementer);
    if (match && parts) {
      bool any = false;
      for (const auto& p : *parts) any = any || p.get<std::string>() == cpu.part;
      match = any;
    }
    match = match && (!r.contains("isa") || cpu.has(r["isa"].get<std::string>()));
    match = match && (!r.contains("model_name") || std::regex_search(cpu.model_name, name_re));
    // (A planted fault keeps the last rule that names the CPU, not the first: the table's order is its precedence.)
    if (match && (!by_numbers.known() || answer_key_fault("ledger_uarch_last_rule"))) {
      by_numbers = m;
      by_numbers.identified_by = "table";
    }
    // libcpuinfo's name: only with the rule's vendor (or implementer) and ISA condition, only for a CPU no rule
    // names by its numbers (the library's own table lags new cores and calls every family-25 core "zen3" in Debian
    // 12's version, a Zen 4 among them).
    bool named = library_names && !cpu.library_uarch.empty() &&
                 ((r.contains("vendor") && r["vendor"].get<std::string>() == cpu.vendor) ||
                  (r.contains("implementer") && r["implementer"].get<std::string>() == cpu.implementer)) &&
                 (!r.contains("isa") || cpu.has(r["isa"].get<std::string>()));
    if (named) {
      bool any = false;
      for (const auto& n : *library_names) any = any || n.get<std::string>() == cpu.library_uarch;
      named = any;
    }
    if (named && !by_library.known()) {
      by_library = m;
      by_library.identified_by = "libcpuinfo";
    }
  }
  if (by_numbers.known()) return by_numbers;
  return by_library;  // unknown ("") where neither names this CPU
}

double nearest_figure(const std::vector<double>& figures, double measured) {
  if (!(measured > 0)) return figures.empty() ? 0 : *std::max_element(figures.begin(), figures.end());
  double best = 0;
  for (double f : figures)
    if (best == 0 || std::abs(std::log(measured / f)) < std::abs(std::log(measured / best))) best = f;
  return best;
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

std::size_t last_level_cache_bytes_sysfs(const std::filesystem::path& cache_dir) {
  int top = 0;
  std::size_t bytes = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(cache_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("index", 0) != 0) continue;
    std::ifstream lvl(entry.path() / "level"), sz(entry.path() / "size"), type(entry.path() / "type");
    int level = 0;
    std::string size, kind;
    if (!(lvl >> level) || !(sz >> size) || size.empty()) continue;
    if ((type >> kind) && kind == "Instruction") continue;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(size.c_str(), &end, 10);
    const std::string unit(end ? end : "");
    const std::size_t b = static_cast<std::size_t>(n) * (unit == "K" ? 1024ULL : unit == "M" ? 1048576ULL : 1ULL);
    if (level > top) top = level, bytes = b;
  }
  return bytes;
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
