// ch05.qwen_params, measured part: the count on the decoder built in LibTorch by the code under test from the same
// config.json (random initialisation, no weights), and its difference from the ledger's count; then that model,
// scaled down, against transformers' Qwen2ForCausalLM (checks/decoder_vs_transformers.h).
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/ledger.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "../decoder_vs_transformers.h"
#include "claimcheck/train/experiments.h"
#include "qwen_lora.h"
#endif

namespace ref = claimcheck::ref;
namespace fs = std::filesystem;

// The answer key's counts on every family the ledger reads (the shipped configs and inputs.family_shapes, small
// configs of each family with their features on: biases, ties, qk norms, fused projections, head_dim apart from
// hidden / heads, experts, shared experts, sparse steps) against transformers' models built from the same files on
// the meta device and peft's LoRA on them: parameters, those a token meets, and the LoRA count of inputs.family_lora.
// A count the ledger gets wrong for a family no series figure names is a wrong `claimcheck account` for its users.
static void families_vs_transformers(claimcheck::Context& ctx) {
  claimcheck::ScratchDir dir("families_vs_transformers");
  std::vector<std::pair<std::string, fs::path>> configs{{"qwen2.5-0.5b", ctx.input_path("config")}};
  for (const auto& [name, v] : ctx.input("families").items())
    configs.emplace_back(name, ctx.root() / v.get<std::string>());
  const nlohmann::json& shapes = ctx.input("family_shapes");
  if (!shapes.is_object() || shapes.empty())
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.family_shapes': expected an object of configs");
  for (const auto& [name, cfg] : shapes.items()) {
    if (!cfg.is_object() || !cfg.contains("model_type"))
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.family_shapes." + name +
                                  "': expected a config with a model_type");
    const fs::path f = dir.path() / (name + ".json");
    std::ofstream(f) << cfg.dump(2);
    configs.emplace_back(name, f);
  }
  const nlohmann::json& lora = ctx.input("family_lora");
  const int r = lora.at("r").get<int>();
  std::string targets;
  for (const auto& t : lora.at("targets")) targets += (targets.empty() ? "" : ",") + t.get<std::string>();
  std::vector<std::string> args{"param_counts", "--r", std::to_string(r), "--targets", targets};
  for (const auto& c : configs) args.insert(args.end(), {"--config", c.second.string()});
  const nlohmann::json pc = claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py", args);
  if (pc.contains("skip")) {
    ctx.pending("the ledger's counts against transformers: " + pc["skip"].get<std::string>());
    return;
  }
  double differ = 0;
  nlohmann::json shown = nlohmann::json::object();
  for (const auto& [name, path] : configs) {
    const auto cfg = ref::load_model_config(path);
    const ref::ParamCount count = ref::count_params(cfg);
    const nlohmann::json& theirs = pc.at("details").at("param_counts").at(path.string());
    const std::int64_t mine[3] = {count.total(), count.active(),
                                  ref::lora_count(cfg, r, ref::parse_lora_targets(targets)).trainable};
    const char* keys[3] = {"params", "params_active", "lora"};
    nlohmann::json row = nlohmann::json::object();
    for (int i = 0; i < 3; ++i) {
      const auto t = theirs.at(keys[i]).get<std::int64_t>();
      differ += mine[i] != t;
      row[keys[i]] = mine[i] == t ? nlohmann::json(t) : nlohmann::json({{"ledger", mine[i]}, {"transformers", t}});
    }
    shown[name] = row;
  }
  ctx.measure("families_vs_transformers", differ, "count");
  ctx.detail("families_vs_transformers",
             {{"transformers", pc.at("details").value("transformers", "")}, {"configs", shown}});
}

static void qwen_params_built(claimcheck::Context& ctx) {
  if (ctx.wants("families_vs_transformers")) families_vs_transformers(ctx);
#if CLAIMCHECK_WITH_TORCH
  if (ctx.wants_any({"built", "built_exact", "built_minus_config", "init_as_transformers",
                     "init_std_vs_config"})) {  // all but a planted-fault run's subset
    ch05::refuse_beyond_memory(ctx, ctx.input_path("config"));
    const std::int64_t ledger = ref::count_params(ref::load_model_config(ctx.input_path("config"))).total();
    const auto m = claimcheck::train::qwen_lora_measure(ctx.input_path("config"), {16, 32, {"q_proj"}}, ctx.seed(), 8,
                                                        ctx.planted_fault());
    ctx.measure("built", static_cast<double>(m.params), "params");  // the harness converts to the stated M params
    ctx.measure("built_exact", static_cast<double>(m.params), "params");
    ctx.measure("built_minus_config", static_cast<double>(m.params - ledger), "params");
    ctx.detail("build_seconds", m.build_seconds);
    // The model as drawn against transformers' _init_weights for this config (read here from config.json): norm
    // gains 1 and biases 0 (their largest departure), matrices N(0, initializer_range) (their standard deviation
    // over initializer_range; transformers' Qwen2Config defaults it to 0.02).
    const nlohmann::json cfg = checks::read_config_json(ctx.input_path("config"));
    const double range = cfg.contains("initializer_range") && cfg["initializer_range"].is_number()
                             ? cfg["initializer_range"].get<double>()
                             : 0.02;
    ctx.measure("init_as_transformers", std::max(m.init_norm_max_dev, m.init_bias_max_abs), "abs error");
    ctx.measure("init_std_vs_config", m.init_matrix_std / range, "ratio");
  }
  // The same count where the heads' width is set apart from the hidden size (inputs.wide_heads_overrides: head_dim
  // 32 on the scaled config, so q_proj is 14 x 32 = 448 wide for a hidden of 224): Qwen2.5's own heads x head_dim is
  // its hidden size, which hides a q or o width read as the hidden size on either side.
  if (ctx.wants("built_minus_config_wide_heads")) {
    claimcheck::ScratchDir dir("qwen_wide_heads");
    const auto [wide, wc] = checks::wide_heads_config(ctx, "config", "wide_heads_overrides", dir.path());
    const auto w = claimcheck::train::qwen_lora_measure(wide, {16, 32, {"q_proj"}}, ctx.seed(), 8, ctx.planted_fault());
    ctx.measure("built_minus_config_wide_heads", static_cast<double>(w.params - ref::count_params(wc).total()),
                "params");
  }
  // The same code's model, scaled down, against transformers' Qwen2ForCausalLM.
  checks::decoder_vs_transformers(ctx, "config", "reference_overrides", "reference_long");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(qwen_params_built).claim("ch05.qwen_params").part("measured");
