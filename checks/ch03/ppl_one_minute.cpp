// ch03.ppl_one_minute — 「一分钟 PPL 128 → 9.6」
// The twenty-line loop on real English text (Debian's fortunes) for a fixed step budget on this CPU:
// perplexity starts near V and must fall below the bound in expected/; wall time and tokens/s reported.
#include <cmath>
#include <cstdio>
#include <vector>
#include "../tiny_shape.h"
#include "claimcheck/base/sha256.h"
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

// The characters a run trained on, hashed for the answer key's split.
static std::string train_sha256(const std::vector<std::uint8_t>& text) {
  claimcheck::Sha256 h;
  h.update(text.data(), text.size());
  return h.hex();
}

static void ppl_one_minute(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace T = claimcheck::train;
  // Prepare.
  const auto corpus = T::load_fortunes_corpus(ctx.input_path("corpus"), ctx.planted_fault());
  const T::TinyConfig c = T::tiny_model_config(ctx.planted_fault());
  // The series' model (inputs.model), for the answer key's: the code's own sizes are the code's, and a size it
  // changes shows as the two models' parameters parting.
  const T::TinyConfig series = tiny_config_input(ctx, "model");
  T::TrainOptions o;
  o.steps = ctx.input("steps").get<long>();
  o.batch = ctx.input("batch").get<int>();
  o.schedule = {ctx.input("lr").get<double>(), ctx.input("lr").get<double>() / 10, o.steps / 10, o.steps};
  o.eval_batches = ctx.input("eval_batches").get<int>();
  o.seed = ctx.seed();
  o.fault = ctx.planted_fault();
  o.checkpoint = ctx.keep_file("tiny-gpt.pt").string();  // the run's checkpoint: hashed into the logs record
  // The run's first steps, exported for the answer key's PyTorch reference (reference/python/char_reference.py).
  claimcheck::ScratchDir dir("char_reference");
  o.export_dir = dir.path();
  o.export_steps = ctx.input("reference_steps").get<int>();
  // The loop's weight decay and clip as the series gives them, for the answer key's loop (the code's own are the
  // code's: a wrong default shows as the two loops parting).
  const double weight_decay = ctx.input("weight_decay").get<double>(), clip = ctx.input("clip").get<double>();
  // Run.
  const T::TrainResult r = T::train_tiny(c, corpus, o);
  // The model, its windows, its loss and the loop against PyTorch written apart, on what this run exported.
  char lr[160];
  std::snprintf(lr, sizeof lr, "%.17g:%.17g:%ld:%ld", o.schedule.base_lr, o.schedule.min_lr, o.schedule.warmup_steps,
                o.schedule.total_steps);
  const nlohmann::json ref = claimcheck::run_python_driver(
      ctx, "reference/python/char_reference.py", {"--dir",          dir.path().string(),
                                                  "--corpus",       ctx.input_path("corpus").string(),
                                                  "--heads",        std::to_string(series.n_head),
                                                  "--vocab",        std::to_string(series.vocab),
                                                  "--context",      std::to_string(series.context),
                                                  "--d-model",      std::to_string(series.d_model),
                                                  "--d-ff",         std::to_string(series.d_ff),
                                                  "--layers",       std::to_string(series.n_layer),
                                                  "--weight-decay", std::to_string(weight_decay),
                                                  "--clip",         std::to_string(clip),
                                                  "--eval-batch",   std::to_string(o.batch),
                                                  "--batch",        std::to_string(o.batch),
                                                  "--checkpoint",   o.checkpoint,
                                                  "--lr",           lr,
                                                  "--train-chars",  std::to_string(corpus.train.size()),
                                                  "--train-sha256", train_sha256(corpus.train),
                                                  "--eval-rows",    std::to_string(o.eval_batches * o.batch)});
  // Verify.
  ctx.measure(r.eval_ppl.back(), "ppl");
  ctx.measure("start", r.eval_ppl.front(), "ppl");
  ctx.derive("vocab", series.vocab, "ppl");
  ctx.measure("seconds", r.seconds, "s");
  ctx.measure("tokens_per_s", r.tokens_per_s, "token/s");
  // The rate the run reports against the tokens the loop was given (steps x batch x context) over its seconds.
  ctx.measure("tokens_per_s_vs_steps",
              r.tokens_per_s * r.seconds / (static_cast<double>(o.steps) * o.batch * c.context), "ratio");
  if (ref.contains("skip"))
    ctx.pending("the model against PyTorch: " + ref["skip"].get<std::string>());
  else
    claimcheck::forward_driver_result(ctx, ref);
  ctx.detail("data_revision", {{"source", corpus.source}, {"files", corpus.files}, {"sha256", corpus.sha256}});
  std::vector<double> eval_loss, eval_x;  // the validation perplexity on the loss axis (ln ppl), from step 1 (log x)
  for (std::size_t i = 0; i < r.eval_ppl.size() && i < r.eval_steps.size(); ++i)
    if (r.eval_steps[i] >= 1)
      eval_x.push_back(static_cast<double>(r.eval_steps[i])), eval_loss.push_back(std::log(r.eval_ppl[i]));
  ctx.detail("curve", {{"title", "ch03 tiny Transformer: training loss and validation loss (ln of its perplexity)"},
                       {"x_label", "step"},
                       {"y_label", "loss (nats)"},
                       {"log_x", true},
                       {"statement", "value"},  // the stated perplexity, drawn as its log on the loss axis
                       {"map", "ln"},
                       {"series",
                        {{{"name", "training loss"}, {"y", r.losses}},
                         {{"name", "validation (ln ppl)"}, {"x", eval_x}, {"y", eval_loss}}}}});
  ctx.detail("eval", {{"steps", r.eval_steps}, {"ppl", r.eval_ppl}});
  ctx.assumption(
      std::to_string(o.steps) + " AdamW steps of " + std::to_string(o.batch) + " x " + std::to_string(c.context) +
      " characters, warmup + cosine, clip " + std::to_string(clip) + ", weight decay " + std::to_string(weight_decay) +
      " (the answer key's loop; the code's own: " + std::to_string(o.clip) + ", " + std::to_string(o.weight_decay) +
      "); "
      "the author's minute was on other hardware: the law is the fall, not the digits");
#endif
}
CLAIMCHECK_REGISTER(ppl_one_minute).claim("ch03.ppl_one_minute").derives("vocab", claimcheck::Source::reference);
