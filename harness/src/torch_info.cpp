// LibTorch facts for the environment record. Deliberately light headers:
// <torch/torch.h> stays out of the harness.
#include <ATen/Version.h>
#include <torch/version.h>

#include "records.h"

namespace claimcheck {
std::string torch_version() { return TORCH_VERSION; }
std::string torch_config() { return at::show_config(); }
}  // namespace claimcheck
