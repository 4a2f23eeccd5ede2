// Decode kernels (chapter 6): bf16 GEMV, its batched form (a skinny GEMM), and an NF4 GEMV with one fp32 absmax
// per 64 weights, dequantised in registers. Each has an AVX-512 path, an AVX2+FMA path and a portable one; the CPU
// picks at run time (gemv_simd_path) and a test can force a lower path (gemv_force_path).
//
// bf16 -> fp32 in registers: a 32-bit lane holding two bf16 values k (low half) and k+1 (high half) gives
// fp32(w[k]) = lane << 16 and fp32(w[k+1]) = lane & 0xffff0000, two integer ops per two weights and no shuffle.
// The activation vector is therefore re-ordered once per call (evens then odds within each group of a vector's
// width of pairs), which costs K floats, nothing against the N*K weights. Four rows stream at once, so each
// activation load serves four rows and the prefetchers see four sequential streams.
//
// What the decode kernels' files (kernels/cpu/gemv/, private to kernels/) share:
//   internal.h        this: bf16 -> fp32, the NF4 code book, the paths and what the files call of each other
//   ../thread_pool.h  the persistent pool and parallel_rows, which every kernel's rows are shared out with (the
//                     matmul's and attention's too)
//   dispatch.cpp      the path this CPU runs (or a test forced), the activations' re-ordering, one GEMV pass
//   portable.cpp, avx2.cpp, avx512.cpp, neon.cpp   the GEMV row kernels of each ISA
//   avx512_bf16.cpp   the NF4 GEMV on the bf16 dot-product instruction
//   gemm.cpp          the batched bf16 GEMV (a skinny GEMM): direct tiles and packed panels (gemm_tile.inc)
//   nf4.cpp           NF4 quantisation
//   decode_stack.cpp  decode_weights_bf16 and DecodeStack
//   api.cpp           the public entry points (claimcheck/kernels/gemv.h)
// Functions compiled for an ISA are declared here with the same target attribute as their definition (in C++ a
// different one would declare another version of the function); the target_clones ones (CC_CLONES, portable.cpp,
// nf4.cpp) are declared without it and called through the resolver their definition emits.
#pragma once
#include "claimcheck/kernels/gemv.h"

#include "../simd.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace claimcheck::kernels::gemv_detail {

// Each bf16 weight stream is prefetched this far ahead (32 lines). The per-line work (two converts, two FMAs, the
// activations' loads) fills the out-of-order window before the hardware prefetchers run far enough ahead, and without
// it the GEMV read its matrix well below the probe's reader (the figures, and 1 and 4 KiB tried: docs/checks.md,
// ch06.decode_measured).
constexpr long kStreamPrefetchBytes = 2048;
CC_INLINE const char* ahead(const bf16_t* p) { return reinterpret_cast<const char*>(p) + kStreamPrefetchBytes; }

CC_INLINE float bf16_f32(bf16_t x) {
  const std::uint32_t u = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
// The nearest bf16 (ties to even; a NaN stays a quiet NaN): to_bf16, inline so that loops over it vectorise (the
// NF4 dot-product kernel's activations).
CC_INLINE bf16_t f32_bf16(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const std::uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return static_cast<bf16_t>((u & 0x7fffffffu) > 0x7f800000u ? (u >> 16) | 0x40u : rounded);
}

// bitsandbytes' NF4 code book (functional.py, create_normal_map / the hard-coded table of the CUDA kernels).
alignas(64) inline constexpr float kNf4[16] = {-1.0f,
                                               -0.6961928009986877f,
                                               -0.5250730514526367f,
                                               -0.39491748809814453f,
                                               -0.28444138169288635f,
                                               -0.18477343022823334f,
                                               -0.09105003625154495f,
                                               0.0f,
                                               0.07958029955625534f,
                                               0.16093020141124725f,
                                               0.24611230194568634f,
                                               0.33791524171829224f,
                                               0.44070982933044434f,
                                               0.5626170039176941f,
                                               0.7229568362236023f,
                                               1.0f};

// kEmulated512 (tests only, forced by name): the AVX2 kernels, except the batched GEMM's panel tile, which runs the
// AVX-512 tile's source on two ymm per register (gemm_tile.inc), so that its 16-lane indexing is tested where no
// AVX-512 is.
// kNeon: AArch64's.
// kAvx512Bf16: the AVX-512 kernels, except NF4, which runs on the bf16 dot-product instruction (vdpbf16ps, where the
// CPU has avx512_bf16): its products are those of the levels and the activations rounded to bf16, summed in fp32
// (avx512_bf16.cpp). The bf16 GEMV and GEMM are avx512's (their weights are bf16 already; fp32 activations).
enum Path { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kEmulated512 = 3, kNeon = 4, kAvx512Bf16 = 5 };

// The path this CPU supports best (detected at load time, dispatch.cpp), the one a test forced (-1: none) and the
// one the kernels run now.
extern const Path kDetected;
extern std::atomic<int> g_forced;
// The path the kernels run: a forced one, else the detected one (a planted fault, gemv_narrow_first, takes AVX2
// where AVX-512 is).
Path path(const GemvFaults& faults = {});
const char* path_name(Path p);
// Whether this CPU can run path p (what the detected path implies: avx512_bf16 includes avx512, which includes avx2).
bool can_run(Path p);
// The path the bf16 kernels (GEMV, batched GEMM) run for p: avx512 for avx512_bf16, p otherwise.
inline Path bf16_kernels_path(Path p) { return p == kAvx512Bf16 ? kAvx512 : p; }

// ---- activation re-ordering and scratch (dispatch.cpp; nf4_order_avx512: avx512.cpp) ----------------------------
void split_pairs(const float* x, int K, int G, float* out);
void nf4_order_avx2(const float* x, int K, float* out);
float* scratch_floats(int which, std::size_t n);
bf16_t* scratch_bf16(std::size_t n);  // one per thread (the NF4 dot-product kernel's activations)

// ---- the GEMV row kernels: y[r] for rows [r0, r1) -----------------------------------------------------------------
// Each row kernel says it ran (its path's name), so that what ran is read apart from what the dispatch meant to run.
enum RowsFamily { kBf16Rows = 0, kNf4Rows = 1 };
void note_rows_ran(RowsFamily family, const char* name);
const char* rows_ran(RowsFamily family);
void bf16_rows_portable(const bf16_t* W, long K, const float* x, int r0, int r1, float* y);  // (CC_CLONES)
void nf4_rows_portable(const std::uint8_t* P, const float* S, long K, const float* x, int r0, int r1,
                       float* y);  // (CC_CLONES)
#if CC_X86
// The sum of a ymm's 8 lanes (avx2.cpp's kernels, gemm.cpp's AVX2 direct tile).
CC_AVX2_F16C CC_INLINE float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
CC_AVX2_F16C void bf16_rows_avx2(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y);
CC_AVX2_F16C void nf4_rows_avx2(const std::uint8_t* P, const float* S, long K, const float* xp, int r0, int r1,
                                float* y);
void nf4_order_avx512(const float* x, int K, float* out);
// The dot-product NF4 kernel's activations: bf16 (rounded to nearest even), in its order, zero-padded to whole groups
// of 128 (avx512_bf16.cpp says the order); out holds nf4_bf16_padded(K) values.
inline int nf4_bf16_padded(int K) { return (K + 127) / 128 * 128; }
void nf4_order_bf16(const float* x, int K, bf16_t* out);
CC_AVX512_BF16 void nf4_rows_avx512bf16(const std::uint8_t* P, const float* S, long K, const bf16_t* xb, int r0, int r1,
                                        float* y);
CC_AVX512_F16C void bf16_rows_avx512(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1,
                                     float* y);
CC_AVX512_F16C void nf4_rows_avx512(const std::uint8_t* P, const float* S, long K, const float* xs, int r0, int r1,
                                    float* y);
#endif
#if CC_NEON
void bf16_rows_neon(const bf16_t* W, long K, const float* xs, const float* x, int r0, int r1, float* y);
#endif

// ---- passes over a whole matrix (dispatch.cpp, gemm.cpp) and NF4 quantisation (nf4.cpp) ------------------------
void bf16_pass(Path pth, const bf16_t* W, int N, int K, const float* x, float* y, int threads);
void nf4_pass(Path pth, const Nf4Matrix& W, const float* x, float* y, int threads, int rows);
void gemm_pass(Path pth, const bf16_t* W, int N, int K, const float* X, int B, float* Y, int threads,
               bool narrow_panel = false);
const char* gemm_last_tile();
void quantize_rows(const bf16_t* W, long K, long r0, long r1, std::uint8_t* packed, float* scales);  // (CC_CLONES)

}  // namespace claimcheck::kernels::gemv_detail
