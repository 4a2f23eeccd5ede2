// A CPU allocator that counts live and peak bytes of every LibTorch CPU tensor, wrapping the default one.
// Each allocation carries the phase tag current when it was made (chapter 4's timeline attributes live bytes
// by it), and an optional cap turns a request beyond it into PyTorch's out-of-memory error.
#include <atomic>
#include <mutex>
#include <unordered_map>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include "claimcheck/train/experiments.h"

namespace claimcheck::train {
namespace {

struct Allocation {
  std::int64_t bytes;
  int phase;
};
std::atomic<std::int64_t> g_live{0}, g_peak{0}, g_cap{0};
std::atomic<bool> g_cap_counts_request{true};
std::atomic<int> g_phase{0};
std::mutex g_mu;
std::unordered_map<void*, Allocation> g_sizes;  // live allocation -> bytes, phase
std::vector<LiveAllocation> g_at_oom;           // the live allocations when the cap was last crossed
std::int64_t g_oom_request = 0;
c10::DeleterFnPtr g_inner_delete = nullptr;

// Keeps context == data (ATen's raw_allocate / raw_deallocate require it), so sizes live in a side table.
void counted_delete(void* p) {
  if (!p) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_sizes.find(p);
    if (it != g_sizes.end()) {
      g_live -= it->second.bytes;
      g_sizes.erase(it);
    }
  }
  g_inner_delete(p);
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) { g_inner_delete = inner->raw_deleter(); }
  c10::DataPtr allocate(size_t n) override {
    const auto bytes = static_cast<std::int64_t>(n);
    const auto cap = g_cap.load();
    if (cap > 0 && g_live.load() + (g_cap_counts_request.load() ? bytes : 0) > cap) {
      {
        std::lock_guard<std::mutex> lock(g_mu);
        g_at_oom.clear();
        for (const auto& [ptr, a] : g_sizes) g_at_oom.push_back({ptr, a.bytes, a.phase});
        g_oom_request = bytes;
      }
      TORCH_CHECK_WITH(OutOfMemoryError, false, "CPU out of memory: tried to allocate ", bytes, " bytes with ",
                       g_live.load(), " bytes live under a cap of ", cap, " bytes (claimcheck's counting allocator)");
    }
    c10::DataPtr p = inner_->allocate(n);
    void* data = p.get();
    if (data == nullptr) return p;
    TORCH_CHECK(p.get_context() == data && g_inner_delete != nullptr,
                "counting allocator: the wrapped CPU allocator must keep context == data");
    p.release_context();
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_sizes[data] = {bytes, g_phase.load()};
    }
    const auto now = g_live += bytes;
    for (auto peak = g_peak.load(); now > peak && !g_peak.compare_exchange_weak(peak, now);) {
    }
    return {data, data, &counted_delete, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &counted_delete; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

 private:
  c10::Allocator* inner_;
};

}  // namespace

void install_counting_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    static CountingAllocator counting(c10::GetDefaultCPUAllocator());
    c10::SetCPUAllocator(&counting, /*priority=*/100);
  });
}
std::int64_t live_bytes() { return g_live.load(); }
std::int64_t peak_bytes() { return g_peak.load(); }
void reset_peak() { g_peak = g_live.load(); }
void set_allocation_phase(int phase) { g_phase = phase; }
int allocation_phase() { return g_phase.load(); }
void set_allocation_cap(std::int64_t bytes, bool counts_request) {
  g_cap = bytes > 0 ? bytes : 0;
  g_cap_counts_request = counts_request;
}
std::vector<LiveAllocation> live_allocations() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<LiveAllocation> out;
  out.reserve(g_sizes.size());
  for (const auto& [p, a] : g_sizes) out.push_back({p, a.bytes, a.phase});
  return out;
}

std::vector<LiveAllocation> allocations_at_last_oom(std::int64_t* requested) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (requested) *requested = g_oom_request;
  return g_at_oom;
}

}  // namespace claimcheck::train
