// The CPU kernels' persistent thread pool (a worker spins, then sleeps; the caller never waits for one that
// has not started) and parallel_rows, which pulls chunks of rows from an atomic counter on it (thread_pool.h).
#include "thread_pool.h"

#include "simd.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace claimcheck::kernels {
namespace {

// ---- thread pool ----------------------------------------------------------------------------------------------
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> l(m_);
      stop_ = true;
      ++gen_;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // fn(tid) on the caller (tid 0) and on those of the n - 1 workers that wake up before the caller has finished
  // its own share: a job's work must be pulled dynamically (every tid is optional but 0). The caller never waits
  // for a worker that has not started (on a loaded 2-core machine a sleeping worker can take milliseconds to be
  // scheduled); it waits only for workers inside fn. Calls are serialised.
  void run(int n, const std::function<void(int)>& fn) {
    if (n <= 1) {
      fn(0);
      return;
    }
    std::lock_guard<std::mutex> call(call_m_);
    std::uint64_t g;
    {
      std::lock_guard<std::mutex> l(m_);
      while (static_cast<int>(workers_.size()) < n - 1) {
        const int id = static_cast<int>(workers_.size()) + 1;
        workers_.emplace_back([this, id] { loop(id); });
      }
      fn_ = &fn;
      active_ = n;
      g = ++gen_;
      open_.store(g);  // seq_cst: pairs with the workers' inside_ increment (Dekker-style)
    }
    cv_.notify_all();
    fn(0);
    open_.store(0);  // closed: no worker enters after this
    while (inside_.load() > 0) pause();
  }

 private:
  static void pause() {
#if CC_X86
    _mm_pause();
#elif CC_NEON
    asm volatile("yield" ::: "memory");
#endif
  }
  void loop(int id) {
    std::uint64_t seen = 0;
    for (;;) {
      // Spin a while for the next job (decode steps call back to back), then sleep.
      for (int i = 0; i < 20000; ++i) {
        const std::uint64_t o = open_.load(std::memory_order_relaxed);
        if (o != 0 && o != seen) break;
        pause();
      }
      const std::function<void(int)>* fn = nullptr;
      int active = 0;
      std::uint64_t g = 0;
      {
        std::unique_lock<std::mutex> l(m_);
        cv_.wait(l, [&] { return stop_ || (gen_ != seen && open_.load() == gen_); });
        if (stop_) return;
        seen = g = gen_;
        fn = fn_;
        active = active_;
      }
      if (id >= active) continue;
      inside_.fetch_add(1);
      if (open_.load() == g) (*fn)(id);
      inside_.fetch_sub(1);
    }
  }
  std::mutex call_m_, m_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* fn_ = nullptr;
  int active_ = 0;
  std::uint64_t gen_ = 0;
  std::atomic<std::uint64_t> open_{0};
  std::atomic<int> inside_{0};
  bool stop_ = false;
};
Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_rows(int N, int chunk, int threads, const std::function<void(int, int)>& fn) {
  const int chunks = (N + chunk - 1) / chunk;
  threads = std::max(1, std::min(threads, chunks));
  if (threads == 1) {
    fn(0, N);
    return;
  }
  std::atomic<int> next{0};
  pool().run(threads, [&](int) {
    for (int c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
      fn(c * chunk, std::min(N, (c + 1) * chunk));
  });
}
int row_chunk(int N, std::size_t row_bytes, int threads, std::size_t bytes) {
  long c = static_cast<long>(bytes / std::max<std::size_t>(row_bytes, 1));
  c = std::min<long>(c, std::max(1, N / (4 * std::max(1, threads))));
  c = std::max<long>(4, (c + 3) / 4 * 4);
  return static_cast<int>(c);
}

}  // namespace claimcheck::kernels
