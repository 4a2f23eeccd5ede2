// What every fuzz target asserts, and how it reports a finding: a message on stderr, then abort(), which libFuzzer
// records as a crash with the input that caused it (ci/sanitize.sh prints the reproducer).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace claimcheck::fuzz {

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
