// Chapter 3 in LibTorch on a GPU: whether CUDA is usable, and a training loop timed with the loss read every step
// or rarely (loss.item() waits for the GPU's queue), with the GPU's idle share from the profiler.
#include "claimcheck/train/perf.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include <kineto/ActivityType.h>  // libkineto's activity kinds (shipped in LibTorch's include folder)
#include <torch/csrc/autograd/profiler_kineto.h>

#include <torch/cuda.h>

#include "claimcheck/base/timing.h"
#include "decoder.h"

namespace claimcheck::train {
namespace {
using base::Clock;
using base::seconds_since;
}  // namespace

bool torch_cuda_available(std::string* why) {
  if (torch::cuda::is_available()) return true;
  if (why)
    *why = std::string("LibTorch ") + TORCH_VERSION +
           " sees no CUDA device (no GPU, or a build that links only "
           "libtorch_cpu: the cuda preset links LibTorch's CUDA libraries)";
  return false;
}

ItemSyncTiming item_sync_timing(std::uint64_t seed, int steps, int rare, int rounds, const std::string& fault) {
  if (fault != "" && fault != "item_every_step")
    throw std::invalid_argument("item_sync_timing: unknown fault '" + fault + "'");
  if (steps < 1 || rare < 1 || rounds < 1)
    throw std::invalid_argument("item_sync_timing: steps, rare and rounds must be positive");
  std::string why;
  if (!torch_cuda_available(&why)) throw std::runtime_error(why);
  ItemSyncTiming r;
  r.steps = steps, r.rare = rare, r.rounds = rounds, r.width = 1024, r.layers = 4, r.batch = 128;
  const torch::Device dev(torch::kCUDA);
  torch::manual_seed(seed);
  torch::nn::Sequential net;
  for (int i = 0; i < r.layers; ++i) {
    net->push_back(torch::nn::Linear(r.width, r.width));
    net->push_back(torch::nn::ReLU());
  }
  net->push_back(torch::nn::Linear(r.width, 16));
  net->to(dev);
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-4));
  const torch::Tensor x = torch::randn({r.batch, r.width}, torch::TensorOptions().device(dev));
  const torch::Tensor y = torch::randint(0, 16, {r.batch}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  float sink = 0;
  auto run = [&](int every) {
    torch::cuda::synchronize();
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) {
      torch::Tensor loss = step();
      if ((i + 1) % every == 0) sink += loss.item<float>();  // waits for every kernel queued so far
    }
    torch::cuda::synchronize();
    return seconds_since(t0) / steps;
  };
  run(rare);  // warm-up: kernels loaded, the allocator's cache filled
  const int rare_every = fault == "item_every_step" ? 1 : rare;
  std::vector<double> every, rarely;
  for (int k = 0; k < rounds; ++k) {
    every.push_back(run(1));
    rarely.push_back(run(rare_every));
  }
  r.every_step_s = base::median(every);
  r.rare_step_s = base::median(rarely);
  // The profiler: `rounds` more interleaved rounds of each, CUDA activity only (less of the profiler's own overhead),
  // the GPU's busy intervals merged: kernels, copies and memsets (libkineto's CONCURRENT_KERNEL, GPU_MEMCPY,
  // GPU_MEMSET), not the annotation or sync ranges that also carry the CUDA device type.
  auto idle_share = [&](int every_n) {
    namespace prof = torch::autograd::profiler;
    namespace impl = torch::profiler::impl;
    const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO);
    const std::set<impl::ActivityType> acts{impl::ActivityType::CUDA};
    prof::prepareProfiler(cfg, acts);
    prof::enableProfiler(cfg, acts);
    run(every_n);
    const auto result = prof::disableProfiler();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;
    for (const auto& e : result->events()) {
      const auto kind = static_cast<libkineto::ActivityType>(e.activityType());
      const bool work = kind == libkineto::ActivityType::CONCURRENT_KERNEL ||
                        kind == libkineto::ActivityType::GPU_MEMCPY || kind == libkineto::ActivityType::GPU_MEMSET;
      if (work && e.deviceType() == c10::DeviceType::CUDA && e.durationNs() > 0)
        busy.emplace_back(e.startNs(), e.startNs() + e.durationNs());
    }
    r.profiled_gpu_events += static_cast<long>(busy.size());
    if (busy.size() < 2) return -1.0;
    std::sort(busy.begin(), busy.end());
    std::uint64_t covered = 0, end = busy.front().first;
    for (const auto& [b, e] : busy) {
      if (e <= end) continue;
      covered += e - std::max(b, end);
      end = e;
    }
    const double span = static_cast<double>(end - busy.front().first);
    return span > 0 ? 1.0 - static_cast<double>(covered) / span : -1.0;
  };
  std::vector<double> idle_every, idle_rare;
  for (int k = 0; k < rounds; ++k) {
    idle_every.push_back(idle_share(1));
    idle_rare.push_back(idle_share(rare_every));
  }
  auto median_or_none = [](std::vector<double> v) {  // -1 when any round saw no GPU activity
    if (std::find(v.begin(), v.end(), -1.0) != v.end()) return -1.0;
    return base::median(std::move(v));
  };
  r.idle_every = median_or_none(idle_every);
  r.idle_rare = median_or_none(idle_rare);
  (void)sink;
  r.device = "CUDA device 0 of " + std::to_string(torch::cuda::device_count());
  return r;
}

}  // namespace claimcheck::train
