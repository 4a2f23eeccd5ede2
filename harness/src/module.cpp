#include "module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "errors.h"
#include "records.h"

namespace claimcheck {
namespace {

struct ModuleState {
  std::string file_name;  // "" when no module is declared
  bool loaded = false;
  std::string (*torch_version)() = nullptr;
  std::string (*torch_config)() = nullptr;
};

ModuleState& state() {
  static ModuleState s;
  return s;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

}  // namespace

void declare_module(const std::string& file_name, const std::vector<ModuleCheck>& checks) {
  state().file_name = file_name;
  for (const auto& m : checks) {
    CheckInfo info;
    info.id = m.id;
    info.file = m.file;
    info.part = m.part;
    info.in_module = true;
    registry().push_back(std::move(info));
  }
}

bool in_unloaded_module(const CheckInfo& c) { return c.in_module && c.fn == nullptr; }

std::string module_path() {
  if (state().file_name.empty()) return "";
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ((ec ? std::filesystem::path(".") : exe.parent_path()) / state().file_name).string();
}

void load_module(const std::string& claim) {
  ModuleState& s = state();
  if (s.loaded) return;
  const std::string path = module_path();
  const std::string what = path + ": the LibTorch checks module (" + claim + " is in it)";
  if (path.empty()) throw InputError("no LibTorch checks module is declared in this build (" + claim + " needs it)");
  auto& reg = registry();
  const std::size_t before = reg.size();
  // RTLD_NOW: an unresolved symbol is reported here, once, not in the middle of a check.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* msg = dlerror();
    std::string err = msg ? one_line(msg) : "dlopen failed";
    if (err.rfind(path + ": ", 0) == 0) err.erase(0, path.size() + 2);  // dlerror names the file too: once is enough
    reg.resize(before);
    throw InputError(what + " cannot be loaded: " + err +
                     " (rebuild the target claimcheck, which builds it beside the executable)");
  }
  // The module's registrars appended their checks: each fills the stub of the same id and part, then goes.
  std::vector<CheckInfo> loaded(std::make_move_iterator(reg.begin() + static_cast<std::ptrdiff_t>(before)),
                                std::make_move_iterator(reg.end()));
  reg.resize(before);
  for (const auto& m : loaded) {
    auto stub = std::find_if(reg.begin(), reg.end(),
                             [&](const CheckInfo& c) { return c.in_module && c.id == m.id && c.part == m.part; });
    if (stub == reg.end() || stub->fn != nullptr)
      throw InputError(
          what + " registers '" + m.id + "' (" + m.file + ":" + std::to_string(m.line) +
          "), which the executable's manifest does not list: a stale build; rebuild the target claimcheck");
    stub->fn = m.fn;
    stub->fn_name = m.fn_name;
    stub->file = m.file;
    stub->line = m.line;
    stub->derives = m.derives;
  }
  for (const auto& c : reg)
    if (in_unloaded_module(c))
      throw InputError(what + " does not register '" + c.id + "', which the executable's manifest lists (" + c.file +
                       "): a stale build; rebuild the target claimcheck");
  s.loaded = true;  // the handle stays open for the whole run
}

namespace detail {
void set_torch_info(std::string (*version)(), std::string (*config)()) {
  state().torch_version = version;
  state().torch_config = config;
}
}  // namespace detail

// records.h: LibTorch's own figures once its code is in the process (the module loaded, or linked as in the unit
// tests); before that, the version this build was configured with, so that `list` and the requirement check know
// LibTorch is there without loading it.
std::string torch_version() {
  if (state().torch_version) return state().torch_version();
#ifdef CLAIMCHECK_TORCH_BUILD_VERSION
  return CLAIMCHECK_TORCH_BUILD_VERSION;
#else
  return "";
#endif
}

std::string torch_config() { return state().torch_config ? state().torch_config() : ""; }

bool torch_info_loaded() { return state().torch_config != nullptr; }

}  // namespace claimcheck
