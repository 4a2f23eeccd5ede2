// The NF4 GEMV on the bf16 dot-product instruction (vdpbf16ps; x86-64 CPUs with avx512_bf16: Zen 4 and later,
// Cooper Lake, Sapphire Rapids and later). Compiled per function; run where the dispatch detected avx512_bf16.
//
// Why not fp32: the fp32 kernel (avx512.cpp) looks up 16 weights per vpermps and needs a variable shift before each
// lookup, two shuffle-unit operations per 16 weights; a core that runs 512-bit shuffles at one per cycle
// dequantises about 8 weights a cycle there, less than its share of memory's bandwidth brings (docs/checks.md,
// ch06.decode_4bit). Here a vpermw looks up 32 weights: a 64-byte load holds the 128 codes of two blocks; its 32
// words hold four nibbles each, and a shift right by 0, 4, 8 or 12 bits brings nibble j of every word to its low
// bits. vpermw reads an index's low five bits, and its 32-word table holds the 16 levels twice (entry i is
// level[i mod 16]), so nothing above the nibble needs masking. Four vpermw and three shifts per 128 weights; four
// vdpbf16ps multiply the levels by the activations (bf16) and sum in fp32, and one FMA applies the two blocks'
// scales (lanes 0-7 hold block 0's sums, lanes 8-15 block 1's). The four vpermw bound it on a core that issues a
// 512-bit vpermw every other cycle.
//
// The arithmetic, the contract the answer key holds it to (ref::gemv_nf4_fp64 with Nf4Products::bf16): each product
// is level[code] rounded to bf16 times x[k] rounded to bf16 (exact in fp32), the products summed in fp32 and each
// block's sum multiplied by its fp32 scale. bitsandbytes' kernels multiply in bf16 too (their weights dequantised to
// bf16 as level x absmax, then rounded); the rounding of the levels (at most 2^-9 of each) is far below what the
// 4-bit format itself rounds.
//
// The activations' order (nf4_order_bf16): in each group of 128 weights, vector j (0..3) word w is weight 4w + j; a
// vdpbf16ps lane i sums words 2i and 2i + 1, weights 8i + j and 8i + 4 + j. A row whose K is an odd number of blocks
// ends on a group of one block: its codes loaded under a mask (the other 32 bytes read as code 0) and its
// activations zero-padded, so the missing block adds level[0] x 0.
#include "internal.h"

#include <cstdint>

namespace claimcheck::kernels::gemv_detail {

#if CC_X86
void nf4_order_bf16(const float* x, int K, bf16_t* out) {
  const int padded = nf4_bf16_padded(K);
  for (int g = 0; g < padded; g += 128) {
    bf16_t b[128] = {};  // the group in natural order, rounded (zeros past K)
    const int n = K - g < 128 ? K - g : 128;
    for (int i = 0; i < n; ++i) b[i] = f32_bf16(x[g + i]);
    for (int j = 0; j < 4; ++j)
      for (int w = 0; w < 32; ++w) out[g + 32 * j + w] = b[4 * w + j];
  }
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // (GCC 12's AVX-512 headers: see avx512.cpp)
namespace {
// The 16 levels as bf16, twice over.
struct Nf4Bf16Table {
  alignas(64) bf16_t t[32];
  Nf4Bf16Table() {
    for (int i = 0; i < 32; ++i) t[i] = to_bf16(kNf4[i % 16]);
  }
};
const Nf4Bf16Table kNf4Bf16;

// One row's prefetch distance, as the fp32 kernel's (avx512.cpp: kNf4PrefetchBytes): a line per group of 128.
constexpr long kPrefetchBytes = 1024;

// The levels of the 32 nibbles in the low four bits of idx's words.
CC_AVX512_BF16 CC_INLINE __m512bh look_up(__m512i idx, __m512i table) {
  return (__m512bh)_mm512_permutexvar_epi16(idx, table);
}
// The four activation vectors of a group (nf4_order_bf16's order).
CC_AVX512_BF16 CC_INLINE void load_group(const bf16_t* xg, __m512bh (&x)[4]) {
  for (int j = 0; j < 4; ++j) x[j] = (__m512bh)_mm512_loadu_si512(xg + 32 * j);
}
// The sums of one group of 128 weights (or of one block, masked) against the four activation vectors.
CC_AVX512_BF16 CC_INLINE __m512 group_dot(__m512i v, __m512i table, const __m512bh (&x)[4]) {
  __m512 t = _mm512_dpbf16_ps(_mm512_setzero_ps(), look_up(v, table), x[0]);
  t = _mm512_dpbf16_ps(t, look_up(_mm512_srli_epi16(v, 4), table), x[1]);
  t = _mm512_dpbf16_ps(t, look_up(_mm512_srli_epi16(v, 8), table), x[2]);
  return _mm512_dpbf16_ps(t, look_up(_mm512_srli_epi16(v, 12), table), x[3]);
}

// Rows r, r + st, ...: far-apart streams, as in the other kernels.
template <int R>
CC_AVX512_BF16 CC_INLINE void nf4_block_bf16(const std::uint8_t* P, const float* S, long K, const bf16_t* xb, int r,
                                             long st, float* y) {
  const __m512i table = _mm512_load_si512(kNf4Bf16.t);
  __m512 acc[R];
  const std::uint8_t* p[R];
  const float* s[R];
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) {
    acc[i] = _mm512_setzero_ps();
    p[i] = P + (r + i * st) * K / 2;
    s[i] = S + (r + i * st) * K / 64;
  }
  const long groups = K / 128;
  for (long g = 0; g < groups; ++g) {
    __m512bh x[4];
    load_group(xb + g * 128, x);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const std::uint8_t* q = p[i] + g * 64;
      _mm_prefetch(reinterpret_cast<const char*>(q + kPrefetchBytes), _MM_HINT_T0);
      const __m512 t = group_dot(_mm512_loadu_si512(q), table, x);
      // Block 0's scale in lanes 0-7, block 1's in 8-15: a masked move, not vinsertf32x8 (no shuffle beside the
      // four vpermw, which bound the group).
      const __m512 sc = _mm512_mask_mov_ps(_mm512_set1_ps(s[i][2 * g]), 0xff00, _mm512_set1_ps(s[i][2 * g + 1]));
      acc[i] = _mm512_fmadd_ps(t, sc, acc[i]);
    }
  }
  if (K % 128 != 0) {  // the last block alone (K is a multiple of 64)
    __m512bh x[4];
    load_group(xb + groups * 128, x);
#pragma GCC unroll 16
    for (int i = 0; i < R; ++i) {
      const __m512 t = group_dot(_mm512_maskz_loadu_epi8(0xffffffffULL, p[i] + groups * 64), table, x);
      acc[i] = _mm512_fmadd_ps(t, _mm512_set1_ps(s[i][2 * groups]), acc[i]);
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < R; ++i) y[r + i * st] = _mm512_reduce_add_ps(acc[i]);
}
}  // namespace

CC_AVX512_BF16 void nf4_rows_avx512bf16(const std::uint8_t* P, const float* S, long K, const bf16_t* xb, int r0, int r1,
                                        float* y) {
  note_rows_ran(kNf4Rows, "avx512_bf16");
  const int q = (r1 - r0) / 4;
  for (int r = r0; r < r0 + q; ++r) nf4_block_bf16<4>(P, S, K, xb, r, q, y);
  for (int r = r0 + 4 * q; r < r1; ++r) nf4_block_bf16<1>(P, S, K, xb, r, 0, y);
}
#pragma GCC diagnostic pop
#endif  // CC_X86

}  // namespace claimcheck::kernels::gemv_detail
