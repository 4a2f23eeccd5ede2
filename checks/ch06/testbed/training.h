// The device a chapter 6 LibTorch training step runs on (ch06.mfu, ch06.backward_2x): LibTorch's CUDA where the
// probe found a GPU and LibTorch sees it; this CPU otherwise, saying so (and why) where the host has a GPU. A check
// hands its two forms here and never asks which device it runs on.
#pragma once
#if CLAIMCHECK_WITH_TORCH
#include <functional>
#include <string>

#include "claimcheck/check.h"
#include "claimcheck/train/perf.h"
#include "gpu.h"

namespace ch06 {

using TrainingForm = std::function<void(claimcheck::Context&)>;
inline void run_training(claimcheck::Context& ctx, const TrainingForm& cpu, const TrainingForm& gpu_form) {
  std::string no_cuda;
  if (ctx.hardware().gpu && claimcheck::train::torch_cuda_available(&no_cuda)) return gpu_form(ctx);
  if (ctx.hardware().gpu) ctx.detail("gpu_form", "not run: " + no_cuda);
  gpu::note_cpu_in_place_of_gpu(ctx, ctx.hardware().gpu ? no_cuda : ctx.hardware().gpu_absent_reason);
  cpu(ctx);
}

}  // namespace ch06
#endif
