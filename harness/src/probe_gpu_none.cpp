#include "probe.h"

namespace claimcheck {
std::optional<GpuInfo> probe_gpu(std::string* why) {
  *why = "not built with CUDA (nvcc was not found at configure time)";
  return std::nullopt;
}
std::string cuda_runtime_version() { return ""; }
}  // namespace claimcheck
