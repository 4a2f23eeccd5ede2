// ch05.loss_mask — 「SFTTrainer(...)  # loss mask = ignore_index=-100」
// The loss over ChatML-rendered conversations equals the mean over the answer tokens only, and the masked
// positions get exactly zero gradient.
#include "claimcheck/check.h"
#include "claimcheck/train/chat.h"
#include "claimcheck/train/experiments.h"

static void loss_mask(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const auto convs = claimcheck::train::load_conversations(ctx.input_path("conversations"));
  const auto r = claimcheck::train::loss_mask(convs, ctx.seed(), ctx.planted_fault());
  ctx.measure(r.loss_err, "abs error");
  ctx.measure("masked_grad", r.masked_grad_max, "abs error");
  ctx.measure("unmasked_grad", r.unmasked_grad_max, "abs error");
  ctx.assumption("labels built by the project's template code; the reference mean is computed in fp64 from the "
                 "intended mask; random logits over the 258-token byte vocabulary");
#endif
}
CLAIMCHECK_REGISTER(loss_mask).claim("ch05.loss_mask").needs(claimcheck::Requirement::libtorch);
