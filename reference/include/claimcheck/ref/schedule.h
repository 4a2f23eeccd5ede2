// The answer key for chapter 3's learning-rate schedule, written from the series' description rather than from the
// training code: warmup rises linearly to the base rate over the first W steps (step s trains at base x (s+1)/W),
// then the rate falls from base to the floor along half a cosine period over the remaining steps, and stays at the
// floor after them. The cosine half is written as cos^2 (1 + cos x = 2 cos^2(x/2)), not as the kernels' form.
#pragma once
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace claimcheck::ref {

inline double warmup_cosine_lr(double base, double floor, long warmup, long total, long step) {
  if (warmup < 1 || total <= warmup || step < 0 || !(base > 0) || !(floor >= 0) || floor > base)
    throw std::invalid_argument(
        "warmup_cosine_lr: expected 1 <= warmup < total, step >= 0, 0 <= floor <= base; got "
        "warmup " +
        std::to_string(warmup) + ", total " + std::to_string(total) + ", step " + std::to_string(step));
  if (step < warmup) return base * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const long done = std::min(step - warmup, total - warmup);
  const double half_angle = 0.5 * M_PI * static_cast<double>(done) / static_cast<double>(total - warmup);
  const double c = std::cos(half_angle);
  return floor + (base - floor) * c * c;
}

}  // namespace claimcheck::ref
