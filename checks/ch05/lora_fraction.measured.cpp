// ch05.lora_fraction, measured part: requires_grad parameters of the LibTorch-built Qwen2.5-0.5B after the project's
// LoRA wraps the targets (inputs.lora), over the built model's parameters.
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "qwen_lora.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "claimcheck/ref/ledger.h"

#if CLAIMCHECK_WITH_TORCH
#include "../decoder_vs_transformers.h"
#endif

static void lora_fraction_built(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  if (ctx.wants_any({"built_fraction", "built_trainable"})) {  // all but a planted-fault run's subset
    const auto m = ch05::measure_qwen_lora(ctx);
    ctx.measure("built_fraction", 100.0 * static_cast<double>(m.trainable) / static_cast<double>(m.params), "%");
    ctx.measure("built_trainable", static_cast<double>(m.trainable) / 1e6, "M params");
  }
  // The answer key's LoRA count for the other spellings of target_modules (inputs.spellings: "all-linear", a regular
  // expression) on the scaled config, against peft's get_peft_model on transformers' model: each a ratio.
  if (ctx.wants_any({"all_linear_vs_peft", "regex_vs_peft", "regex_whole_name_vs_peft"})) {
    claimcheck::ScratchDir sdir("lora_spellings");
    const auto cfg_path = checks::scaled_config(ctx, "config", "reference_overrides", sdir.path()).first;
    const int r = ch05::lora_spec(ctx).r;
    const nlohmann::json& spellings = ctx.input("spellings");
    std::vector<std::string> args = {"peft_counts", "--config", cfg_path.string(), "--r", std::to_string(r)};
    for (const auto& [name, s] : spellings.items()) args.push_back("--spelling"), args.push_back(s.get<std::string>());
    const nlohmann::json pc = claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py", args);
    if (pc.contains("skip")) {
      ctx.pending("LoRA spellings against peft: " + pc["skip"].get<std::string>());
    } else {
      const auto cfg = claimcheck::ref::load_model_config(cfg_path);
      nlohmann::json shown = nlohmann::json::object();
      for (const auto& [name, s] : spellings.items()) {
        const std::string spelling = s.get<std::string>();
        const double ledger = static_cast<double>(
            claimcheck::ref::lora_count(cfg, r, claimcheck::ref::parse_lora_targets(spelling)).trainable);
        const double peft = pc.at("details").at("peft_counts").at(spelling).get<double>();
        ctx.measure(name, peft > 0 ? ledger / peft : INFINITY, "ratio");
        shown[spelling] = {{"ledger", ledger}, {"peft", peft}};
      }
      ctx.detail("lora_spellings", shown);
    }
  }
  // The same LoRA placed on the whole model, against peft's get_peft_model on transformers' model (the config scaled
  // by inputs.reference_overrides): the modules adapted, the trainable count, then with the same weights and
  // adapters the logits, the loss, every adapter's gradient and one AdamW step.
  if (!ctx.wants_any({"peft_model_modules_mismatch", "peft_model_trainable_ratio", "peft_model_vs_project",
                      "peft_model_step_over_lr", "peft_model_optimizer_mismatch", "peft_model_merge_unmerge",
                      "peft_model_saved_adapter", "peft_model_unmerged_weights"}))
    return;
  claimcheck::ScratchDir dir("lora_vs_peft_model");
  const auto scaled = checks::scaled_config(ctx, "config", "reference_overrides", dir.path()).first;
  const auto spec = ch05::lora_spec(ctx);
  const auto& adamw = ctx.input("reference_adamw");
  const double lr = adamw.at("lr").get<double>(), wd = adamw.at("weight_decay").get<double>();
  const auto e = claimcheck::train::export_lora_model_run(scaled, spec, lr, wd, ctx.seed(), 2, 24, dir.path() / "run",
                                                          ctx.planted_fault());
  std::string targets;
  for (const auto& t : spec.targets) targets += (targets.empty() ? "" : ",") + t;
  const nlohmann::json r =
      claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py",
                                    {"peft_model", "--config", scaled.string(), "--dir", (dir.path() / "run").string(),
                                     "--r", std::to_string(spec.r), "--alpha", ch05::exact(spec.alpha), "--targets",
                                     targets, "--lr", ch05::exact(lr), "--weight-decay", ch05::exact(wd)});
  if (r.contains("skip"))
    ctx.pending("LoRA on the model against peft: " + r["skip"].get<std::string>());
  else
    claimcheck::forward_driver_result(ctx, r);
  ctx.detail("lora_model_export", {{"adapted_modules", e.adapted}, {"trainable", e.trainable}});
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(lora_fraction_built).claim("ch05.lora_fraction").part("measured");
