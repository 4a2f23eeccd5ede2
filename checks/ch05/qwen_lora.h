// Shared by the chapter 5 checks that measure the Qwen2.5-0.5B architecture built in LibTorch with LoRA.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

namespace ch05 {

// A number as an argument of the answer key's drivers: every digit a double holds.
inline std::string exact(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

// The LoRA set-up the claim's expected file names (inputs.lora: r, alpha, targets).
inline claimcheck::train::LoraSpec lora_spec(const claimcheck::Context& ctx) {
  const nlohmann::json& l = ctx.input("lora");
  return {l.at("r").get<int>(), l.at("alpha").get<double>(), l.at("targets").get<std::vector<std::string>>()};
}

#if CLAIMCHECK_WITH_TORCH
// Builds the model from inputs.config (random initialisation), wraps it with that LoRA, takes one AdamW step.
inline claimcheck::train::QwenLoraMeasure measure_qwen_lora(const claimcheck::Context& ctx) {
  return claimcheck::train::qwen_lora_measure(ctx.input_path("config"), lora_spec(ctx), ctx.seed(), 8,
                                              ctx.planted_fault());
}
#endif

}  // namespace ch05
