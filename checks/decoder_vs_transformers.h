// Shared by the checks whose claims build the decoder (ch05.qwen_params, ch04.activation_gib): the model the code
// under test builds from a config.json against transformers' own class for that config (reference/python/
// hf_reference.py), on the same weights and token ids, in fp32 and bf16: logits, loss and every parameter's gradient
// within torch.testing.assert_close's tolerance, and the same state_dict keys and shapes.
#pragma once
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/train/experiments.h"

namespace checks {

// inputs.<config> with the keys of inputs.<overrides> replaced (e.g. fewer layers, a smaller vocabulary), written as
// dir/config.json; returns that path and the JSON.
inline std::pair<std::filesystem::path, nlohmann::json> scaled_config(const claimcheck::Context& ctx,
                                                                      const std::string& config,
                                                                      const std::string& overrides,
                                                                      const std::filesystem::path& dir) {
  const std::filesystem::path src = ctx.input_path(config);
  nlohmann::json c;
  {
    std::ifstream in(src);
    try {
      c = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw std::invalid_argument(src.string() + ": field '(json)': malformed JSON: " + e.what());
    }
  }
  const nlohmann::json& o = ctx.input(overrides);
  if (!o.is_object())
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + overrides + "': expected an object");
  for (const auto& [k, v] : o.items()) c[k] = v;
  const auto scaled = dir / "config.json";
  std::ofstream(scaled) << c.dump(2);
  return {scaled, c};
}

// inputs.<config> scaled by inputs.<overrides> (keys of config.json, e.g. fewer layers and a smaller vocabulary),
// exported in fp32 and bf16 and compared. Records transformers_fp32, transformers_bf16 (the worst element over
// logits, loss and gradients, in units of assert_close's tolerance) and transformers_keys_mismatch; without
// transformers and peft the comparison is listed as pending with the reason.
inline void decoder_vs_transformers(claimcheck::Context& ctx, const std::string& config, const std::string& overrides) {
  const std::filesystem::path src = ctx.input_path(config);
  const nlohmann::json& o = ctx.input(overrides);
  claimcheck::ScratchDir dir("vs_transformers");
  const auto [scaled, c] = scaled_config(ctx, config, overrides, dir.path());
  const int batch = 2, seq = 24;
  for (const char* dtype : {"fp32", "bf16"})
    claimcheck::train::export_decoder_run(scaled, dtype, ctx.seed(), batch, seq, dir.path() / dtype,
                                          ctx.planted_fault());
  const nlohmann::json r = claimcheck::run_python_driver(
      ctx, "reference/python/hf_reference.py",
      {"decoder", "--config", scaled.string(), "--run", "fp32:" + (dir.path() / "fp32").string(), "--run",
       "bf16:" + (dir.path() / "bf16").string()});
  if (r.contains("skip")) {
    ctx.pending("the decoder against transformers: " + r["skip"].get<std::string>());
    return;
  }
  claimcheck::forward_driver_result(ctx, r);
  ctx.detail("transformers_config", c);
  ctx.assumption("against transformers: " + src.filename().string() + " with " + o.dump() +
                 ", random weights (norms and " + "biases off 1 and 0), B = " + std::to_string(batch) +
                 ", T = " + std::to_string(seq) + ", eager attention on the reference side");
}

}  // namespace checks
