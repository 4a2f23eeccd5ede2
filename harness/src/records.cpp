#include "records.h"

#include <link.h>
#include <sys/utsname.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "claimcheck/base/process.h"
#include "claimcheck/base/sha256.h"
#include "claimcheck/io.h"

#ifndef CLAIMCHECK_BUILD_TYPE
#define CLAIMCHECK_BUILD_TYPE "unknown"
#endif

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

std::optional<std::string> run_command(const std::vector<std::string>& argv) {
  ProcessResult p = run_process(argv);
  if (!p.started || p.exit_code != 0) return std::nullopt;
  std::string out = std::move(p.out);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string tree_hash(const fs::path& root, const std::vector<fs::path>& dirs) {
  std::vector<fs::path> files;
  for (const auto& d : dirs) {
    const fs::path abs = d.is_absolute() ? d : root / d;
    if (!fs::exists(abs)) continue;
    if (fs::is_regular_file(abs)) {
      files.push_back(abs);
      continue;
    }
    for (const auto& e : fs::recursive_directory_iterator(abs))
      if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  Sha256 h;
  for (const auto& f : files) {
    // Files in the checkout by their path in it; others (the fortunes corpus) by their absolute path.
    const std::string rel = fs::relative(f, root).generic_string();
    h.update(rel.rfind("..", 0) == 0 ? f.generic_string() : rel);
    h.update("\0", 1);
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    h.update(ss.str());
    h.update("\0", 1);
  }
  return h.hex();
}

namespace {
int collect_blas(struct dl_phdr_info* info, size_t, void* data) {
  auto* out = static_cast<std::set<std::string>*>(data);
  std::string name = info->dlpi_name ? info->dlpi_name : "";
  if (name.find("blas") != std::string::npos || name.find("mkl") != std::string::npos) {
    std::error_code ec;
    fs::path real = fs::canonical(name, ec);
    out->insert(ec ? name : real.string());
  }
  return 0;
}
}  // namespace

json environment_record() {
  json env;
  env["claimcheck_version"] = CLAIMCHECK_VERSION;
  env["compiler"] = std::string(
#if defined(__clang__)
                        "clang "
#elif defined(__GNUC__)
                        "g++ "
#endif
                        ) +
                    __VERSION__;
  env["cxx_standard"] = static_cast<long>(__cplusplus);
  env["build_type"] = CLAIMCHECK_BUILD_TYPE;
  const std::string tv = torch_version();
  if (tv.empty()) {
    env["libtorch"] = "not built with LibTorch";
  } else if (!torch_info_loaded()) {
    // No check of this run used LibTorch: its module (and LibTorch) stayed unloaded; the version is the build's.
    env["libtorch"] = {{"version", tv}, {"loaded", "no: no check of this run uses LibTorch (module.h)"}};
  } else {
    // at::show_config(): compiler, BLAS (MKL / OpenBLAS), oneDNN, OpenMP, CPU capability, CUDA, as lines.
    const std::string cfg_text = torch_config();
    json lines = json::array();
    std::istringstream cfg(cfg_text);
    for (std::string l; std::getline(cfg, l);) {
      const auto b = l.find_first_not_of(" -");
      if (b != std::string::npos) lines.push_back(l.substr(b));
    }
    // The BLAS and oneDNN LibTorch computes with: a pip wheel links MKL and oneDNN statically, so they appear in
    // its build settings (BLAS_INFO=mkl) rather than among the loaded libraries.
    json settings = json::object();
    for (const char* key : {"BLAS_INFO", "LAPACK_INFO", "USE_MKLDNN", "USE_OPENMP", "CUDA_VERSION"}) {
      const auto at = cfg_text.find(std::string(key) + "=");
      if (at == std::string::npos) continue;
      const auto from = at + std::string(key).size() + 1;
      settings[key] = cfg_text.substr(from, cfg_text.find_first_of(", \n", from) - from);
    }
    env["libtorch"] = {{"version", tv}, {"settings", settings}, {"config", lines}};
    // One line of what computes on the CPU: LibTorch's BLAS, oneDNN and the CPU capability it dispatches to.
    std::vector<std::string> math;
    for (const auto& l : lines) {
      const std::string t = l.get<std::string>();
      if (t.find("Math Kernel Library Version") != std::string::npos) {
        const auto v = t.find("Version ");
        math.push_back("MKL " + t.substr(v + 8, t.find_first_of(" -", v + 8) - v - 8));
      } else if (t.rfind("Intel(R) MKL-DNN ", 0) == 0 || t.rfind("oneDNN ", 0) == 0) {
        const auto v = t.find(" v");
        if (v != std::string::npos) math.push_back("oneDNN " + t.substr(v + 1, t.find(' ', v + 1) - v - 1));
      } else if (t.rfind("CPU capability usage: ", 0) == 0) {
        math.push_back("ATen CPU capability " + t.substr(22));
      } else if (t.rfind("OpenBLAS", 0) == 0) {
        math.push_back(t);
      }
    }
    if (settings.contains("BLAS_INFO"))
      math.insert(math.begin(), "BLAS_INFO=" + settings["BLAS_INFO"].get<std::string>());
    if (!math.empty()) {
      std::string line;
      for (const auto& m : math) line += (line.empty() ? "" : ", ") + m;
      env["cpu_math"] = "LibTorch: " + line + " (linked into libtorch_cpu)";
    }
  }
  // The BLAS libraries mapped into the process, the CPU's apart from the GPU's: cuBLAS is mapped wherever the
  // build links CUDA, and computes nothing on a run without a GPU.
  std::set<std::string> blas;
  dl_iterate_phdr(collect_blas, &blas);
  std::vector<std::string> cpu_blas, gpu_blas;
  for (const auto& b : blas) (b.find("cublas") != std::string::npos ? gpu_blas : cpu_blas).push_back(b);
  env["blas_loaded"] =
      cpu_blas.empty()
          ? json("none loaded as a separate library" +
                 std::string(env.contains("cpu_math") ? ": see cpu_math" : " (see libtorch.settings.BLAS_INFO)"))
          : json(cpu_blas);
  if (!gpu_blas.empty()) env["gpu_blas_mapped"] = gpu_blas;
  const std::string cv = cuda_runtime_version();
  env["cuda_runtime"] = cv.empty() ? json("not built with CUDA") : json(cv);
#ifdef CLAIMCHECK_CUDA_COMPILER_VERSION
  env["nvcc"] = CLAIMCHECK_CUDA_COMPILER_VERSION;
#endif
  // The interpreter that runs the drivers, and the torch and numpy it imports (the build's LibTorch is its torch).
  const std::string py = python_interpreter();
  // importlib.metadata reads the installed versions without importing torch (seconds) or numpy.
  auto pv = run_command({py, "-c",
                         "import sys, importlib.metadata as m\n"
                         "def v(p):\n try: return m.version(p)\n except Exception: return \"-\"\n"
                         "print(sys.version.split()[0], v(\"torch\"), v(\"numpy\"))"});
  if (pv) {
    std::istringstream ps(*pv);
    std::string version, torch_v, numpy_v;
    ps >> version >> torch_v >> numpy_v;
    env["python"] = {{"interpreter", py},
                     {"version", version},
                     {"torch", torch_v == "-" ? json(nullptr) : json(torch_v)},
                     {"numpy", numpy_v == "-" ? json(nullptr) : json(numpy_v)}};
  } else {
    env["python"] = {{"interpreter", py}, {"version", nullptr}, {"error", "not found or does not run"}};
  }
  struct utsname u {};
  if (uname(&u) == 0) env["os"] = std::string(u.sysname) + " " + u.release + " " + u.machine;
  return env;
}

namespace {
const char* const kFortunes = "/usr/share/games/fortunes";
}  // namespace

json build_records(const RecordInputs& in) {
  json r;
  auto commit = run_command({"git", "-C", in.root.string(), "rev-parse", "HEAD"});
  if (commit) {
    auto dirty = run_command({"git", "-C", in.root.string(), "status", "--porcelain", "--untracked-files=no"});
    // (A planted fault records the commit abbreviated, as `git describe` would: no longer a name of the tree.)
    const bool short_sha = in.run_config.value("planted_fault", "") == "records_short_commit";
    r["commit"] = {{"sha", short_sha ? commit->substr(0, 7) : *commit}, {"dirty", dirty && !dirty->empty()}};
  } else {
    r["commit"] = nullptr;  // not a git checkout: the record is missing, and ch06.seven_records says so
  }
  // The data the checks read: expected values, the shipped configs, specs and conversations, and the
  // text corpus of chapter 3 (Debian's fortunes) where it is installed.
  std::vector<fs::path> data{in.expected_dir, "reference/data"};
  const std::string exp_rel = fs::relative(in.expected_dir, in.root).generic_string();
  json covers = {exp_rel.rfind("..", 0) == 0 ? in.expected_dir.generic_string() : exp_rel, "reference/data"};
  if (fs::is_directory(kFortunes)) {
    data.push_back(kFortunes);
    covers.push_back(kFortunes);
  }
  r["data_revision"] = {{"sha256", tree_hash(in.root, data)}, {"covers", covers}};
  r["config"] = in.run_config;
  r["environment"] = environment_record();
  // (A planted fault records the default seed, not the run's: a run given --seed would not be reproduced.)
  r["seed"] = in.run_config.value("planted_fault", "") == "records_default_seed" ? std::uint64_t{0} : in.seed;
  r["hardware"] = in.hardware ? to_json(*in.hardware) : json(nullptr);
  r["logs"] = in.logs;
  return r;
}

int count_complete_records(const json& records, std::vector<std::string>* missing) {
  int n = 0;
  for (const auto& name : record_names()) {
    bool ok = records.is_object() && records.contains(name);
    if (ok) {
      const json& v = records.at(name);
      ok = !(v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_object() && v.empty()) ||
             (v.is_array() && v.empty()));
    }
    if (ok)
      ++n;
    else if (missing)
      missing->push_back(name);
  }
  return n;
}

}  // namespace claimcheck
