#ifdef CLAIMCHECK_TORCH_MODULE
#include "module.h"
namespace claimcheck {
// Generated at configure time (cmake/ClaimcheckTorchModule.cmake): the checks of the LibTorch checks module.
const std::vector<ModuleCheck>& torch_module_manifest();
}  // namespace claimcheck
#endif

namespace claimcheck {
int cli_main(int argc, char** argv);
}

int main(int argc, char** argv) {
#ifdef CLAIMCHECK_TORCH_MODULE
  // Known by id and requirements, loaded only when `run` runs one of them.
  claimcheck::declare_module(CLAIMCHECK_TORCH_MODULE, claimcheck::torch_module_manifest());
#endif
  return claimcheck::cli_main(argc, argv);
}
