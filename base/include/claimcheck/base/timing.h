// claimcheck/base/timing.h — the project's one median and one stopwatch. A timing, a ratio of timings or a paired
// probe reading is summarised by its median across rounds (a shared machine's slow rounds do not move it); every
// measuring site calls these rather than its own sort.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <vector>

namespace claimcheck::base {

using Clock = std::chrono::steady_clock;

// Wall seconds since `t0` (steady clock).
inline double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The shortest wall time of `repeats` calls of fn (at least one).
template <class Fn>
double best_seconds(int repeats, Fn fn) {
  double best = 1e300;
  for (int i = 0; i < (repeats < 1 ? 1 : repeats); ++i) {
    const auto t0 = Clock::now();
    fn();
    best = std::min(best, seconds_since(t0));
  }
  return best;
}

// The median: the middle value of an odd count, the mean of the two middle ones of an even count. Throws
// std::invalid_argument on an empty list (a median of nothing is a bug of the caller, never 0).
inline double median(std::vector<double> xs) {
  if (xs.empty()) throw std::invalid_argument("median of an empty list");
  const std::size_t mid = xs.size() / 2;
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(mid), xs.end());
  const double upper = xs[mid];
  if (xs.size() % 2) return upper;
  return (*std::max_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(mid)) + upper) / 2;
}

// The median element of records ordered by `key` (a paired reading by its ratio): the middle one of an odd count,
// the upper middle of an even count (records are not averaged). Throws std::invalid_argument on an empty list.
template <class T, class Key>
T median_by(std::vector<T> xs, Key key) {
  if (xs.empty()) throw std::invalid_argument("median of an empty list");
  const std::size_t mid = xs.size() / 2;
  std::nth_element(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(mid), xs.end(),
                   [&](const T& a, const T& b) { return key(a) < key(b); });
  return xs[mid];
}

// Two timings bracketed against each other: a, b, a, b, ..., b, a (`rounds` b's, each between two a's), and each
// b over the mean of the two a's beside it. A shared machine's speed drifts from one second to the next; a drift
// that is linear across one pair cancels, where rounds of several a's then several b's leave the ratio to the moment.
// The ratio is the median of the pairs'; best_a and best_b are each side's shortest time.
struct Bracketed {
  std::vector<double> ratios;  // each pair's b / mean(a before, a after), in order
  double ratio = 0;            // their median
  double best_a = 1e300, best_b = 1e300;
};
template <class A, class B>
Bracketed bracketed(int rounds, A time_a, B time_b) {
  Bracketed out;
  double before = time_a();
  out.best_a = before;
  for (int i = 0; i < (rounds < 1 ? 1 : rounds); ++i) {
    const double b = time_b();
    const double after = time_a();
    out.ratios.push_back(b / ((before + after) / 2));
    out.best_a = std::min(out.best_a, after);
    out.best_b = std::min(out.best_b, b);
    before = after;
  }
  out.ratio = median(out.ratios);
  return out;
}

}  // namespace claimcheck::base
