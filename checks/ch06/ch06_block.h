// Shared by the chapter 6 checks that time the LibTorch training step (backward_2x, mfu): what the last timed step
// computed, against the answer key's fp64 decoder layers (reference/src/torch/block_torch.cpp) on the same weights
// and input. Include after claimcheck/train/perf.h, where CLAIMCHECK_WITH_TORCH.
#pragma once
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "claimcheck/ref/block.h"
#include "claimcheck/train/perf.h"

namespace ch06 {

// The statements output_matches_reference (the loss, over the scale of its sum), grads_match_reference (the worst
// gradient, over its own scale) and update_matches_reference (the last of `steps` AdamW updates, with the settings of
// inputs.optimizer, over the largest update) for a step run with BlockStepOn::capture on `config`'s layers.
inline void verify_block_step(claimcheck::Context& ctx, const std::filesystem::path& config,
                              const claimcheck::train::BlockStepTiming& r, int steps) {
  namespace ref = claimcheck::ref;
  if (!r.capture) throw std::logic_error("verify_block_step: the step was run without BlockStepOn::capture");
  const auto& cap = *r.capture;
  auto view = [](const claimcheck::train::StepTensor& t) { return ref::TensorRef{t.name, t.shape, t.values.data()}; };
  std::vector<ref::TensorRef> weights, grads;
  for (const auto& t : cap.weights) weights.push_back(view(t));
  for (const auto& t : cap.grads) grads.push_back(view(t));
  const ref::BlockSpec spec = ref::load_block_spec(config);
  const auto c = ref::compare_block_step_fp64(spec, weights, view(cap.input), view(cap.proj), cap.loss, grads);
  ctx.measure("output_matches_reference", c.loss_error, "ratio");
  ctx.measure("grads_match_reference", c.grad_error, "ratio");
  // The step's AdamW update, recomputed from the weights, gradients and moments before it, with the settings the
  // expected file states (not the optimizer's own) as the loop's `steps`-th update: a step timed without its update,
  // an optimizer made anew each step (its moments and count restart) or other settings read O(1).
  std::vector<ref::TensorRef> m, v, after;
  for (const auto& t : cap.exp_avg) m.push_back(view(t));
  for (const auto& t : cap.exp_avg_sq) v.push_back(view(t));
  for (const auto& t : cap.updated) after.push_back(view(t));
  const nlohmann::json& o = ctx.input("optimizer");
  const ref::AdamWSettingsAt want{o.at("lr").get<double>(),           o.at("betas").at(0).get<double>(),
                                  o.at("betas").at(1).get<double>(),  o.at("eps").get<double>(),
                                  o.at("weight_decay").get<double>(), steps};
  const auto u = ref::compare_adamw_update_fp64(weights, grads, m, v, after, want);
  ctx.measure("update_matches_reference", u.update_error, "ratio");
  // The decay along the weights (ref::AdamWUpdateComparison::decay_error): left out reads 1, at its stated 0.01 about
  // 0.
  ctx.measure("update_decay_vs_reference", u.decay_error, "ratio");
  ctx.detail(
      "step_against_reference",
      {{"loss", cap.loss},
       {"reference_loss", c.reference_loss},
       {"gradients_compared", c.grads_compared},
       {"worst_gradient", c.worst_grad},
       {"adamw_step", cap.adam_step},
       {"adamw_settings",
        {{"lr", cap.lr}, {"betas", {cap.beta1, cap.beta2}}, {"eps", cap.eps}, {"weight_decay", cap.weight_decay}}},
       {"updates_compared", u.tensors},
       {"worst_update", u.worst},
       {"reference", "the answer key's fp64 Llama layers (LibTorch autograd)"}});
}

}  // namespace ch06
