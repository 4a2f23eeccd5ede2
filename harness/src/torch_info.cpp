// LibTorch facts for the environment record, compiled into the LibTorch checks module (module.h): loading it
// hands them to the harness. Deliberately light headers: <torch/torch.h> stays out of the harness.
#include <ATen/Version.h>
#include <torch/version.h>

#include "module.h"

namespace {
std::string version() { return TORCH_VERSION; }
std::string config() { return at::show_config(); }
[[maybe_unused]] const bool registered = (claimcheck::detail::set_torch_info(&version, &config), true);
}  // namespace
