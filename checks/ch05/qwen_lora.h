// Shared by the chapter 5 checks that measure the Qwen2.5-0.5B architecture built in LibTorch with LoRA.
#pragma once
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "claimcheck/probe.h"
#include "claimcheck/ref/ledger.h"
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

// The model of `config` is built whole in fp32 (4 bytes a parameter, the answer key's count): refused in one line
// naming the input where that exceeds 80 % of this machine's memory (Llama-3-8B: 32 GB), not an allocator's abort
// half an hour in or the machine's OOM killer.
inline void refuse_beyond_memory(const claimcheck::Context& ctx, const std::filesystem::path& config,
                                 const std::string& field = "config") {
  const double bytes =
      4.0 * static_cast<double>(claimcheck::ref::count_params(claimcheck::ref::load_model_config(config)).total());
  const double have = static_cast<double>(ctx.hardware().memory_bytes);
  if (have > 0 && bytes > 0.8 * have)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + field + "': " + config.filename().string() +
                                " built in fp32 takes " + std::to_string(static_cast<long long>(bytes / 1e9)) +
                                " GB; this machine has " + std::to_string(static_cast<long long>(have / 1e9)) + " GB");
}

#if CLAIMCHECK_WITH_TORCH
// Builds the model from inputs.config (random initialisation), wraps it with that LoRA, takes one AdamW step.
inline claimcheck::train::QwenLoraMeasure measure_qwen_lora(const claimcheck::Context& ctx) {
  refuse_beyond_memory(ctx, ctx.input_path("config"));
  return claimcheck::train::qwen_lora_measure(ctx.input_path("config"), lora_spec(ctx), ctx.seed(), 8,
                                              ctx.planted_fault());
}
#endif

}  // namespace ch05
