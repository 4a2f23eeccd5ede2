// ch05.sft_loss_drop — 「20 步 loss 5.3 → 1.7」
// 20 SFT steps of a small decoder on ChatML-rendered conversations: the loss over answer tokens falls steeply.
#include "claimcheck/check.h"
#include "claimcheck/train/chat.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void sft_loss_drop(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace T = claimcheck::train;
  const auto train = T::arithmetic_conversations(ctx.input("conversations").get<int>(), ctx.seed());
  T::SftOptions o;
  o.steps = ctx.input("steps").get<int>();
  o.lr = ctx.input("lr").get<double>();
  o.fault = ctx.planted_fault();
  o.seed = ctx.seed();
  const auto r = T::sft_train(train, {}, o);
  ctx.measure(r.losses.back(), "nats");
  ctx.measure("first", r.losses.front(), "nats");
  ctx.derive("first_loss", r.losses.front(), "nats");
  ctx.detail("curve", {{"title", "ch05 SFT: loss over answer tokens"}, {"x_label", "step"}, {"y_label", "loss (nats)"},
                       {"log_x", false}, {"series", {{{"name", "SFT loss"}, {"y", r.losses}}}}});
  ctx.assumption("a 2-layer decoder trained from scratch on generated Q&A (the series fine-tunes Qwen2.5-0.5B); "
                 "byte vocabulary of 258, so the first loss is about ln 258 = 5.55 (the series: 5.3)");
#endif
}
CLAIMCHECK_REGISTER(sft_loss_drop).claim("ch05.sft_loss_drop").needs(claimcheck::Requirement::libtorch);
