// ch05.training_state_mb — 「训练状态 141 MB——CPU 都能微调」 (Qwen2.5-0.5B LoRA r = 16: 16 B x trainable)
// Measured part: training_state_mb.measured.cpp.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void training_state_mb(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const nlohmann::json& lora = ctx.input("lora");
  const auto trainable = static_cast<double>(
      ref::lora_trainable(cfg, lora.at("r").get<int>(), lora.at("targets").get<std::vector<std::string>>()));

  // Run.
  const auto bpp = static_cast<double>(ref::bytes_per_param(ref::mixed_precision_adamw_state()));

  // Verify.
  ctx.measure(ref::megabytes(bpp * trainable), "MB");
  ctx.assumption("16 B per trainable parameter (ch04.bytes_per_param), MB = 10^6 bytes; the frozen base is not state");
  ctx.alternative("14 B per adapter parameter (ch04.lora_gb's convention)",
                  static_cast<double>(ref::bytes_per_param(ref::lora_adapter_state())) * trainable / 1e6, "MB",
                  "no bf16 copy of the adapter");
  ctx.alternative("fp32 AdamW on CPU (weights, grads, m, v in fp32)", 16 * trainable / 1e6, "MB",
                  "also 16 B: the figure does not depend on mixed precision");
}
CLAIMCHECK_REGISTER(training_state_mb).claim("ch05.training_state_mb");
