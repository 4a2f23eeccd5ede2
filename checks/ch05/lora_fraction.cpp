// ch05.lora_fraction — 「Qwen2.5-0.5B：可训练 8.80M（1.78%）」 (r = 16)
// States which denominator 1.78 % uses: the base model's parameters. Measured part: lora_fraction.measured.cpp.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void lora_fraction(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const nlohmann::json& lora = ctx.input("lora");

  // Run.
  const auto trainable = static_cast<double>(
      ref::lora_trainable(cfg, lora.at("r").get<int>(), lora.at("targets").get<std::vector<std::string>>()));
  const auto base = static_cast<double>(ref::count_params(cfg).total());

  // Verify.
  ctx.measure(trainable / base, "ratio");  // the harness converts to the stated %
  ctx.measure("trainable", trainable / 1e6, "M params");
  ctx.assumption("LoRA r = " + std::to_string(lora.at("r").get<int>()) +
                 " on all seven linear projections; denominator = the base model's parameters");
  ctx.alternative("denominator = base + adapter (PEFT's print_trainable_parameters)",
                  100.0 * trainable / (base + trainable), "%", "PEFT counts the adapter in 'all params'");
}
CLAIMCHECK_REGISTER(lora_fraction).claim("ch05.lora_fraction");
