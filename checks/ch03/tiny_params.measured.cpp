// ch03.tiny_params, measured part: the project's tiny character Transformer (the one ch03's training runs use),
// counted on the built LibTorch module.
#include <string>
#include <tuple>

#include "claimcheck/check.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "../tiny_shape.h"
#include "claimcheck/train/experiments.h"
#include "claimcheck/train/qwen.h"
#endif

static void tiny_params_built(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // The series' sizes (inputs.model), read before any work; the training runs' model: V = 128, d = 128, 4 layers,
  // d_ff = 512.
  const claimcheck::train::TinyConfig series = tiny_config_input(ctx, "model");
  const claimcheck::train::TinyConfig c = claimcheck::train::tiny_model_config(ctx.planted_fault());
  const auto built = static_cast<double>(claimcheck::train::tiny_param_count(c, ctx.planted_fault()));
  ctx.measure("built", built / 1e3, "K params");
  // That model's sizes against the series' (inputs.model): a size the code changes (a byte vocabulary, a shorter
  // context, more heads, which moves no parameter) is a model the series does not describe.
  std::string differ;
  int mismatches = 0;
  for (const auto& [name, a, b] : {std::tuple{"vocab", c.vocab, series.vocab},
                                   {"d_model", c.d_model, series.d_model},
                                   {"n_layer", c.n_layer, series.n_layer},
                                   {"n_head", c.n_head, series.n_head},
                                   {"d_ff", c.d_ff, series.d_ff},
                                   {"context", c.context, series.context}})
    if (a != b) {
      ++mismatches;
      differ += (differ.empty() ? "" : ", ") + std::string(name) + " " + std::to_string(a) + " (series " +
                std::to_string(b) + ")";
    }
  ctx.measure("config_mismatches", mismatches, "count");
  if (!differ.empty()) ctx.detail("config_mismatches", differ);
  // The module against the answer key's formula for the module's own shape, to the parameter: a term the ledger
  // drops or the module adds moves the count by less than the round 840K's 5%.
  ctx.measure("built_minus_ledger", built - static_cast<double>(claimcheck::ref::gpt_params(gpt_shape_of(c))),
              "params");
  // The same on chapter 5's SFT model (258 tokens, a context of 256, 2 layers), where the vocabulary, the context and
  // the width are three sizes: a term counted by the wrong one (positions by the vocabulary) shows there, not at
  // 128 = 128 = 128.
  const claimcheck::train::TinyConfig sft = claimcheck::train::sft_model_config();
  ctx.measure("built_minus_ledger_sft",
              static_cast<double>(claimcheck::train::tiny_param_count(sft, ctx.planted_fault())) -
                  static_cast<double>(claimcheck::ref::gpt_params(gpt_shape_of(sft))),
              "params");
  // And on a shape whose every size differs from the others (inputs.odd_model: d_ff not 4 d, heads not layers, the
  // context not the vocabulary): a size read for another shows here.
  const claimcheck::train::TinyConfig odd = tiny_config_input(ctx, "odd_model");
  ctx.measure("built_minus_ledger_odd",
              static_cast<double>(claimcheck::train::tiny_param_count(odd, ctx.planted_fault())) -
                  static_cast<double>(claimcheck::ref::gpt_params(gpt_shape_of(odd))),
              "params");
  ctx.detail("built_config", {{"vocab", c.vocab},
                              {"d_model", c.d_model},
                              {"n_layer", c.n_layer},
                              {"n_head", c.n_head},
                              {"d_ff", c.d_ff},
                              {"context", c.context}});
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(tiny_params_built).claim("ch03.tiny_params").part("measured");
