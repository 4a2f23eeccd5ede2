// ch03.item_sync — 「loss.item() 为什么慢：CPU 异步发 kernel，.item() 要等 GPU 队列清空——别每步都取」
// On a GPU through LibTorch CUDA: a small MLP trained with the loss read back (.item()) after every step, and after
// every 50th step; the per-step times, interleaved rounds, medians. Reading it every step makes the CPU wait for
// the GPU's queue to drain each step, so the two stop overlapping: the step gets slower.
#include "claimcheck/check.h"
#include "claimcheck/train/perf.h"

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

// inputs.<name> as an integer from 1 to max, or a one-line error naming the claim's field.
static int positive_input(claimcheck::Context& ctx, const std::string& name, int max) {
  const nlohmann::json& v = ctx.input(name);
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + name + "': expected an integer from 1 to " +
                                std::to_string(max) + ", got " + v.dump());
  return v.get<int>();
}

static void item_sync(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const int steps = positive_input(ctx, "steps", 100000), rare = positive_input(ctx, "rare", 100000),
            rounds = positive_input(ctx, "rounds", 1000);
  if (rare > steps)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.rare': a sync every " + std::to_string(rare) +
                                " steps needs at least that many steps per round (inputs.steps is " +
                                std::to_string(steps) + ")");
  std::string why;
  if (!claimcheck::train::torch_cuda_available(&why)) ctx.skip(why);
  const auto t = claimcheck::train::item_sync_timing(ctx.seed(), steps, rare, rounds, ctx.planted_fault());
  ctx.measure_bool("value", t.every_step_s > t.rare_step_s);
  ctx.measure("sync_slowdown", t.every_step_s / t.rare_step_s, "ratio");
  ctx.measure("every_step_us", t.every_step_s * 1e6, "us");
  ctx.measure("rare_step_us", t.rare_step_s * 1e6, "us");
  ctx.detail("model", {{"layers", t.layers}, {"width", t.width}, {"batch", t.batch}, {"device", t.device}});
  ctx.assumption(std::to_string(t.layers) + " Linear(" + std::to_string(t.width) + ") + ReLU layers, batch " +
                 std::to_string(t.batch) + ", AdamW on the GPU; " + std::to_string(t.steps) +
                 " steps per round with "
                 ".item() after every step vs after every " +
                 std::to_string(t.rare) + "th, the median of " + std::to_string(t.rounds) +
                 " interleaved rounds (host clock, the queue drained around each round)");
  if (t.idle_every >= 0 && t.idle_rare >= 0) {
    ctx.measure_bool("profiler_idle_grows", t.idle_every > t.idle_rare);
    ctx.measure("gpu_idle_share_every_step", 100 * t.idle_every, "%");
    ctx.measure("gpu_idle_share_rare", 100 * t.idle_rare, "%");
    ctx.detail("profiled_gpu_events", t.profiled_gpu_events);
    ctx.assumption("the profiler (LibTorch's Kineto, CUDA activity) over " + std::to_string(t.rounds) +
                   " more "
                   "interleaved rounds of each: the share of the span from the first GPU activity to the last in which "
                   "no kernel, copy or memset ran, medians");
  } else {
    ctx.pending("the GPU idle share the profiler shows: it recorded " + std::to_string(t.profiled_gpu_events) +
                " GPU events (no CUPTI here?)");
  }
#endif
}
CLAIMCHECK_REGISTER(item_sync).claim("ch03.item_sync");
