// ch05.loss_mask — 「SFTTrainer(...)  # loss mask = ignore_index=-100」
// The project's chat template, batching and loss against the answer key: the conversations rendered with Qwen2.5's
// own chat template (reference/python/chat_template.py: jinja2 as transformers' apply_chat_template renders it), the
// answer spans derived from that rendering turn by turn, and the loss computed from those targets alone
// (ref::masked_mean_nll, fp64) on the logits the project's loss saw. The labels must be those targets, the loss
// their mean, and every position the targets do not look at (padding included) must get exactly zero gradient.
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/chat.h"
#include "claimcheck/train/chat.h"
#include "claimcheck/train/experiments.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

static void loss_mask(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // Prepare: the conversations as the project reads them, and the answer key's tokens and targets for the same file.
  const auto convs = claimcheck::train::load_conversations(ctx.input_path("conversations"));
  const nlohmann::json key = claimcheck::run_python_driver(
      ctx, "reference/python/chat_template.py",
      {"--template", ctx.input_path("template").string(), "--conversations", ctx.input_path("conversations").string()});
  if (key.contains("skip")) ctx.skip(key["skip"].get<std::string>());
  const auto& rendered = key.at("conversations");
  if (rendered.size() != convs.size())
    throw std::runtime_error("ch05.loss_mask: the answer key rendered " + std::to_string(rendered.size()) +
                             " conversations, the project read " + std::to_string(convs.size()));
  std::vector<std::vector<std::int64_t>> tokens, targets;
  for (const auto& c : rendered) {
    tokens.push_back(c.at("tokens").get<std::vector<std::int64_t>>());
    targets.push_back(c.at("targets").get<std::vector<std::int64_t>>());
  }
  // Run: the project's template, batch and loss.
  const auto r = claimcheck::train::loss_mask(convs, ctx.seed(), ctx.planted_fault());
  // Verify: token by token, label by label, then the loss and the gradient.
  long token_mismatches = 0, label_mismatches = 0, positions = 0, padded = 0, multi_turn = 0;
  std::size_t longest = 0, shortest = SIZE_MAX;
  for (std::size_t i = 0; i < convs.size(); ++i) {
    const auto& a = r.tokens[i];
    const auto& b = tokens[i];
    const std::size_t n = std::min(a.size(), b.size());
    token_mismatches += static_cast<long>(std::max(a.size(), b.size()) - n);
    for (std::size_t p = 0; p < n; ++p) {
      token_mismatches += a[p] != b[p];
      label_mismatches += a[p] == b[p] && r.labels[i][p] != targets[i][p];
    }
    positions += static_cast<long>(b.size());
    longest = std::max(longest, b.size());
    shortest = std::min(shortest, b.size());
    multi_turn += rendered[i].at("answers").get<int>() > 1;
  }
  for (const auto& b : tokens) padded += b.size() < longest;
  const auto nll = claimcheck::ref::masked_mean_nll(r.logits, r.rows, r.positions, r.vocab, targets);
  double masked_grad = 0, unmasked_min = INFINITY;
  for (std::int64_t i = 0; i < r.rows; ++i)
    for (std::int64_t t = 0; t < r.positions; ++t) {
      const double g = r.grad_max[static_cast<std::size_t>(i * r.positions + t)];
      if (nll.looks[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)])
        unmasked_min = std::min(unmasked_min, g);
      else
        masked_grad = std::max(masked_grad, g);
    }
  ctx.measure(std::fabs(r.loss - nll.mean), "abs error");
  ctx.measure("token_mismatches", static_cast<double>(token_mismatches), "count");
  ctx.measure("label_mismatches", static_cast<double>(label_mismatches), "count");
  ctx.measure("masked_grad", masked_grad, "abs error");
  ctx.measure("unmasked_grad_min", unmasked_min, "abs error");
  // The same batch cut as SFT's batches are, to a context shorter than the longest conversation: each row to its
  // first context + 1 tokens, context input positions; its loss against the answer key's over those positions.
  const int context = ctx.input("truncated_context").get<int>();
  if (context <= 0 || static_cast<std::size_t>(context) + 1 >= longest)
    throw std::invalid_argument("ch05.loss_mask: field 'inputs.truncated_context': " + std::to_string(context) +
                                " must be positive and cut the longest conversation (" + std::to_string(longest) +
                                " tokens)");
  const auto cut = claimcheck::train::loss_mask(convs, ctx.seed(), ctx.planted_fault(), context);
  ctx.measure_bool("truncated_to_context", cut.positions == context && cut.rows == r.rows);
  const auto cut_nll = claimcheck::ref::masked_mean_nll(cut.logits, cut.rows, cut.positions, cut.vocab, targets);
  if (cut_nll.count == 0)
    throw std::invalid_argument("ch05.loss_mask: field 'inputs.truncated_context': " + std::to_string(context) +
                                " tokens keep no answer token of any conversation (the prompts alone are longer)");
  ctx.measure("truncated_loss", std::fabs(cut.loss - cut_nll.mean), "abs error");
  ctx.detail("truncated", {{"context", context}, {"positions", cut.positions}, {"targets", cut_nll.count}});
  ctx.detail("positions", positions);
  ctx.detail("targets", nll.count);
  ctx.detail("loss", {{"project", r.loss}, {"answer_key", nll.mean}});
  ctx.detail("batch", {{"rows", r.rows},
                       {"positions", r.positions},
                       {"padded_rows", padded},
                       {"longest", longest},
                       {"shortest", shortest},
                       {"multi_turn", multi_turn}});
  ctx.detail("template", key.value("details", nlohmann::json::object()));
  ctx.assumption(
      "targets from Qwen2.5's own chat template (reference/data/chat), rendered by jinja2 as transformers "
      "does; answers found turn by turn (each answer's content and its <|im_end|>); the text tokenised as "
      "bytes plus <|im_start|> and <|im_end|>; random logits over the 258-token vocabulary; the reference "
      "mean in fp64 from the targets alone");
#endif
}
CLAIMCHECK_REGISTER(loss_mask).claim("ch05.loss_mask");
