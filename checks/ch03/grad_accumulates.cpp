// ch03.grad_accumulates — 「loss.backward() 梯度是【累加】的；不 zero_grad 不是 bug 就是梯度累积」
// Two backwards = twice the gradient; k micro-batches of loss/k = one big batch's gradient.
#include <algorithm>

#include "claimcheck/check.h"
#include "claimcheck/train/experiments.h"

static void grad_accumulates(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  const auto r = claimcheck::train::grad_accumulation(ctx.seed(), 4, ctx.planted_fault());
  ctx.measure(std::max(r.two_backwards_err, r.microbatch_err) / r.grad_scale, "ratio");
  ctx.measure("two_backwards", r.two_backwards_err / r.grad_scale, "ratio");
  ctx.measure("micro_batches", r.microbatch_err / r.grad_scale, "ratio");
  ctx.assumption("errors relative to the largest gradient entry; fp32; 4 micro-batches of a batch of 8");
#endif
}
CLAIMCHECK_REGISTER(grad_accumulates).claim("ch03.grad_accumulates");
