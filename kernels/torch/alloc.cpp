// A CPU allocator that counts live and peak bytes of every LibTorch CPU tensor, wrapping the default one.
#include <atomic>
#include <mutex>
#include <unordered_map>

#include <c10/core/CPUAllocator.h>

#include "claimcheck/train/experiments.h"

namespace claimcheck::train {
namespace {

std::atomic<std::int64_t> g_live{0}, g_peak{0};
std::mutex g_mu;
std::unordered_map<void*, std::int64_t> g_sizes;  // live allocation -> bytes
c10::DeleterFnPtr g_inner_delete = nullptr;

// Keeps context == data (ATen's raw_allocate / raw_deallocate require it), so sizes live in a side table.
void counted_delete(void* p) {
  if (!p) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_sizes.find(p);
    if (it != g_sizes.end()) {
      g_live -= it->second;
      g_sizes.erase(it);
    }
  }
  g_inner_delete(p);
}

class CountingAllocator final : public c10::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) { g_inner_delete = inner->raw_deleter(); }
  c10::DataPtr allocate(size_t n) override {
    c10::DataPtr p = inner_->allocate(n);
    void* data = p.get();
    if (data == nullptr) return p;
    TORCH_CHECK(p.get_context() == data && g_inner_delete != nullptr,
                "counting allocator: the wrapped CPU allocator must keep context == data");
    p.release_context();
    const auto bytes = static_cast<std::int64_t>(n);
    {
      std::lock_guard<std::mutex> lock(g_mu);
      g_sizes[data] = bytes;
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

}  // namespace claimcheck::train
