// ch06.backward_2x — 「反向 ≈ 2 × 前向」: a GEMM-dominated block (the layers of a Llama-shaped decoder, fp32, the
// input requiring grad) in LibTorch: backward time over forward time, the median of each step's ratio. Each forward
// GEMM has two backward GEMMs of its size (dX and dW), so the FLOPs are exactly 2x; the time follows them. What the
// last timed step computed (its loss, every gradient and its AdamW update) is held against the answer key's fp64
// layers and optimizer (ch06_block.h).
#include <algorithm>

#include "claimcheck/check.h"
#include "claimcheck/probe.h"
#include "testbed/cpu.h"
#include "testbed/gpu.h"
#include "testbed/training.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "ch06_block.h"
#include "claimcheck/train/perf.h"
#endif

#if CLAIMCHECK_WITH_TORCH
// One form per device: its inputs' names, the step's settings, and whether the answer key can hold its output.
struct Form {
  const char* config;
  int batch, tokens;
  claimcheck::train::BlockStepOn on;
  bool gpu;
};

static void backward_2x_on(claimcheck::Context& ctx, const Form& f) {
  // A run that judges no time (a planted-fault test's, on what the step computed): one timed repeat.
  const int repeats = ctx.timing_judged() ? ctx.input("repeats").get<int>() : 1;

  // Run.
  const auto r = claimcheck::train::time_block_step(ctx.input_path(f.config), ctx.seed(), f.batch, f.tokens, repeats,
                                                    ctx.planted_fault(), f.on);

  // Verify.
  ctx.measure(r.backward_over_forward, "ratio");
  // What the timed step computed (the CPU form: the reference runs in fp64 on the CPU).
  if (f.on.capture) ch06::verify_block_step(ctx, ctx.input_path(f.config), r, std::max(1, repeats) + 1);
  ctx.detail("ms", {{"forward", r.forward_s * 1e3},
                    {"backward", r.backward_s * 1e3},
                    {"step", r.step_s * 1e3},
                    {"clock", f.on.cpu_clock ? "the process's CPU time" : "wall, the queue drained"}});
  ctx.detail("forward_gflop", r.forward_flops / 1e9);
  ctx.assumption(std::to_string(r.layers) + " decoder layers of " + ctx.input_path(f.config).filename().string() +
                 " in " + r.dtype + " on " +
                 (f.gpu ? "the GPU (LibTorch CUDA, each phase timed with the queue drained)"
                        : std::to_string(r.threads) + " CPU intra-op thread, each phase in "
                                                      "CPU seconds") +
                 ", a [" + std::to_string(f.batch) + ", " + std::to_string(f.tokens) +
                 "] input that requires grad (so the "
                 "first layer also computes dX), fused SDPA attention; the median over " +
                 std::to_string(repeats) + " steps of each one's backward / forward");
}

// On this CPU: one intra-op thread, each phase timed in the process's CPU seconds: the work's cost, which a
// neighbour on the shared cores does not move (two threads and the wall clock read 1.29 in one CI run and 1.7-3.8
// beside a build, where the quiet machine reads 2.0); what the last timed step computed held against the answer key.
static void backward_2x_cpu(claimcheck::Context& ctx) {
  claimcheck::train::BlockStepOn on;
  on.threads = 1;
  on.cpu_clock = true;
  on.capture = true;
  backward_2x_on(ctx, {"config", ctx.input("batch").get<int>(), ctx.input("tokens").get<int>(), on, false});
}

// On a GPU (the probe found one and LibTorch sees it): gpu_layers Llama-3-8B layers in bf16.
static void backward_2x_gpu(claimcheck::Context& ctx) {
  const int batch = ch06::positive_int(ctx, "gpu_batch", 1024), tokens = ch06::positive_int(ctx, "gpu_tokens", 131072);
  backward_2x_on(ctx, {"gpu_config", batch, tokens, {true, true, ch06::positive_int(ctx, "gpu_layers", 128)}, true});
}
#endif

static void backward_2x(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  ch06::run_training(ctx, backward_2x_cpu, backward_2x_gpu);
#endif
}
CLAIMCHECK_REGISTER(backward_2x).claim("ch06.backward_2x");
