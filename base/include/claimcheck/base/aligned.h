// Arrays that start on a 64-byte cache line, as PyTorch's CPU allocator starts every tensor. A large std::vector
// comes from malloc 16 bytes into a line, and every 64-byte vector load of it then spans two lines: on a Zen 5 core
// the AVX-512 bf16 GEMV read such weights at 26-27 GB/s and the same weights from a line's start at 43-44 GB/s (its
// read probe: 45-50).
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace claimcheck::base {

constexpr std::size_t kCacheLine = 64;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor): rebinding
  T* allocate(std::size_t n) {
    if (n > (static_cast<std::size_t>(-1) - kCacheLine) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = (n * sizeof(T) + kCacheLine - 1) / kCacheLine * kCacheLine;
    void* p = std::aligned_alloc(kCacheLine, bytes == 0 ? kCacheLine : bytes);
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const noexcept {
    return true;
  }
};

// A std::vector whose data() starts on a cache line.
template <class T>
using aligned_vector = std::vector<T, CacheLineAllocator<T>>;

}  // namespace claimcheck::base
