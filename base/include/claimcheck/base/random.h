// claimcheck/base/random.h — the project's one pseudo-random generator for test data: SplitMix64 (Steele, Lea and
// Flood 2014; the seeding generator of xoshiro). Inputs, weights and seeds derived from a seed are the same on every
// machine, CPU or GPU, and in the code under test and the answer key alike (the data is shared; the computations on
// it are not). Header-only and usable in CUDA device code.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define CLAIMCHECK_HOST_DEVICE __host__ __device__
#else
#define CLAIMCHECK_HOST_DEVICE
#endif

namespace claimcheck::base {

inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;  // 2^64 / phi, odd

// One step: the output for state `x` (the state then advances by kGoldenGamma). A good 64-bit hash of `x` too.
CLAIMCHECK_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) noexcept {
  x += kGoldenGamma;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A 32-bit integer hash (lowbias32, Wellons): 32-bit multiplies only, so a fill loop over it vectorises.
CLAIMCHECK_HOST_DEVICE constexpr std::uint32_t lowbias32(std::uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}

// The top 24 bits of a 64-bit draw as a float in [0, 1): every value exactly representable.
CLAIMCHECK_HOST_DEVICE constexpr float unit_float(std::uint64_t z) noexcept {
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

// The stream of draws from one state.
class SplitMix64 {
 public:
  CLAIMCHECK_HOST_DEVICE explicit constexpr SplitMix64(std::uint64_t state) noexcept : state_(state) {}
  CLAIMCHECK_HOST_DEVICE constexpr std::uint64_t next() noexcept {
    const std::uint64_t z = splitmix64(state_);
    state_ += kGoldenGamma;
    return z;
  }
  CLAIMCHECK_HOST_DEVICE constexpr float next_unit() noexcept { return unit_float(next()); }

 private:
  std::uint64_t state_;
};

}  // namespace claimcheck::base
