// Learning-rate schedule of the twenty-line loop: linear warmup, then cosine decay to a floor.
// Plain C++ (no LibTorch): the training code steps it; ch03.warmup_cosine compares it with the closed form.
#pragma once
#include <cmath>

namespace claimcheck::train {

struct ScheduleConfig {
  double base_lr = 3e-3, min_lr = 3e-4;
  long warmup_steps = 10, total_steps = 100;
};

// The closed form: lr(s) = base * (s + 1) / warmup for s < warmup; then
// min + (base - min) * (1 + cos(pi * progress)) / 2, progress = (s - warmup) / (total - warmup), at most 1: the
// floor past the last step. (unclamped: a planted fault lets the cosine climb back up past it.)
inline double closed_form_lr(const ScheduleConfig& c, long s, bool unclamped = false) {
  if (s < c.warmup_steps) return c.base_lr * static_cast<double>(s + 1) / static_cast<double>(c.warmup_steps);
  const double raw =
      static_cast<double>(s - c.warmup_steps) / static_cast<double>(std::max(1L, c.total_steps - c.warmup_steps));
  const double progress = unclamped ? raw : std::min(1.0, raw);
  return c.min_lr + (c.base_lr - c.min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

// The stateful scheduler the loop calls once per step (sched.step()), like torch's LambdaLR.
class WarmupCosine {
 public:
  explicit WarmupCosine(ScheduleConfig c, bool off_by_one = false, bool unclamped = false)
      : c_(c), step_(off_by_one ? 1 : 0), unclamped_(unclamped) {}
  double lr() const { return closed_form_lr(c_, step_, unclamped_); }
  void step() { ++step_; }
  long current_step() const { return step_; }

 private:
  ScheduleConfig c_;
  long step_;
  bool unclamped_;
};

}  // namespace claimcheck::train
