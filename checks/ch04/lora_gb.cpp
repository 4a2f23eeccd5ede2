// ch04.lora_gb — 「LoRA：底座 bf16 16 GB + 14 字节 × 42M = 16.7 GB」 (Llama-3-8B, r = 16)
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void lora_gb(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const nlohmann::json& lora = ctx.input("lora");
  const auto trainable = static_cast<double>(
      ref::lora_trainable(cfg, lora.at("r").get<int>(), lora.at("targets").get<std::vector<std::string>>()));

  // Run: frozen base in bf16 + the adapter's training state per trainable parameter.
  const double base = static_cast<double>(ref::count_params(cfg).total()) * ref::dtype_bytes("bf16");
  const double adapter_bpp = static_cast<double>(ref::bytes_per_param(ref::lora_adapter_state()));
  const double total = base + adapter_bpp * trainable;

  // Verify.
  ctx.measure(ref::gigabytes(total), "GB");
  ctx.derive("base_part", ref::gigabytes(base), "GB");  // the two parts the series adds, each rounded to 0.01 GB
  ctx.derive("adapter_part", ref::gigabytes(adapter_bpp * trainable), "GB");
  ctx.measure("base", ref::gigabytes(base), "GB");
  ctx.measure("adapter_bytes_per_param", adapter_bpp, "B");
  ctx.assumption("frozen base weights in bf16, no gradient or optimizer state for them");
  ctx.assumption("adapter parameters: 16 bytes less the bf16 copy = gradient 2 + fp32 master 4 + Adam m, v 8");
  ctx.alternative("the series' arithmetic: parts rounded to 0.01 GB, then added",
                  std::round(base / 1e7) / 100 + std::round(adapter_bpp * trainable / 1e7) / 100, "GB",
                  "16.06 + 0.59 = 16.65, which rounds up to the stated 16.7");
  ctx.alternative("adapter at the full 16 B/param", (base + 16 * trainable) / 1e9, "GB",
                  "if the adapter also keeps a bf16 copy");
}
CLAIMCHECK_REGISTER(lora_gb)
    .claim("ch04.lora_gb")
    .derives("base_part", claimcheck::Source::reference)
    .derives("adapter_part", claimcheck::Source::reference);
