// ch03.tiny_params — 「84 万参数的小 Transformer，V = 128」
// Analytic part: the count of the shape the expected file states (inputs.model), from the answer key's GPT-2-style
// formula. Measured part (tiny_params.measured.cpp): the project's tiny model as the training code builds it.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void tiny_params(claimcheck::Context& ctx) {
  // Prepare.
  const ref::GptShape s = ref::parse_gpt_shape(ctx.input("model").dump(), ctx.claim_id() + ": inputs.model");

  // Run.
  const auto n = static_cast<double>(ref::gpt_params(s));

  // Verify.
  ctx.measure(n / 1e3, "K params");
  ctx.assumption(
      "GPT-style pre-LN decoder: learned positions, LayerNorm with bias, biased Linear layers, untied "
      "lm_head without bias; the series gives only V and the total");
  ctx.alternative("lm_head tied to the token embedding", (n - static_cast<double>(s.vocab * s.d_model)) / 1e3,
                  "K params", "GPT-2's own choice");
}
CLAIMCHECK_REGISTER(tiny_params).claim("ch03.tiny_params");
