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

namespace {
const std::vector<ref::ModelConfig>& configs() {
  static const std::vector<ref::ModelConfig> c = [] {
    std::vector<ref::ModelConfig> out;
    for (const char* n : {"llama-3-8b", "qwen2.5-0.5b", "llama-scaled-ch04"})
      out.push_back(
          ref::load_model_config(std::string(CLAIMCHECK_SOURCE_DIR) + "/reference/data/configs/" + n + ".json"));
    return out;
  }();
  return c;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  configs();
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
  for (const auto& c : configs())
    fuzz::need_positive("quantized_weight_bytes(" + c.file + ")", ref::quantized_weight_bytes(c, q));
  return 0;
}
