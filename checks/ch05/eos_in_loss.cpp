// ch05.eos_in_loss — 「0.5B 上答案对了却不会停——结束符要进 loss」
// Train twice, with and without <|im_end|> among the targets, then generate greedily from held-out prompts:
// the first stops in most generations, the second in few.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "claimcheck/check.h"
#include "claimcheck/ref/chat.h"
#include "claimcheck/train/chat.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void eos_in_loss(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace T = claimcheck::train;
  const auto train = T::arithmetic_conversations(ctx.input("conversations").get<int>(), ctx.seed());
  const auto held_out = T::arithmetic_conversations(ctx.input("held_out").get<int>(), ctx.seed() + 1);
  // The prompts generation starts from, against the answer key's ChatML rendering (reference/src/chat_ref.cpp) of
  // each held-out conversation without its answer, then "<|im_start|>assistant\n": a prompt that kept the answer
  // would let a model trained with the end token copy it and stop, one trained without it still run on.
  long mismatched = 0;
  for (const auto& c : held_out) {
    std::vector<std::pair<std::string, std::string>> head;
    for (const auto& m : c)
      if (m.role != "assistant") head.emplace_back(m.role, m.content);
    std::vector<std::int64_t> want = claimcheck::ref::chatml_targets({head}).at(0).tokens;
    want.push_back(claimcheck::ref::kChatStartId);  // <|im_start|>, the byte-level stand-in's first marker
    for (unsigned char ch : std::string("assistant\n")) want.push_back(ch);
    mismatched += T::encode_prompt(c, ctx.planted_fault()) != want;
  }
  ctx.measure("prompts_not_chatml", static_cast<double>(mismatched), "count");
  if (!ctx.wants_any({"value", "without", "tokens_after_end"}))
    return;  // (a planted-fault run that judges the prompts alone)
  T::SftOptions o;
  o.steps = ctx.input("steps").get<int>();
  o.lr = ctx.input("lr").get<double>();
  o.seed = ctx.seed();
  o.generate = static_cast<int>(held_out.size());
  o.fault = ctx.planted_fault();
  o.eos_in_loss = ctx.planted_fault() != "eos_masked";  // a planted fault masks it in the first run too
  const auto with = T::sft_train(train, held_out, o);
  o.eos_in_loss = false;
  const auto without = T::sft_train(train, held_out, o);
  ctx.measure(with.stop_rate, "ratio");
  ctx.measure("without", without.stop_rate, "ratio");
  // A generation ends at its first <|im_end|> (the answer key's marker id): no token after it, in either run.
  long after_end = 0;
  for (const auto* run : {&with, &without})
    for (const auto& g : run->generations) {
      const auto end = std::find(g.begin(), g.end(), claimcheck::ref::kChatEndId);
      if (end != g.end()) after_end += static_cast<long>(g.end() - end) - 1;
    }
  ctx.measure("tokens_after_end", static_cast<double>(after_end), "count");
  ctx.detail("samples_with_end_token_in_loss", with.samples);
  ctx.detail("samples_without", without.samples);
  ctx.detail("final_loss", {{"with", with.losses.back()}, {"without", without.losses.back()}});
  ctx.assumption("greedy decoding, at most 48 new tokens; a generation stops when it emits <|im_end|>");
#endif
}
CLAIMCHECK_REGISTER(eos_in_loss).claim("ch05.eos_in_loss");
