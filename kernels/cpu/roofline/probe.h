// What the roofline probe's three parts (peak.cpp: FMA, bf16 and AMX chains; clock.cpp: two dependent chains;
// bandwidth.cpp: STREAM-style reads) share: threads pinned to the CPUs of the affinity mask, released together, and
// the span they ran side by side. Private to kernels/cpu/roofline/.
#pragma once
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "../simd.h"
#include "claimcheck/base/timing.h"

namespace claimcheck::kernels::probe {

using base::Clock;
using base::seconds_since;

// The CPUs this process may run on, in order.
inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// The span from the first thread's start to the last thread's end: threads that did not overlap (one descheduled
// while the other ran) are not counted as running side by side.
struct Span {
  std::vector<Clock::time_point> start, end;
  explicit Span(int n) : start(n), end(n) {}
  double seconds() const {
    return std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) -
                                         *std::min_element(start.begin(), start.end()))
        .count();
  }
};

// Runs fn(t) on `threads` threads, thread t pinned to the t-th allowed CPU, all released together. The calling
// thread is thread 0 (pinned for the call, its mask restored after): a caller that spun or slept beside the workers
// would take a CPU from one of them on a machine with as many CPUs as threads, and that worker would start a
// scheduler tick late (a few ms of a 50 ms pass: the Emerald Rapids guest's FMA probe read 275-317 GFLOP/s where
// 12 chains timed per thread read 347-351).
template <typename Fn>
void run_pinned(int threads, Fn fn) {
  const std::vector<int> cpus = allowed_cpus();
  auto pin = [&](int t) {
    if (cpus.empty()) return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpus[static_cast<std::size_t>(t) % cpus.size()], &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
  };
  cpu_set_t mine;
  CPU_ZERO(&mine);
  const bool restore = pthread_getaffinity_np(pthread_self(), sizeof mine, &mine) == 0;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t)
    pool.emplace_back([&, t] {
      pin(t);
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      fn(t);
    });
  pin(0);
  while (ready.load() < threads - 1) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  fn(0);
  for (auto& th : pool) th.join();
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof mine, &mine);
}

}  // namespace claimcheck::kernels::probe
