// ch03.warmup_cosine — 「学习率调度：warmup + cosine」
// The learning rate the twenty-line loop's optimizer held at every step of a short run (read from AdamW's parameter
// groups, not from the scheduler) against the schedule written from the series' description in reference/.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "claimcheck/check.h"
#include "claimcheck/ref/schedule.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void warmup_cosine(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace T = claimcheck::train;
  namespace ref = claimcheck::ref;
  // Prepare: the ch03 loop on a one-layer model over short windows (the schedule, not the model, is the claim), run
  // inputs.steps_past_total steps past the schedule's last, where the rate must stay at its floor.
  const double base = ctx.input("base_lr").get<double>(), floor = ctx.input("min_lr").get<double>();
  const long warmup = ctx.input("warmup").get<long>(), total = ctx.input("total").get<long>();
  const auto corpus = T::load_fortunes_corpus(ctx.input_path("corpus"));
  T::TinyConfig c;
  c.n_layer = 1;
  c.context = 16;
  T::TrainOptions o;
  o.schedule = {base, floor, warmup, total};
  const long past = ctx.input("steps_past_total").get<long>();
  if (past < 0) throw std::invalid_argument("ch03.warmup_cosine: field 'inputs.steps_past_total': must be >= 0");
  const long steps = total + past;
  o.steps = steps;
  o.batch = 2;
  o.eval_every = 0;
  o.eval_batches = 1;
  o.seed = ctx.seed();
  o.fault = ctx.planted_fault();
  // Run.
  const T::TrainResult r = T::train_tiny(c, corpus, o);
  // Verify: every step's applied rate against the reference.
  if (static_cast<long>(r.lrs.size()) != steps)
    throw std::runtime_error("ch03.warmup_cosine: the loop recorded " + std::to_string(r.lrs.size()) +
                             " learning rates for " + std::to_string(steps) + " steps");
  double worst = 0;
  long worst_step = 0;
  std::vector<double> want;
  for (long s = 0; s < steps; ++s) {
    want.push_back(ref::warmup_cosine_lr(base, floor, warmup, total, s));
    const double err = std::fabs(r.lrs[s] - want.back());
    if (err > worst) worst = err, worst_step = s;
  }
  ctx.measure(worst, "abs error");
  ctx.measure("peak_lr", *std::max_element(r.lrs.begin(), r.lrs.end()), "count");
  ctx.detail("worst_step", worst_step);
  ctx.detail("curve", {{"title", "learning rate: warmup + cosine (read from the optimizer)"},
                       {"x_label", "step"},
                       {"y_label", "lr"},
                       {"log_x", false},
                       {"series", {{{"name", "AdamW's lr"}, {"y", r.lrs}}, {{"name", "reference"}, {"y", want}}}}});
  ctx.assumption(std::to_string(total) + " steps and " + std::to_string(past) +
                 " past the schedule's end of the ch03 loop (one layer, batch 2 x 16 characters); the rate "
                 "is read from AdamW's parameter groups just before each optimizer step");
#endif
}
CLAIMCHECK_REGISTER(warmup_cosine).claim("ch03.warmup_cosine");
