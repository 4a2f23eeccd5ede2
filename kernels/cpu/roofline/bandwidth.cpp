// The roofline probe's memory roof: STREAM-style read bandwidth over an array of 4x the last-level
// cache, or over a kernel's own buffers (measure_read_seconds), on pinned threads.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "../isa.h"
#include "claimcheck/kernels/roofline.h"
#include "probe.h"

namespace claimcheck::kernels {
namespace {

using probe::Clock;
using probe::run_pinned;
using probe::Span;

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;
Buffer alloc_floats(std::size_t n) {
  void* p = std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (p == nullptr) throw std::bad_alloc();
  return Buffer(static_cast<float*>(p));
}

// The probe's array, filled, kept between calls while a BandwidthArraysKept lives (see roofline.h).
struct Arrays {
  Buffer b;
  std::size_t n = 0;
  int threads = 0;
};
struct Kept {
  std::mutex mu;
  int holders = 0;
  std::shared_ptr<Arrays> arrays;
};
Kept& kept() {
  static Kept k;
  return k;
}

// Sum of x[0..n): four streams (the four quarters of the range, read side by side, as a GEMV reads four weight
// rows: one sequential stream per thread leaves this machine's prefetchers idle and reads ~40% less), two
// accumulators of 8 lanes per stream; exact for the small integers the arrays hold.
#if defined(__x86_64__) && defined(__GNUC__)
// Each stream prefetched 2 KiB ahead, as the decode kernels prefetch theirs (kernels/cpu/gemv/internal.h): a roof
// must read at least as fast as the kernels it judges (docs/checks.md, ch06.decode_measured).
constexpr std::size_t kReadPrefetchBytes = 2048;
// STEP: the loop's stride in floats, 16 (what it loads).
template <int STEP>
CC_PROBE("avx2,fma")
double read_avx2(const float* x, std::size_t n) {
  constexpr int S = 4;
  const std::size_t q = n / S / 16 * 16;
  __m256 a[S][2];
  for (auto& st : a)
    for (auto& r : st) r = _mm256_setzero_ps();
  for (std::size_t i = 0; i < q; i += STEP)
#pragma GCC unroll 4
    for (int s = 0; s < S; ++s) {
      const float* p = x + s * q + i;
      _mm_prefetch(reinterpret_cast<const char*>(p) + kReadPrefetchBytes, _MM_HINT_T0);
      a[s][0] = _mm256_add_ps(a[s][0], _mm256_loadu_ps(p));  // (unaligned loads: a caller's buffer may be anywhere)
      a[s][1] = _mm256_add_ps(a[s][1], _mm256_loadu_ps(p + 8));
    }
  double sum = 0;
  for (auto& st : a)
    for (auto& r : st) {
      alignas(32) float out[8];
      _mm256_store_ps(out, r);
      for (float v : out) sum += v;
    }
  for (std::size_t i = S * q; i < n; ++i) sum += x[i];
  return sum;
}
#endif
template <int STEP>
__attribute__((noinline)) double read_portable(const float* x, std::size_t n) {
  constexpr int S = 4;
  const std::size_t q = n / S / 16 * 16;
  float a[S][16] = {};
  for (std::size_t i = 0; i < q; i += STEP)
    for (int s = 0; s < S; ++s)
      for (int j = 0; j < 16; ++j) a[s][j] += x[s * q + i + j];
  double sum = 0;
  for (auto& st : a)
    for (float v : st) sum += v;
  for (std::size_t i = S * q; i < n; ++i) sum += x[i];
  return sum;
}
double read_sum(const float* x, std::size_t n) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (isa::cpu().avx2_fma) return read_avx2<16>(x, n);
#endif
  return read_portable<16>(x, n);
}

// The read pass's unit of work: 1 MiB blocks pulled from a shared counter, each read as four streams 256 KiB apart,
// the way the bf16 GEMV reads its weights (1 MiB chunks of rows, four rows a quarter of a chunk apart). A probe that
// gave each thread one half of the array, read as four streams a quarter of that half apart, read up to 1.26x slower
// than the GEMV on a Zen 4 guest: a roof below what a kernel reaches is not a roof.
constexpr std::size_t kReadBlock = std::size_t{1} << 18;  // floats

// Element i holds i mod 8 (exact in fp32 partial sums of up to 2^24 / 7 elements per lane).
float fill_value(std::size_t i) { return static_cast<float>(i & 7U); }

}  // namespace

std::size_t last_level_cache_bytes(bool level1_only) {
  std::size_t best = 0;
  for (int idx = 0; idx < 8; ++idx) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream lvl(dir + "level"), size(dir + "size");
    int level = 0;
    std::string s;
    if (!(lvl >> level) || !(size >> s) || s.empty()) continue;
    std::size_t mult = 1;
    if (s.back() == 'K')
      mult = 1024, s.pop_back();
    else if (s.back() == 'M')
      mult = 1024 * 1024, s.pop_back();
    const std::size_t bytes = std::strtoull(s.c_str(), nullptr, 10) * mult;
    if (level1_only ? level == 1 : level >= 2) best = std::max(best, bytes);
  }
  return best;
}

namespace {
// One read pass over `blocks` on `threads` pinned threads, the blocks pulled from a shared counter: its wall time;
// `checksum` (optional) receives the sum of everything read.
struct ReadBlock {
  const float* p;
  std::size_t n;
};
double read_pass(const std::vector<ReadBlock>& blocks, int threads, bool skips, double* checksum = nullptr) {
  Span span(threads);
  std::vector<double> sums(threads);
  std::atomic<std::size_t> next{0};
  run_pinned(threads, [&](int t) {
    span.start[t] = Clock::now();
    double sum = 0;
    // The planted fault steps over the blocks in bytes for floats: one block in four read, whole (the hardware's
    // prefetchers cannot fill 3 MiB gaps, so the probe reports four times the bandwidth on any machine; an
    // element-level skip within a block read 1.9-2.5x, as the prefetchers and the moment allowed).
    const std::size_t stride = skips ? sizeof(float) : 1;
    for (std::size_t b; (b = next.fetch_add(1, std::memory_order_relaxed) * stride) < blocks.size();)
      sum += read_sum(blocks[b].p, blocks[b].n);
    sums[t] = sum;
    span.end[t] = Clock::now();
  });
  double total = 0;
  for (double x : sums) total += x;
  if (checksum) *checksum = total;
  volatile double keep = total;
  (void)keep;
  return span.seconds();
}
// x[0..n) cut into the probe's 1 MiB blocks, appended to `out`.
void cut_blocks(const float* x, std::size_t n, std::vector<ReadBlock>* out) {
  for (std::size_t i = 0; i < n; i += kReadBlock) out->push_back({x + i, std::min(kReadBlock, n - i)});
}
}  // namespace

double measure_read_seconds(const std::vector<std::pair<const void*, std::size_t>>& buffers, int threads, int passes,
                            const RooflineFaults& f, double* checksum) {
  threads = std::max(1, threads);
  std::vector<ReadBlock> blocks;  // every buffer cut into blocks (a tail of under 4 bytes left out)
  for (const auto& [ptr, bytes] : buffers) cut_blocks(static_cast<const float*>(ptr), bytes / sizeof(float), &blocks);
  std::vector<double> times;
  for (int pass = 0; pass < std::max(1, passes); ++pass)
    times.push_back(read_pass(blocks, threads, f.read_skips, checksum));
  return base::median(std::move(times));
}

Bandwidth measure_bandwidth(int threads, std::size_t array_bytes, int passes, const RooflineFaults& f) {
  threads = std::max(1, threads);
  Bandwidth bw;
  bw.threads = threads;
  bw.llc_bytes = last_level_cache_bytes(f.llc_as_l1);
  // (A planted fault sizes the array by the level-1 cache, without the floor: a read from the caches.)
  if (array_bytes == 0)
    array_bytes = f.llc_as_l1 ? 4 * bw.llc_bytes : std::max<std::size_t>(4 * bw.llc_bytes, std::size_t{64} << 20);
  const std::size_t n = array_bytes / sizeof(float) / 64 * 64;
  bw.array_bytes = n * sizeof(float);
  // Each thread's chunk of [0, len), 64-element aligned; the thread that reads a chunk also first touches it.
  auto chunk = [&](int t, std::size_t len, std::size_t* lo, std::size_t* hi) {
    // (a planted fault rounds the chunks down: where len / 64 is no multiple of the threads, a tail goes unfilled)
    const std::size_t per = (f.fill_floor ? len / 64 / threads : (len / 64 + threads - 1) / threads) * 64;
    *lo = std::min(len, per * t);
    *hi = std::min(len, *lo + per);
  };
  std::shared_ptr<Arrays> arrays;
  {
    std::lock_guard<std::mutex> lock(kept().mu);
    if (kept().holders > 0 && kept().arrays && kept().arrays->n == n && kept().arrays->threads == threads)
      arrays = kept().arrays;
  }
  if (!arrays) {
    arrays = std::make_shared<Arrays>();
    arrays->b = alloc_floats(n);
    arrays->n = n, arrays->threads = threads;
    float* b = arrays->b.get();
    run_pinned(threads, [&](int t) {
      std::size_t lo, hi;
      chunk(t, n, &lo, &hi);
      for (std::size_t i = lo; i < hi; ++i) b[i] = fill_value(i);
    });
    std::lock_guard<std::mutex> lock(kept().mu);
    if (kept().holders > 0) kept().arrays = arrays;
  }
  const Buffer& b = arrays->b;  // only read
  for (std::size_t i = 0; i < n % 8; ++i) bw.expected_checksum += static_cast<double>(fill_value(n - n % 8 + i));
  bw.expected_checksum += static_cast<double>(n / 8) * 28.0;  // NOLINT(bugprone-integer-division): 0 + ... + 7 per 8

  std::vector<ReadBlock> blocks;
  cut_blocks(b.get(), n, &blocks);
  std::vector<double> reads;
  const double counted = (f.read_overcount ? 1.5 : 1.0) * static_cast<double>(n) * sizeof(float);  // (a planted fault)
  for (int p = 0; p < std::max(1, passes); ++p)
    reads.push_back(counted / read_pass(blocks, threads, f.read_skips, &bw.checksum));
  bw.read_bytes_per_s = base::median(reads);
  bw.read_best_bytes_per_s = *std::max_element(reads.begin(), reads.end());
  return bw;
}

BandwidthArraysKept::BandwidthArraysKept() {
  std::lock_guard<std::mutex> lock(kept().mu);
  ++kept().holders;
}

BandwidthArraysKept::~BandwidthArraysKept() {
  std::lock_guard<std::mutex> lock(kept().mu);
  if (--kept().holders == 0) kept().arrays.reset();
}

}  // namespace claimcheck::kernels
