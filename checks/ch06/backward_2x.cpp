// ch06.backward_2x — 「反向 ≈ 2 × 前向」: a GEMM-dominated block (the layers of a Llama-shaped decoder, fp32, the
// input requiring grad) in LibTorch: backward time over forward time, the median of each step's ratio. Each forward
// GEMM has two backward GEMMs of its size (dX and dW), so the FLOPs are exactly 2x; the time follows them. What the
// last timed step computed (its loss and every gradient) is held against the answer key's fp64 layers (ch06_block.h).
#include "claimcheck/check.h"
#include "claimcheck/probe.h"
#include "testbed/cpu.h"
#include "testbed/gpu.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "ch06_block.h"
#include "claimcheck/train/perf.h"
#endif

static void backward_2x(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // Prepare: on a GPU (the probe found one and LibTorch sees it) gpu_layers Llama-3-8B layers in bf16, else the
  // CPU form.
  std::string no_cuda;
  const bool gpu = ctx.hardware().gpu.has_value() && claimcheck::train::torch_cuda_available(&no_cuda);
  const int batch = gpu ? ch06::positive_int(ctx, "gpu_batch", 1024) : ctx.input("batch").get<int>();
  const int tokens = gpu ? ch06::positive_int(ctx, "gpu_tokens", 131072) : ctx.input("tokens").get<int>();
  // A run that judges no time (a planted-fault test's, on what the step computed): one timed repeat.
  const int repeats = ctx.timing_judged() ? ctx.input("repeats").get<int>() : 1;
  const std::string config = gpu ? "gpu_config" : "config";
  // On the CPU: one intra-op thread, each phase timed in the process's CPU seconds: the work's cost, which a
  // neighbour on the shared cores does not move (two threads and the wall clock read 1.29 in one CI run and 1.7-3.8
  // beside a build, where the quiet machine reads 2.0).
  claimcheck::train::BlockStepOn on;
  on.threads = 1;
  on.cpu_clock = true;
  on.capture = true;  // what the last timed step computed, held against the answer key below
  if (gpu)
    on = {true, true, ch06::positive_int(ctx, "gpu_layers", 128)};
  else if (ctx.hardware().gpu)
    ctx.detail("gpu_form", "not run: " + no_cuda);
  if (!gpu) ch06::gpu::note_cpu_in_place_of_gpu(ctx, ctx.hardware().gpu ? no_cuda : ctx.hardware().gpu_absent_reason);

  // Run.
  const auto r = claimcheck::train::time_block_step(ctx.input_path(config), ctx.seed(), batch, tokens, repeats,
                                                    ctx.planted_fault(), on);

  // Verify.
  ctx.measure(r.backward_over_forward, "ratio");
  // What the timed step computed (the CPU form: the reference runs in fp64 on the CPU).
  if (!gpu) ch06::verify_block_step(ctx, ctx.input_path(config), r);
  ctx.detail("ms", {{"forward", r.forward_s * 1e3},
                    {"backward", r.backward_s * 1e3},
                    {"step", r.step_s * 1e3},
                    {"clock", gpu ? "wall, the queue drained" : "the process's CPU time"}});
  ctx.detail("forward_gflop", r.forward_flops / 1e9);
  ctx.assumption(std::to_string(r.layers) + " decoder layers of " + ctx.input_path(config).filename().string() +
                 " in " + r.dtype + " on " +
                 (gpu ? "the GPU (LibTorch CUDA, each phase timed with the queue drained)"
                      : std::to_string(r.threads) + " CPU intra-op thread, each phase in "
                                                    "CPU seconds") +
                 ", a [" + std::to_string(batch) + ", " + std::to_string(tokens) +
                 "] input that requires grad (so the "
                 "first layer also computes dX), fused SDPA attention; the median over " +
                 std::to_string(repeats) + " steps of each one's backward / forward");
#endif
}
CLAIMCHECK_REGISTER(backward_2x).claim("ch06.backward_2x");
