// The roofline probe's clock under load: two dependent chains of known latency on two different units, which must
// agree.
#include <cstdint>
#include <vector>

#include "claimcheck/kernels/roofline.h"
#include "probe.h"

namespace claimcheck::kernels {
namespace {

using probe::Clock;
using probe::run_pinned;
using probe::seconds_since;

// Two dependent chains whose latency no core shortens, on two different units; the clock is their count x latency
// over the time, and the two must agree (a core that shortcuts one of them, as Golden Cove and later fold a chain of
// `add reg, imm` at rename and ran one at ~5 per cycle, shows as a disagreement, not as a 10 GHz clock).
//  - x86-64: `imul r64, r64`, 3 cycles on the multiplier of every x86-64 core since the Pentium 4 / K8 (Intel's and
//    AMD's optimisation manuals; uops.info); `add r64, r64` from a register, 1 cycle on every integer ALU. Not a SIMD
//    op: their latencies differ by core (`paddq xmm` is 1 cycle up to Zen 4 and 2 on Zen 5, which read 2.0 GHz
//    against imul's 4.0 on a Turin core), and not an immediate, which Golden Cove folds at rename.
//  - AArch64: `add x, x, #1` (1 cycle) and a scalar `fmadd d` (4 cycles on Neoverse N1, V1, N2 and V2: the Arm
//    software optimisation guides, LLVM's AArch64SchedNeoverse*.td; a 64-bit `madd` is 2 on V1/N2/V2 but 4 on N1).
// 32 operations per iteration, the loop's own add and branch run beside the chain on other ports.
struct Chain {
  std::uint64_t (*fn)(std::uint64_t);
  double cycles_per_op;
  const char* name;
};
#if defined(__x86_64__)
__attribute__((noinline)) std::uint64_t imul_chain(std::uint64_t iters) {
  std::uint64_t x = 3, m = 0x9E3779B97F4A7C15ULL;
  for (std::uint64_t i = 0; i < iters; ++i) asm volatile(".rept 32\n\timul %1, %0\n\t.endr" : "+r"(x) : "r"(m));
  return x;
}
__attribute__((noinline)) std::uint64_t add_reg_chain(std::uint64_t iters) {
  // A register operand, not an immediate: its value is not known at rename, so no core can fold the chain.
  std::uint64_t x = 0, one = 1;
  for (std::uint64_t i = 0; i < iters; ++i) asm volatile(".rept 32\n\tadd %1, %0\n\t.endr" : "+r"(x) : "r"(one));
  return x;
}
const Chain kClockChains[2] = {{imul_chain, 3, "imul r64 chain (3 cycles each)"},
                               {add_reg_chain, 1, "add r64, r64 chain (1 cycle each)"}};
#elif defined(__aarch64__)
__attribute__((noinline)) std::uint64_t add_chain(std::uint64_t iters) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iters; ++i) asm volatile(".rept 32\n\tadd %0, %0, #1\n\t.endr" : "+r"(x));
  return x;
}
__attribute__((noinline)) std::uint64_t fmadd_chain(std::uint64_t iters) {
  double x = 1.0;
  const double m = 0.999999, c = 1e-7;
  for (std::uint64_t i = 0; i < iters; ++i)
    asm volatile(".rept 32\n\tfmadd %d0, %d0, %d1, %d2\n\t.endr" : "+w"(x) : "w"(m), "w"(c));
  return static_cast<std::uint64_t>(x * 1e6);
}
const Chain kClockChains[2] = {{add_chain, 1, "add x chain (1 cycle each)"},
                               {fmadd_chain, 4, "fmadd d chain (4 cycles each)"}};
#else
__attribute__((noinline)) std::uint64_t plain_chain(std::uint64_t iters) {
  std::uint64_t x = 0;
  for (std::uint64_t i = 0; i < iters; ++i)
    for (int j = 0; j < 32; ++j) asm volatile("" : "+r"(x));
  return x;
}
const Chain kClockChains[2] = {{plain_chain, 0, "no clock chain for this architecture"},
                               {plain_chain, 0, "no clock chain for this architecture"}};
#endif

// Iterations of a chain that take about `seconds` on one thread.
std::uint64_t chain_iterations(const Chain& c, double seconds) {
  std::uint64_t iters = 1 << 8;
  for (;;) {
    const auto t0 = Clock::now();
    volatile std::uint64_t sink = c.fn(iters);
    (void)sink;
    const double s = seconds_since(t0);
    if (s > seconds / 8 || iters > (1ULL << 40))
      return std::max<std::uint64_t>(
          1, static_cast<std::uint64_t>(static_cast<double>(iters) * seconds / std::max(s, 1e-9)));
    iters *= 4;
  }
}

}  // namespace

ClockReading measure_clock(int threads, double seconds, const RooflineFaults& faults) {
  threads = std::max(1, threads);
  ClockReading r;
  const Chain& a = kClockChains[0];
  const Chain& b = kClockChains[1];
  r.methods[0] = a.name;
  r.methods[1] = b.name;
  if (a.cycles_per_op <= 0 || b.cycles_per_op <= 0) return r;
  // Many short passes, each thread running both chains back to back (so that both see the same moment), the best
  // pass of each kept: a neighbour on a shared machine only ever lowers a reading, and a pass of a few milliseconds
  // often runs whole within one time slice (16 passes of 2 x 20 ms read 1.0-3.0 GHz under a load of 6 here; the
  // clock is 2.8).
  const std::uint64_t na = chain_iterations(a, seconds), nb = chain_iterations(b, seconds);
  for (int pass = 0; pass < 16; ++pass) {
    std::vector<double> ha(threads), hb(threads);
    run_pinned(threads, [&](int t) {
      auto t0 = Clock::now();
      volatile std::uint64_t sink = a.fn(na);
      const double ops = faults.clock_halved ? 16.0 : 32.0;  // (a planted fault: half the operations counted)
      ha[t] = (faults.clock_miscount ? 34.0 : ops) * a.cycles_per_op * static_cast<double>(na) / seconds_since(t0);
      t0 = Clock::now();
      sink = b.fn(nb);
      (void)sink;
      hb[t] = ops * b.cycles_per_op * static_cast<double>(nb) / seconds_since(t0);
    });
    double ma = 0, mb = 0;
    for (int t = 0; t < threads; ++t) ma += ha[t] / threads, mb += hb[t] / threads;
    r.hz[0] = std::max(r.hz[0], ma);
    r.hz[1] = std::max(r.hz[1], mb);
  }
  return r;
}

double ClockReading::agreed_hz(double tolerance) const {
  if (!(hz[0] > 0) || !(hz[1] > 0)) return 0;
  const double lo = std::min(hz[0], hz[1]), hi = std::max(hz[0], hz[1]);
  return hi <= lo * (1 + tolerance) ? hi : 0;
}

}  // namespace claimcheck::kernels
