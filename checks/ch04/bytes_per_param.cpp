// ch04.bytes_per_param — 「每个可训练参数 16 字节：bf16 副本 2 + 梯度 2 + fp32 主权重 4 + Adam m、v 4 + 4」
// The ledger of mixed-precision AdamW, summed from the dtypes each piece is held in.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void bytes_per_param(claimcheck::Context& ctx) {
  // Prepare: the pieces of state one trainable parameter carries, each with its dtype.
  const auto terms = ref::mixed_precision_adamw_state();

  // Run: bytes = sum of the dtypes' sizes.
  nlohmann::json breakdown = nlohmann::json::object();
  for (const auto& t : terms) breakdown[t.role] = ref::dtype_bytes(t.dtype);

  // Verify (against expected/ch04/bytes_per_param.json).
  ctx.measure(static_cast<double>(ref::bytes_per_param(terms)), "B");
  ctx.measure("lora_adapter", static_cast<double>(ref::bytes_per_param(ref::lora_adapter_state())), "B");
  // Which 2 bytes the adapter goes without: the bf16 copy (the series: the adapter stays in fp32 and is cast on the
  // fly), every other piece of the state kept, the gradient among them; another 2-byte piece dropped sums the same.
  // (The piece it drops, from the expected file: inputs.lora_adapter_drops.)
  const nlohmann::json& drops = ctx.input("lora_adapter_drops");
  if (!drops.is_string())
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.lora_adapter_drops': expected a role's name");
  std::vector<std::string> kept;
  for (const auto& t : terms)
    if (t.role != drops.get<std::string>()) kept.push_back(t.role);
  std::vector<std::string> adapter;
  for (const auto& t : ref::lora_adapter_state()) adapter.push_back(t.role);
  ctx.measure_bool("lora_adapter_without_bf16_copy", adapter == kept);
  ctx.detail("lora_adapter_roles", adapter);
  ctx.detail("breakdown_bytes", breakdown);
  ctx.assumption("bf16 autocast with an fp32 master copy; AdamW keeps m and v in fp32; gradients in bf16");
  ctx.alternative("pure fp32 training (fp32 weights, fp32 grads, AdamW m, v)", 16, "B",
                  "4 + 4 + 4 + 4: the same 16 bytes, without a bf16 copy");
}
CLAIMCHECK_REGISTER(bytes_per_param).claim("ch04.bytes_per_param");
