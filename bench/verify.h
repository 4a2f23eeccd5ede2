// What the benchmarks share. A timed benchmark run checks what it computed (issue 32): its last output's error against
// the answer key, and where it exceeds what the dtype allows the row is an error (the ratio scripts under ci/ refuse a
// run with one), never a ratio.
#pragma once
#include <algorithm>
#include <string>

#include <benchmark/benchmark.h>

#include "claimcheck/kernels/roofline.h"
#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/roofline.h"

namespace bench {
// The fp32 FMA peak on `threads` pinned threads with the claims' own probe (kernels/cpu/roofline: what ch06's roofs
// and the report's shares of peak are measured with), one pass of 0.05 s per iteration: the benchmark table's roof is
// the claims' (issue 34: one probe for every table).
inline void BM_fma_peak(benchmark::State& st, int threads) {
  claimcheck::kernels::FlopsPeak p;
  for (auto _ : st) {
    p = claimcheck::kernels::measure_fma_peak(threads, {}, 1, 0.05);
    st.SetIterationTime(p.seconds);
  }
  st.counters["FLOP/s"] = p.flops_per_s;
  st.counters["threads"] = threads;
  st.SetLabel(p.isa);
}

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
