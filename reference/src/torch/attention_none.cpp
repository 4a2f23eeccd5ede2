// Built without LibTorch: the library side of chapter 2 is unavailable (its checks skip).
#include <stdexcept>

#include "claimcheck/ref/attention.h"

namespace claimcheck::ref {
namespace {
[[noreturn]] void none() { throw std::runtime_error("not built with LibTorch"); }
}  // namespace
bool torch_available() { return false; }
std::string torch_attention_api() { return "none (not built with LibTorch)"; }
std::string torch_version() { return ""; }
std::string torch_attention_backend(const AttnShape&) { return "none"; }
std::vector<float> torch_attention(const float*, const float*, const float*, const AttnShape&) { none(); }
std::vector<double> torch_attention(const double*, const double*, const double*, const AttnShape&) { none(); }
void torch_set_threads(int) {}
int torch_get_threads() { return 1; }
BroadcastResult torch_broadcast_demo() { none(); }
}  // namespace claimcheck::ref
