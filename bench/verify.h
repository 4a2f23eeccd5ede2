// A timed benchmark run checks what it computed (issue 32): its last output's error against the answer key, and
// where it exceeds what the dtype allows the row is an error (the ratio scripts under ci/ refuse a run with one),
// never a ratio.
#pragma once
#include <algorithm>
#include <string>

#include <benchmark/benchmark.h>

#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/roofline.h"

namespace bench {
// The products the NF4 GEMV owes on this CPU (ref::nf4_products_for), from /proc/cpuinfo's flags, not from the kernel.
inline claimcheck::ref::Nf4Products nf4_products() {
  static const claimcheck::ref::Nf4Products p = [] {
    try {
      const auto flags = claimcheck::ref::read_cpu_identity().flags;
      return claimcheck::ref::nf4_products_for(std::find(flags.begin(), flags.end(), "avx512_bf16") != flags.end());
    } catch (const std::exception&) {
      return claimcheck::ref::Nf4Products::fp32;
    }
  }();
  return p;
}
inline void verify(benchmark::State& st, double error, double allowed, const char* what) {
  if (error <= allowed) return;
  static std::string msg;  // Google Benchmark 1.7 keeps the pointer
  msg = std::string(what) + ": the timed output does not match the fp64 reference (error " + std::to_string(error) +
        " > " + std::to_string(allowed) + ")";
  st.SkipWithError(msg.c_str());
}
}  // namespace bench
