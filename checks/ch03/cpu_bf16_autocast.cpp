// ch03.cpu_bf16_autocast — 「CPU 上开 bf16 autocast 慢 30 倍：精度的收益来自硬件」
// A matmul timed in fp32 and under bf16 autocast; the expectation follows this CPU's ISA.
#include <cmath>
#include <stdexcept>

#include "claimcheck/check.h"
#include "claimcheck/probe.h"
#include "claimcheck/ref/gemv.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void cpu_bf16_autocast(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // One thread for both: the slow-down per core. With all threads the ratio also carries how many cores the fp32
  // BLAS gets and the bf16 fallback does not (one, here), and the machine's load: 80-118x on the 2-core VM.
  const int size = ctx.input("size").get<int>();
  if (size < 2 || size % 2 != 0 || size > 16384)
    throw std::invalid_argument(ctx.claim_id() +
                                ": field 'inputs.size': expected an even size from 2 to 16384 (row 0's "
                                "halves are its probe of bf16 inputs)");
  const auto t = claimcheck::train::cpu_bf16_autocast(ctx.seed(), size, 2, ctx.planted_fault(), 1);
  ctx.measure(t.bf16_autocast_s / t.fp32_s, "x");
  ctx.measure("emulation_slowdown", t.bf16_autocast_s / t.fp32_s, "x");
  ctx.measure_bool("dtype_is_bf16", t.dtype_inside_autocast == "BFloat16");
  // What the timed matmuls computed, each against fp64 dot products of its inputs (bf16-rounded on the autocast
  // side) on sampled outputs, and the threads the timed loops kept busy (one asked for: the figure is per core).
  namespace ref = claimcheck::ref;
  const auto n2 = static_cast<std::size_t>(t.n) * static_cast<std::size_t>(t.n);
  const bool sized =
      t.n > 0 && t.a.size() == n2 && t.b.size() == n2 && t.fp32_out.size() == n2 && t.bf16_out.size() == n2;
  ctx.measure("fp32_output_matches_reference",
              sized ? ref::matmul_sampled_error(t.a.data(), t.b.data(), t.n, t.fp32_out.data(), false) : INFINITY,
              "ratio");
  ctx.measure("bf16_output_matches_reference",
              sized ? ref::matmul_sampled_error(t.a.data(), t.b.data(), t.n, t.bf16_out.data(), true) : INFINITY,
              "ratio");
  // Element (0, 0), whose inputs the kernel's code sets (row 0 of a: 1 + 2^-10 then -1; column 0 of b: ones): 0 where
  // the inputs were rounded to bf16 (1 + 2^-10 is 1 there), n / 2 x 2^-10 in fp32. A bf16 output of an fp32 matmul
  // has the right dtype and a small error; only this element tells it from a bf16 matmul.
  const double fp32_00 = static_cast<double>(t.n / 2) * std::ldexp(1.0, -10);
  ctx.measure_bool("inputs_rounded_to_bf16", sized && std::fabs(t.bf16_out[0]) <= std::ldexp(1.0, -12) &&
                                                 std::fabs(t.fp32_out[0] - fp32_00) <= 1e-6 * fp32_00);
  ctx.measure("threads_busy", t.cpu_over_wall, "count");
  ctx.detail("seconds", {{"fp32", t.fp32_s}, {"bf16_autocast", t.bf16_autocast_s}, {"threads", 1}});
  const auto& hw = ctx.hardware();
  ctx.detail("bf16_hardware", {{"avx512_bf16", hw.has_isa("avx512_bf16")}, {"amx_bf16", hw.has_isa("amx_bf16")}});
  ctx.assumption(
      "the best of at least 2 runs and 0.25 s of runs each, after a warm-up, one thread; fp32 goes to the BLAS "
      "LibTorch loaded, bf16 to oneDNN");
#endif
}
CLAIMCHECK_REGISTER(cpu_bf16_autocast).claim("ch03.cpu_bf16_autocast");
