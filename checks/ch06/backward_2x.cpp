// ch06.backward_2x — 「反向 ≈ 2 × 前向」: a GEMM-dominated block (the layers of a Llama-shaped decoder, fp32, the
// input requiring grad) in LibTorch: backward time over forward time, best of interleaved runs. Each forward GEMM
// has two backward GEMMs of its size (dX and dW), so the FLOPs are exactly 2x; the time follows them.
#include "claimcheck/check.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/perf.h"
#endif

static void backward_2x(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // Prepare.
  const int batch = ctx.input("batch").get<int>(), tokens = ctx.input("tokens").get<int>();
  const int repeats = ctx.input("repeats").get<int>();

  // Run.
  const auto r = claimcheck::train::time_block_step(ctx.input_path("config"), ctx.seed(), batch, tokens, repeats,
                                                    ctx.planted_fault());

  // Verify.
  ctx.measure(r.backward_s / r.forward_s, "ratio");
  ctx.detail("ms", {{"forward", r.forward_s * 1e3}, {"backward", r.backward_s * 1e3}, {"step", r.step_s * 1e3}});
  ctx.detail("forward_gflop", r.forward_flops / 1e9);
  ctx.assumption(std::to_string(r.layers) + " decoder layers of " + ctx.input_path("config").filename().string() +
                 " in fp32 on a [" + std::to_string(batch) + ", " + std::to_string(tokens) + "] input that requires "
                 "grad (so the first layer also computes dX), fused SDPA attention, " + std::to_string(r.threads) +
                 " intra-op threads; best of " + std::to_string(repeats) + " interleaved steps");
#endif
}
CLAIMCHECK_REGISTER(backward_2x).claim("ch06.backward_2x").needs(claimcheck::Requirement::libtorch);
