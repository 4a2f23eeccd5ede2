// Shared by the checks that hold chapter 3's model to the answer key (ch03.tiny_params, ch06.mfu): the shape the
// training code declares (train::TinyConfig), as the ledger's GPT shape.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>

#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/train/tiny.h"

#include <nlohmann/json.hpp>

inline claimcheck::ref::GptShape gpt_shape_of(const claimcheck::train::TinyConfig& c) {
  claimcheck::ref::GptShape s;
  s.vocab = c.vocab, s.d_model = c.d_model, s.n_layer = c.n_layer, s.n_head = c.n_head, s.d_ff = c.d_ff;
  s.context = c.context;
  return s;
}

// A shape of chapter 3's model from the expected file's inputs.<key> (vocab, d_model, n_layer, n_head, d_ff, context):
// one whose sizes all differ shows a size read for another, which chapter 3's 128 = 128 = 128 and 4 = 4 hide.
inline claimcheck::train::TinyConfig tiny_config_input(const claimcheck::Context& ctx, const std::string& key) {
  // The answer key's parser of a GPT shape (each size a positive integer, n_head dividing d_model), then a ceiling:
  // a model this check builds stays small.
  const claimcheck::ref::GptShape s =
      claimcheck::ref::parse_gpt_shape(ctx.input(key).dump(), ctx.claim_id() + ": inputs." + key);
  for (const auto& [name, v] : {std::pair{"vocab", s.vocab},
                                {"d_model", s.d_model},
                                {"n_layer", s.n_layer},
                                {"n_head", s.n_head},
                                {"d_ff", s.d_ff},
                                {"context", s.context}})
    if (v > 4096)
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + key + "." + name +
                                  "': expected an integer from 1 to 4096");
  claimcheck::train::TinyConfig c;
  c.vocab = static_cast<int>(s.vocab), c.d_model = static_cast<int>(s.d_model), c.n_layer = static_cast<int>(s.n_layer);
  c.n_head = static_cast<int>(s.n_head), c.d_ff = static_cast<int>(s.d_ff), c.context = static_cast<int>(s.context);
  return c;
}
