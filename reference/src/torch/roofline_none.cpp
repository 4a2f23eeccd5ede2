// Built without LibTorch: no library read to hold the probe against.
#include <stdexcept>

#include "claimcheck/ref/roofline.h"

namespace claimcheck::ref {
double torch_read_bandwidth(std::size_t, int, int) { throw std::runtime_error("not built with LibTorch"); }
}  // namespace claimcheck::ref
