// The LibTorch checks module (internal): the checks that use LibTorch live in a MODULE library beside the
// executable (claimcheck_torch_checks.so), loaded with dlopen only when `run` is about to run one of them, so that
// account, list, compare and runs without such a check never load LibTorch (issue 12, point 4).
//
// The executable knows the module's checks from a manifest generated at configure time from their expected files
// (cmake/ClaimcheckTorchModule.cmake): each becomes a registry entry without a function ("stub") that `list`
// shows like any other. Loading the module runs its static registrars into the executable's registry (the
// executable exports its symbols); each registration then fills its stub, and a check the manifest does not
// list, or one it lists that the module lacks, is an error naming the module (a stale build).
#pragma once
#include <string>
#include <vector>

#include "registry.h"

namespace claimcheck {

struct ModuleCheck {
  const char* id;
  const char* file;       // the check's source, as CMake compiles it
  const char* part = "";  // "measured" for a part registered apart from its claim's check
};

// Registers the manifest's checks as stubs; `file_name` is the module's, found beside the executable.
void declare_module(const std::string& file_name, const std::vector<ModuleCheck>& checks);
// Whether `c` is a stub of a module not loaded yet.
bool in_unloaded_module(const CheckInfo& c);
// Loads the module once (for `claim`, named in the error). Throws InputError, one line naming the file.
void load_module(const std::string& claim);
// The module's path (beside /proc/self/exe); "" when no module is declared.
std::string module_path();

namespace detail {
// Called by the module's torch_info.cpp when it is loaded (or linked): LibTorch's version and build settings.
void set_torch_info(std::string (*version)(), std::string (*config)());
}  // namespace detail

}  // namespace claimcheck
