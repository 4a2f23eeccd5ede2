// ch05.loss_mask — 「SFTTrainer(...)  # loss mask = ignore_index=-100」
// The project's template labels and its loss over ChatML-rendered conversations, against targets derived from
// the text in reference/ (the assistant contents' character spans in the rendered string): the labels must be
// those targets, the loss the fp64 mean over them, and the masked positions must get exactly zero gradient.
#include "claimcheck/check.h"
#include "claimcheck/ref/chat.h"
#include "claimcheck/train/chat.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void loss_mask(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // Prepare: the conversations as the project reads them, and the answer key's targets for the same file.
  const auto convs = claimcheck::train::load_conversations(ctx.input_path("conversations"));
  const auto want = claimcheck::ref::chatml_targets(ctx.input_path("conversations"));
  std::vector<std::vector<std::int64_t>> intended;
  for (const auto& t : want) intended.push_back(t.targets);
  // Run.
  const auto r = claimcheck::train::loss_mask(convs, intended, ctx.seed(), ctx.planted_fault());
  // Verify: position by position, then the loss and the gradient.
  long mismatches = 0, positions = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (r.tokens[i] != want[i].tokens)
      throw std::runtime_error("ch05.loss_mask: conversation " + std::to_string(i) + ": the template's tokens "
                               "differ from the rendered string's (the two sides no longer describe one text)");
    for (std::size_t p = 0; p < want[i].targets.size(); ++p) mismatches += r.labels[i][p] != want[i].targets[p];
    positions += static_cast<long>(want[i].targets.size());
  }
  ctx.measure(r.loss_err, "abs error");
  ctx.measure("label_mismatches", static_cast<double>(mismatches), "count");
  ctx.measure("masked_grad", r.masked_grad_max, "abs error");
  ctx.measure("unmasked_grad", r.unmasked_grad_max, "abs error");
  ctx.detail("positions", positions);
  ctx.assumption("targets from the text: ChatML rendered as a string, assistant contents found by character "
                 "offset, the string tokenised by scanning (reference/src/chat_ref.cpp); random logits over the "
                 "258-token byte vocabulary; the reference mean is computed in fp64");
#endif
}
CLAIMCHECK_REGISTER(loss_mask).claim("ch05.loss_mask").needs(claimcheck::Requirement::libtorch);
