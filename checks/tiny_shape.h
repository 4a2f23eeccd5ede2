// Shared by the checks that hold chapter 3's model to the answer key (ch03.tiny_params, ch06.mfu): the shape the
// training code declares (train::TinyConfig), as the ledger's GPT shape.
#pragma once
#include <stdexcept>
#include <string>

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
  const nlohmann::json& j = ctx.input(key);
  const auto field = [&](const char* name) {
    if (!j.is_object() || !j.contains(name) || !j.at(name).is_number_integer() || j.at(name).get<long long>() < 1 ||
        j.at(name).get<long long>() > 4096)
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + key + "." + name +
                                  "': expected an integer from 1 to 4096");
    return j.at(name).get<int>();
  };
  claimcheck::train::TinyConfig c;
  c.vocab = field("vocab"), c.d_model = field("d_model"), c.n_layer = field("n_layer");
  c.n_head = field("n_head"), c.d_ff = field("d_ff"), c.context = field("context");
  if (c.d_model % c.n_head)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + key + ".n_head': does not divide d_model");
  return c;
}
