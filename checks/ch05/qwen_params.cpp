// ch05.qwen_params — 「Qwen2.5-0.5B：494M 参数」
// Analytic part: the ledger's count from the config. Measured part: the count on the decoder built in LibTorch by
// the code under test, which reads the same config.json itself (it shares no code with the ledger):
// qwen_params.measured.cpp. Both are also
// compared with the published count of the checkpoint (expected file).
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void qwen_params(claimcheck::Context& ctx) {
  // Prepare.
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));

  // Run.
  const ref::ParamCount p = ref::count_params(cfg);

  // Verify.
  ctx.measure(static_cast<double>(p.total()) / 1e6, "M params");
  ctx.measure("exact", static_cast<double>(p.total()), "params");
  ctx.detail("breakdown", {{"embedding (tied with lm_head)", p.embedding},
                           {"per_layer", p.per_layer()},
                           {"layers", p.layers},
                           {"final_norm", p.final_norm}});
  ctx.assumption("tied embeddings count once; q/k/v biases included (Qwen2)");
  ctx.alternative("non-embedding parameters", static_cast<double>(p.total() - p.embedding) / 1e6, "M params",
                  "what the model card calls non-embedding");

  // The same ledger on the other families the shipped configs hold, against their published counts: a family
  // whose config leaves the tied embedding to transformers' default (Gemma), and two mixtures of experts (the
  // parameters in total and those one token is routed through).
  const nlohmann::json& fam = ctx.input("families");
  auto count = [&](const char* key) {
    return ref::count_params(ref::load_model_config(ctx.root() / fam.at(key).get<std::string>()));
  };
  const ref::ParamCount gemma = count("gemma_2b"), mixtral = count("mixtral_8x7b"), qmoe = count("qwen1_5_moe_a2_7b");
  ctx.measure("gemma_2b_exact", static_cast<double>(gemma.total()), "params");
  ctx.measure("mixtral_8x7b_exact", static_cast<double>(mixtral.total()), "params");
  ctx.measure("mixtral_8x7b_active", static_cast<double>(mixtral.active()) / 1e9, "B params");
  ctx.measure("qwen1_5_moe_total", static_cast<double>(qmoe.total()) / 1e9, "B params");
  ctx.measure("qwen1_5_moe_active", static_cast<double>(qmoe.active()) / 1e9, "B params");
}
CLAIMCHECK_REGISTER(qwen_params).claim("ch05.qwen_params");
