#include "records.h"
namespace claimcheck {
std::string torch_version() { return ""; }
std::string torch_config() { return ""; }
}  // namespace claimcheck
