// ch04.lora_trainable — 「LoRA（r = 16，可训练 0.5%）：42M 可训练参数」 (Llama-3-8B)
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void lora_trainable(claimcheck::Context& ctx) {
  // Prepare: the model and the LoRA set-up (rank, target modules) from the expected file's inputs.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const nlohmann::json& lora = ctx.input("lora");
  const int r = lora.at("r").get<int>();
  const auto targets = lora.at("targets").get<std::vector<std::string>>();

  // Run: r x (in + out) per targeted linear, over all layers (the modules peft would adapt: a name that matches no
  // module of this model, as gate/up/down in Mixtral's fused experts, adapts nothing, said below).
  const ref::LoraCount count = ref::lora_count(cfg, r, ref::lora_targets_of(targets));
  const double trainable = static_cast<double>(count.trainable);
  const double base = static_cast<double>(ref::count_params(cfg).total());

  // Verify.
  ctx.measure(trainable / 1e6, "M params");
  ctx.measure("fraction", 100.0 * trainable / base, "%");
  std::string adapted, unmatched;
  for (const auto& m : count.modules) adapted += (adapted.empty() ? "" : ", ") + m;
  for (const auto& m : count.unmatched) unmatched += (unmatched.empty() ? "" : ", ") + m;
  ctx.assumption("LoRA, r = " + std::to_string(r) + ", on " + std::to_string(count.adapted_modules) +
                 " modules: " + adapted + " of every layer" +
                 (unmatched.empty() ? "" : "; " + unmatched + " match no module of this model and adapt nothing") +
                 "; the percentage is of the base model's parameters");
  ctx.alternative("attention only (q, k, v, o)",
                  static_cast<double>(ref::lora_trainable(cfg, r, {"q_proj", "k_proj", "v_proj", "o_proj"})) / 1e6,
                  "M params", "the original LoRA paper's choice");
  ctx.alternative("q and v only", static_cast<double>(ref::lora_trainable(cfg, r, {"q_proj", "v_proj"})) / 1e6,
                  "M params", "PEFT's default target_modules for Llama");
}
CLAIMCHECK_REGISTER(lora_trainable).claim("ch04.lora_trainable");
