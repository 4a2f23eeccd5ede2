// The decode kernels' dispatch: the path the GEMV kernels run (the best this CPU has, detected at load time, or one
// a test forced), the activations re-ordered for the SIMD kernels, per-thread scratch, and one GEMV pass (bf16 or
// NF4) over a whole matrix, its rows shared out on the pool.
#include "../isa.h"
#include "../thread_pool.h"
#include "internal.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace claimcheck::kernels::gemv_detail {

namespace {
Path detect_path() {
  const isa::Cpu& c = isa::cpu();
  if (c.avx512 && c.f16c) return c.avx512_bf16 ? kAvx512Bf16 : kAvx512;
  if (c.avx2_fma && c.f16c) return kAvx2;
  return c.neon ? kNeon : kPortable;
}
}  // namespace
const Path kDetected = detect_path();
std::atomic<int> g_forced{-1};
Path path(const GemvFaults& faults) {
  const int f = g_forced.load(std::memory_order_relaxed);
  if (f >= 0) return static_cast<Path>(f);
  if (faults.narrow_first && (kDetected == kAvx512 || kDetected == kAvx512Bf16)) return kAvx2;
  return kDetected;
}
const char* path_name(Path p) {
  return p == kAvx512Bf16    ? "avx512_bf16"
         : p == kAvx512      ? "avx512"
         : p == kEmulated512 ? "avx512_emulated"
         : p == kAvx2        ? "avx2"
         : p == kNeon        ? "neon"
                             : "portable";
}
bool can_run(Path p) {
  switch (p) {
    case kPortable:
      return true;
    case kNeon:
      return kDetected == kNeon;
    case kAvx2:
    case kEmulated512:  // (AVX2 code)
      return kDetected == kAvx2 || kDetected == kAvx512 || kDetected == kAvx512Bf16;
    case kAvx512:
      return kDetected == kAvx512 || kDetected == kAvx512Bf16;
    case kAvx512Bf16:
      return kDetected == kAvx512Bf16;
  }
  return false;
}

// ---- activation re-ordering -----------------------------------------------------------------------------------
// Within each full group of G activations: the G/2 even ones, then the G/2 odd ones. The rest is copied.
void split_pairs(const float* x, int K, int G, float* out) {
  const int Km = K / G * G;
  for (int g = 0; g < Km; g += G)
    for (int i = 0; i < G / 2; ++i) {
      out[g + i] = x[g + 2 * i];
      out[g + G / 2 + i] = x[g + 2 * i + 1];
    }
  for (int k = Km; k < K; ++k) out[k] = x[k];
}
namespace {
// The AVX2 NF4 kernel's order within a block of 64: slot s = h*32 + r*8 + e holds weight 2j + h, where the
// nibble's byte j = 16*(e/4) + 4*r + e%4 (h: low/high nibble, r: which of the four assembled registers, e: lane).
struct Nf4Perm {
  int src[64];
  Nf4Perm() {
    for (int h = 0; h < 2; ++h)
      for (int r = 0; r < 4; ++r)
        for (int e = 0; e < 8; ++e) src[h * 32 + r * 8 + e] = 2 * (16 * (e / 4) + 4 * r + e % 4) + h;
  }
};
const Nf4Perm kNf4Perm;
}  // namespace
void nf4_order_avx2(const float* x, int K, float* out) {
  for (int b = 0; b < K; b += 64)
    for (int s = 0; s < 64; ++s) out[b + s] = x[b + kNf4Perm.src[s]];
}

namespace {
// Per-thread scratch (the prepared activations live in the caller's, shared read-only with the workers).
std::vector<float>& scratch(int which) {
  thread_local std::vector<float> s[3];
  return s[which];
}
}  // namespace
float* scratch_floats(int which, std::size_t n) {
  auto& v = scratch(which);
  if (v.size() < n + 16) v.resize(n + 16);
  return v.data();
}
bf16_t* scratch_bf16(std::size_t n) {
  thread_local std::vector<bf16_t> s;
  if (s.size() < n) s.resize(n);
  return s.data();
}

namespace {
std::atomic<const char*> g_rows_ran[2] = {"", ""};
}  // namespace
void note_rows_ran(RowsFamily family, const char* name) {
  // (read first: every row chunk of every call says so, and a store would bounce the line among the threads)
  if (g_rows_ran[family].load(std::memory_order_relaxed) != name)
    g_rows_ran[family].store(name, std::memory_order_relaxed);
}
const char* rows_ran(RowsFamily family) { return g_rows_ran[family].load(std::memory_order_relaxed); }

// ---- dispatch: one GEMV pass ----------------------------------------------------------------------------------
void bf16_pass(Path pth, const bf16_t* W, int N, int K, const float* x, float* y, int threads) {
  pth = bf16_kernels_path(pth);
  if (pth == kEmulated512) pth = kAvx2;
  const float* xs = x;
  if (pth != kPortable) {
    float* buf = scratch_floats(0, K);
    split_pairs(x, K, pth == kAvx512 ? 32 : 16, buf);
    xs = buf;
  }
  // 1 MiB chunks: four streams of 256 KiB each (see bf16_block_avx2).
  const int chunk = row_chunk(N, static_cast<std::size_t>(K) * 2, threads, 1u << 20);
  parallel_rows(N, chunk, threads, [&](int r0, int r1) {
#if CC_X86
    if (pth == kAvx512) return bf16_rows_avx512(W, K, xs, x, r0, r1, y);
    if (pth == kAvx2) return bf16_rows_avx2(W, K, xs, x, r0, r1, y);
#endif
#if CC_NEON
    if (pth == kNeon) return bf16_rows_neon(W, K, xs, x, r0, r1, y);
#endif
    bf16_rows_portable(W, K, x, r0, r1, y);
  });
}

// The first `rows` rows of W (all of them but under the planted nf4_half_rows).
void nf4_pass(Path pth, const Nf4Matrix& W, const float* x, float* y, int threads, int rows) {
  if (pth == kEmulated512) pth = kAvx2;
  if (pth == kNeon) pth = kPortable;  // NF4 on AArch64: the portable kernel (vectorised by the compiler)
#if CC_X86
  // The activations in the order (and, for the dot-product kernel, the precision) the path's kernel reads them.
  const float* xs = x;
  bf16_t* xb = nullptr;
  if (pth == kAvx512Bf16) {
    xb = scratch_bf16(static_cast<std::size_t>(nf4_bf16_padded(W.K)));
    nf4_order_bf16(x, W.K, xb);
  } else if (pth == kAvx512 || pth == kAvx2) {
    float* buf = scratch_floats(0, W.K);
    if (pth == kAvx512)
      nf4_order_avx512(x, W.K, buf);
    else
      nf4_order_avx2(x, W.K, buf);
    xs = buf;
  }
#endif
  const int chunk = row_chunk(rows, static_cast<std::size_t>(W.K) / 2 + W.K / 16, threads);
  const std::uint8_t* P = W.packed.data();
  const float* S = W.scales.data();
  parallel_rows(rows, chunk, threads, [&](int r0, int r1) {
#if CC_X86
    if (pth == kAvx512Bf16) return nf4_rows_avx512bf16(P, S, W.K, xb, r0, r1, y);
    if (pth == kAvx512) return nf4_rows_avx512(P, S, W.K, xs, r0, r1, y);
    if (pth == kAvx2) return nf4_rows_avx2(P, S, W.K, xs, r0, r1, y);
#endif
    nf4_rows_portable(P, S, W.K, x, r0, r1, y);
  });
}

}  // namespace claimcheck::kernels::gemv_detail
