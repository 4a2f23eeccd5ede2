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
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/train/experiments.h"

namespace checks {

// inputs.<config> with the keys of inputs.<overrides> replaced (e.g. fewer layers, a smaller vocabulary), then those
// of `more` (an object named by its field, e.g. "inputs.reference_long.overrides"), written as dir/config.json;
// returns that path and the JSON.
// A config.json as the check reads it itself (not through the code under test).
inline nlohmann::json read_config_json(const std::filesystem::path& src) {
  std::ifstream in(src);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(src.string() + ": field '(json)': malformed JSON: " + e.what());
  }
}

inline std::pair<std::filesystem::path, nlohmann::json> scaled_config(
    const claimcheck::Context& ctx, const std::string& config, const std::string& overrides,
    const std::filesystem::path& dir, const nlohmann::json& more = nlohmann::json::object(),
    const std::string& more_field = "") {
  nlohmann::json c = read_config_json(ctx.input_path(config));
  const nlohmann::json& o = ctx.input(overrides);
  if (!o.is_object())
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + overrides + "': expected an object");
  for (const auto& [k, v] : o.items()) c[k] = v;
  if (!more.is_object())
    throw std::invalid_argument(ctx.claim_id() + ": field '" + more_field + "': expected an object");
  for (const auto& [k, v] : more.items()) c[k] = v;
  const auto scaled = dir / "config.json";
  std::ofstream(scaled) << c.dump(2);
  return {scaled, c};
}

// inputs.<config> with inputs.<overrides> (e.g. a head_dim) making heads x head_dim differ from the hidden size, where
// the query and the attention output are not hidden-wide: the config written as dir/config.json, and read as the
// answer key reads it. Where the overrides leave them equal (another config than the file was written for), the
// head width doubled.
inline std::pair<std::filesystem::path, claimcheck::ref::ModelConfig> wide_heads_config(
    const claimcheck::Context& ctx, const std::string& config, const std::string& overrides,
    const std::filesystem::path& dir) {
  auto path = scaled_config(ctx, config, overrides, dir).first;
  claimcheck::ref::ModelConfig c = claimcheck::ref::load_model_config(path);
  // On a config whose heads x the override's head_dim is its hidden size (another model than the file names), twice
  // that width: the point is a width apart from hidden / heads.
  if (c.heads * c.head_dim == c.hidden) {
    path = scaled_config(ctx, config, overrides, dir, {{"head_dim", 2 * c.head_dim}}, "inputs." + overrides).first;
    c = claimcheck::ref::load_model_config(path);
  }
  return {path, c};
}

// inputs.<config> scaled by inputs.<overrides> (keys of config.json, e.g. fewer layers and a smaller vocabulary),
// exported in fp32 and bf16 and compared. Records transformers_fp32, transformers_bf16 (the worst element over
// logits, loss and gradients, in units of assert_close's tolerance) and transformers_keys_mismatch; without
// transformers and peft the comparison is listed as pending with the reason.
// With long_block, also the decoder at length (issue 33) in the same call of the answer key: the config further
// scaled by inputs.<long_block>.overrides (e.g. Llama-3.1's rope_scaling), inputs.<long_block>.batch rows of
// inputs.<long_block>.tokens ids, the last row left-padded by inputs.<long_block>.left_pad tokens with the attention
// mask and position ids transformers' generate gives it, in inputs.<long_block>.dtype ("fp32" unless named, or
// "bf16") against transformers on the same mask and positions: transformers_fp32_padded (transformers_bf16_padded).
inline void decoder_vs_transformers(claimcheck::Context& ctx, const std::string& config, const std::string& overrides,
                                    const std::string& long_block = "") {
  const std::filesystem::path src = ctx.input_path(config);
  const nlohmann::json& o = ctx.input(overrides);
  // Each run only where the run judges its figure (a planted-fault test's run --statement); the keys ride on fp32.
  const bool want_fp32 = ctx.wants("transformers_fp32") || ctx.wants("transformers_keys_mismatch");
  const bool want_bf16 = ctx.wants("transformers_bf16");
  std::string long_dtype = "fp32";
  if (!long_block.empty() && ctx.input(long_block).is_object() && ctx.input(long_block).contains("dtype")) {
    const nlohmann::json& d = ctx.input(long_block)["dtype"];
    if (!d.is_string() || (d != "fp32" && d != "bf16"))
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + long_block + ".dtype': expected \"fp32\" or " +
                                  "\"bf16\"");
    long_dtype = d.get<std::string>();
  }
  const bool want_long = !long_block.empty() && ctx.wants("transformers_" + long_dtype + "_padded");
  if (!want_fp32 && !want_bf16 && !want_long) return;
  claimcheck::ScratchDir dir("vs_transformers");
  const auto [scaled, c] = scaled_config(ctx, config, overrides, dir.path());
  const int batch = 2, seq = 24;
  std::vector<std::string> args = {"decoder", "--config", scaled.string()};
  for (const char* dtype : {"fp32", "bf16"}) {
    if (!(std::string(dtype) == "fp32" ? want_fp32 : want_bf16)) continue;
    claimcheck::train::export_decoder_run(scaled, dtype, ctx.seed(), batch, seq, dir.path() / dtype,
                                          ctx.planted_fault());
    args.insert(args.end(), {"--run", std::string(dtype) + ":" + (dir.path() / dtype).string()});
  }
  std::string at_length;
  if (want_long) {
    const nlohmann::json& b = ctx.input(long_block);
    const std::string field = "inputs." + long_block;
    if (!b.is_object()) throw std::invalid_argument(ctx.claim_id() + ": field '" + field + "': expected an object");
    auto count = [&](const char* key, int lo, int hi) {
      if (!b.contains(key) || !b[key].is_number_integer() || b[key].get<long long>() < lo ||
          b[key].get<long long>() > hi)
        throw std::invalid_argument(ctx.claim_id() + ": field '" + field + "." + key + "': expected an integer in " +
                                    std::to_string(lo) + " .. " + std::to_string(hi));
      return b[key].get<int>();
    };
    const int lb = count("batch", 1, 64), ls = count("tokens", 2, 1 << 16), pad = count("left_pad", 1, ls - 2);
    const auto padded = dir.path() / "padded";
    std::filesystem::create_directories(padded);
    const auto more = b.value("overrides", nlohmann::json::object());
    const auto long_config = scaled_config(ctx, config, overrides, padded, more, field + ".overrides").first;
    claimcheck::train::export_decoder_run(long_config, long_dtype, ctx.seed(), lb, ls, padded, ctx.planted_fault(),
                                          pad);
    args.insert(args.end(), {"--run", long_dtype + "_padded:" + padded.string()});
    at_length = "; at length: with " + more.dump() + ", B = " + std::to_string(lb) + ", T = " + std::to_string(ls) +
                ", the last row left-padded by " + std::to_string(pad) +
                " (attention_mask, position_ids = cumsum(mask) - 1), " + long_dtype;
  }
  const nlohmann::json r = claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py", args);
  if (r.contains("skip")) {
    ctx.pending("the decoder against transformers: " + r["skip"].get<std::string>());
    return;
  }
  claimcheck::forward_driver_result(ctx, r);
  ctx.detail("transformers_config", c);
  ctx.assumption("against transformers: " + src.filename().string() + " with " + o.dump() +
                 ", random weights (norms and " + "biases off 1 and 0), B = " + std::to_string(batch) +
                 ", T = " + std::to_string(seq) + ", eager attention on the reference side" + at_length);
}

}  // namespace checks
