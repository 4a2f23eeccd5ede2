// ch03.warmup_cosine — 「学习率调度：warmup + cosine」
// The scheduler the training loop steps equals the closed form at every step.
#include <algorithm>
#include <cmath>

#include "claimcheck/check.h"
#include "claimcheck/train/schedule.h"

#include <nlohmann/json.hpp>

static void warmup_cosine(claimcheck::Context& ctx) {
  namespace T = claimcheck::train;
  const T::ScheduleConfig c{ctx.input("base_lr").get<double>(), ctx.input("min_lr").get<double>(),
                            ctx.input("warmup").get<long>(), ctx.input("total").get<long>()};
  T::WarmupCosine sched(c, ctx.planted_fault() == "schedule_off_by_one");
  double worst = 0;
  std::vector<double> lrs;
  for (long s = 0; s < c.total_steps; ++s) {
    lrs.push_back(sched.lr());
    worst = std::max(worst, std::fabs(sched.lr() - T::closed_form_lr(c, s)));
    sched.step();
  }
  ctx.measure(worst, "abs error");
  ctx.measure("peak_lr", *std::max_element(lrs.begin(), lrs.end()), "count");
  ctx.detail("curve", {{"title", "learning rate: warmup + cosine"}, {"x_label", "step"}, {"y_label", "lr"},
                       {"log_x", false}, {"series", {{{"name", "lr"}, {"y", lrs}}}}});
}
CLAIMCHECK_REGISTER(warmup_cosine).claim("ch03.warmup_cosine");
