// What every fuzz target asserts, and how it reports a finding: a message on stderr, then abort(), which libFuzzer
// records as a crash with the input that caused it (ci/sanitize.sh prints the reproducer).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "claimcheck/ref/ledger.h"

namespace claimcheck::fuzz {

// The shipped configs a spec or format is applied to (loaded once, in LLVMFuzzerInitialize).
inline const std::vector<ref::ModelConfig>& shipped_configs() {
  static const std::vector<ref::ModelConfig> c = [] {
    std::vector<ref::ModelConfig> out;
    for (const char* n : {"llama-3-8b", "qwen2.5-0.5b", "llama-scaled-ch04"})
      out.push_back(
          ref::load_model_config(std::string(CLAIMCHECK_SOURCE_DIR) + "/reference/data/configs/" + n + ".json"));
    return out;
  }();
  return c;
}

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "claimcheck fuzz: FINDING: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

// A size the callers of a loader compute and print (bytes, parameters, FLOPs, seconds) is finite and not negative.
inline void need_size(const std::string& what, double v) {
  if (!std::isfinite(v) || v < 0) finding(what + " = " + std::to_string(v) + ": not a finite non-negative size");
}
inline void need_size(const std::string& what, std::int64_t v) {
  if (v < 0) finding(what + " = " + std::to_string(v) + ": a negative size");
}
// A dimension or rate that divides something: finite and strictly positive.
inline void need_positive(const std::string& what, double v) {
  if (!std::isfinite(v) || !(v > 0)) finding(what + " = " + std::to_string(v) + ": not a finite positive number");
}

}  // namespace claimcheck::fuzz
