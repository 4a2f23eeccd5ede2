// Fuzz target: a quantisation format (ref::parse_quant_format), then its bits per parameter and the weight bytes of
// the shipped configs in it. Expected: a ref::SpecError naming the field. A finding: any other exception, a crash,
// undefined behaviour, or bits or bytes that are not finite and positive for a format the loader accepted.
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "claimcheck/ref/ledger.h"
#include "fuzz_check.h"

using namespace claimcheck;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::shipped_configs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ref::QuantFormat q;
  try {
    q = ref::parse_quant_format(std::string(reinterpret_cast<const char*>(data), size), "fuzz/quant.json");
  } catch (const ref::SpecError&) {
    return 0;
  } catch (const std::exception& e) {
    fuzz::finding(std::string("parse_quant_format threw an untyped exception: ") + e.what());
  }
  fuzz::need_positive("bits", q.bits);
  fuzz::need_positive("bits_per_param()", q.bits_per_param());
  for (const auto& c : fuzz::shipped_configs())
    fuzz::need_positive("quantized_weight_bytes(" + c.file + ")", ref::quantized_weight_bytes(c, q));
  return 0;
}
