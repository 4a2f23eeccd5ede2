// Fuzz target: a hardware spec (ref::parse_hardware_spec), then what `claimcheck account` derives from it for the
// shipped configs: ridge point, decode time per token and its rate, prefill time. Expected: a ref::SpecError naming
// the field. A finding: any other exception, a crash, undefined behaviour, or a figure that is not finite or is
// negative for a spec the loader accepted.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "claimcheck/ref/ledger.h"
#include "fuzz_check.h"

using namespace claimcheck;
using fuzz::need_positive;
using fuzz::need_size;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::shipped_configs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ref::HardwareSpec h;
  try {
    h = ref::parse_hardware_spec(std::string(reinterpret_cast<const char*>(data), size), "fuzz/hardware.json");
  } catch (const ref::SpecError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::finding(std::string("parse_hardware_spec threw an untyped exception: ") + e.what());
  }
  need_positive("memory_bytes", h.memory_bytes);
  need_positive("hbm_bandwidth_bytes_per_s", h.bandwidth);
  need_positive("bf16_dense_flops", h.peak_flops);
  need_size("ridge()", h.ridge());
  for (const auto& c : fuzz::shipped_configs()) {
    // As cmd_account computes them (harness/src/cli_account.cpp).
    const double params = static_cast<double>(ref::count_params(c).total());
    const double decode_s = ref::decode_bytes_per_token(c, {}) / h.bandwidth;
    need_size("decode s/token (" + c.file + ")", decode_s);
    need_size("decode token/s (" + c.file + ")", 1 / decode_s);
    for (std::int64_t tokens : {std::int64_t{1}, std::int64_t{4096}, INT64_MAX}) {
      const double pf = ref::prefill_flops(static_cast<std::int64_t>(params), tokens);
      need_size("prefill s (" + c.file + ", T=" + std::to_string(tokens) + ")", pf / h.peak_flops);
    }
  }
  return 0;
}
