// Shared by the checks that hold chapter 3's model to the answer key (ch03.tiny_params, ch06.mfu): the shape the
// training code declares (train::TinyConfig), as the ledger's GPT shape.
#pragma once
#include "claimcheck/ref/ledger.h"
#include "claimcheck/train/tiny.h"

inline claimcheck::ref::GptShape gpt_shape_of(const claimcheck::train::TinyConfig& c) {
  claimcheck::ref::GptShape s;
  s.vocab = c.vocab, s.d_model = c.d_model, s.n_layer = c.n_layer, s.n_head = c.n_head, s.d_ff = c.d_ff;
  s.context = c.context;
  return s;
}
