// ch03.tiny_params — 「84 万参数的小 Transformer，V = 128」
// The project's tiny character Transformer, counted on the built LibTorch module.
#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void tiny_params(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  claimcheck::train::TinyConfig c;  // V = 128, d = 128, 4 layers, 4 heads, d_ff = 512, context 128
  if (ctx.planted_fault() == "extra_layer") c.n_layer += 1;
  ctx.measure(static_cast<double>(claimcheck::train::tiny_param_count(c)) / 1e3, "K params");
  ctx.detail("config", {{"vocab", c.vocab}, {"d_model", c.d_model}, {"n_layer", c.n_layer}, {"n_head", c.n_head},
                        {"d_ff", c.d_ff}, {"context", c.context}, {"lm_head", "untied, no bias"}});
  ctx.assumption("GPT-style pre-LN decoder with learned positions; the series gives only V and the total");
#endif
}
CLAIMCHECK_REGISTER(tiny_params).claim("ch03.tiny_params").needs(claimcheck::Requirement::libtorch);
