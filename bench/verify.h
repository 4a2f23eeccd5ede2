// A timed benchmark run checks what it computed (issue 32): its last output's error against the answer key, and
// where it exceeds what the dtype allows the row is an error (the ratio scripts under ci/ refuse a run with one),
// never a ratio.
#pragma once
#include <string>

#include <benchmark/benchmark.h>

namespace bench {
inline void verify(benchmark::State& st, double error, double allowed, const char* what) {
  if (error <= allowed) return;
  static std::string msg;  // Google Benchmark 1.7 keeps the pointer
  msg = std::string(what) + ": the timed output does not match the fp64 reference (error " + std::to_string(error) +
        " > " + std::to_string(allowed) + ")";
  st.SkipWithError(msg.c_str());
}
}  // namespace bench
