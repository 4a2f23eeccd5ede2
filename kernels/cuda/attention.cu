// bf16 attention forward, FlashAttention-2 style, on mma.sync tensor cores (attention.h is the contract).
//
// Work split. Grid (ceil(T / 128), B * H). A CTA owns 128 query rows of one (batch, head): 8 warps, warp w the 16
// rows m0 + 16 w .. m0 + 16 w + 15. It loads its Q tile into shared memory once, then streams key tiles of 64 rows
// (K and V, double-buffered, cp.async 16 B with zero fill beyond T) up to the diagonal when causal. Per key tile a
// warp computes S = Q K^T (16 x 64, fp32, mma m16n8k16), scales it into the log2 domain (x log2(e) / sqrt(D)),
// masks (key > query with the causal mask, key >= T always), updates its rows' running max m and running sum l,
// rescales its output accumulator O (16 x D fp32 registers) by exp2(m_old - m_new), converts P = exp2(S - m_new)
// to bf16 A fragments in registers and accumulates O += P V. At the end O / l is stored as bf16 (rows < T only).
// Tile sizes: attention_tiles.h (shared with the host plan in attention_plan.cpp).
//
// ---- Fragment layouts (PTX ISA, mma.m16n8k16 with .bf16, and ldmatrix) -- g = lane / 4, t = lane % 4 ----------
//   A (16x16, row-major), 4 regs of 2 bf16 (low half = lower column):
//       a0 = A[g][2t, 2t+1]   a1 = A[g+8][2t, 2t+1]   a2 = A[g][2t+8, 2t+9]   a3 = A[g+8][2t+8, 2t+9]
//   B (16x8, "col"), 2 regs:  b0 = B[2t, 2t+1][g]      b1 = B[2t+8, 2t+9][g]
//   C (16x8 fp32), 4 regs:    c0, c1 = C[g][2t, 2t+1]  c2, c3 = C[g+8][2t, 2t+1]
//   ldmatrix.x4: lanes 8i .. 8i+7 give the 8 row addresses (16 B each) of matrix i; register i of a lane receives
//       matrix i's row g, elements 2t, 2t+1. With .trans it receives elements (row 2t, col g), (row 2t+1, col g).
//
// Hand trace of the addresses used below (lane l, r = l % 8, i = l / 8 = matrix index):
// (1) Q as A operand, k-step kk (d columns 16 kk .. 16 kk + 15), warp rows 0..15:
//       address row = l % 16, column = 16 kk + (l / 16) * 8.
//       l = 0..7  -> i=0: rows 0..7,  cols +0  -> reg0 = Q[g][2t..]      = a0
//       l = 8..15 -> i=1: rows 8..15, cols +0  -> reg1 = Q[g+8][2t..]    = a1
//       l = 16..23-> i=2: rows 0..7,  cols +8  -> reg2 = Q[g][2t+8..]    = a2
//       l = 24..31-> i=3: rows 8..15, cols +8  -> reg3 = Q[g+8][2t+8..]  = a3            (matches A above)
// (2) K as B operand of S = Q K^T: B[k][n] = K[key n][d k]. K is stored row = key, col = d, so a non-transposed
//     8x8 load of (8 keys x 8 d) gives a lane K[key g][d 2t, 2t+1] = B[2t, 2t+1][g] = b0 exactly.
//     For key pair p (key n-tiles 2p and 2p+1 = keys 16p .. 16p + 15), k-step kk:
//       address row (key) = 16 p + (l / 16) * 8 + l % 8, column (d) = 16 kk + ((l / 8) & 1) * 8.
//       l = 0..7  -> i=0: keys 16p+0..7,  d +0 -> reg0 = b0 of n-tile 2p
//       l = 8..15 -> i=1: keys 16p+0..7,  d +8 -> reg1 = b1 of n-tile 2p
//       l = 16..23-> i=2: keys 16p+8..15, d +0 -> reg2 = b0 of n-tile 2p+1
//       l = 24..31-> i=3: keys 16p+8..15, d +8 -> reg3 = b1 of n-tile 2p+1
// (3) P as A operand of O += P V, k-step kk (keys 16 kk .. 16 kk + 15 of the tile): the S accumulators of n-tiles
//     2kk and 2kk+1 hold S[g][16kk + 2t, +1] (c0,c1 of 2kk), S[g+8][16kk + 2t, +1] (c2,c3 of 2kk),
//     S[g][16kk + 8 + 2t, +1] (c0,c1 of 2kk+1), S[g+8][16kk + 8 + 2t, +1] (c2,c3 of 2kk+1): exactly a0, a1, a2, a3.
//     So a0 = pack(s[2kk][0], s[2kk][1]), a1 = pack(s[2kk][2], s[2kk][3]), a2 = pack(s[2kk+1][0], s[2kk+1][1]),
//     a3 = pack(s[2kk+1][2], s[2kk+1][3]) -- no data movement between lanes.
// (4) V as B operand: B[k][n] = V[key k][d n]; V stored row = key, col = d, so we need the transposed load:
//     .trans of (8 keys x 8 d) gives a lane V[key 2t, 2t+1][d g] = B[2t, 2t+1][g] = b0.
//     For k-step kk and d-tile pair q (d n-tiles 2q, 2q+1 = d 16q .. 16q + 15):
//       address row (key) = 16 kk + l % 16, column (d) = 16 q + (l / 16) * 8.
//       l = 0..7  -> i=0: keys +0..7,  d +0 -> reg0 = b0 of d-tile 2q
//       l = 8..15 -> i=1: keys +8..15, d +0 -> reg1 = b1 of d-tile 2q
//       l = 16..23-> i=2: keys +0..7,  d +8 -> reg2 = b0 of d-tile 2q+1
//       l = 24..31-> i=3: keys +8..15, d +8 -> reg3 = b1 of d-tile 2q+1
// (5) Element positions of the C fragments: s[nt][e] (e = 0, 1) is query row g, key n0 + 8 nt + 2t + e;
//     s[nt][2 + e] is query row g + 8, same key. o[dt][e] is row g, d = 8 dt + 2t + e; o[dt][2 + e] row g + 8.
//     Row g's values live in the 4 lanes of a quad (lanes 4g .. 4g+3): max and sum reduce with shfl_xor 1 and 2.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_tiles.h"
#include "claimcheck/base/random.h"
#include "claimcheck/base/timing.h"
#include "claimcheck/kernels/cuda/attention.h"

namespace claimcheck::kernels::cuda {
namespace {

namespace tiles = attn_tiles;

std::atomic<bool> g_no_rescale{false};

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("attention: ") + what + ": " + cudaGetErrorString(e));
}

// ---- PTX wrappers ---------------------------------------------------------------------------------------------
__device__ __forceinline__ std::uint32_t smem_addr(const void* p) {
  return static_cast<std::uint32_t>(__cvta_generic_to_shared(p));
}
// 16-byte async copy global -> shared; src_bytes = 0 writes 16 zero bytes and reads nothing.
__device__ __forceinline__ void cp_async16(std::uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(std::uint32_t r[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(std::uint32_t r[4], std::uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// c += a * b, m16n8k16, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void mma_bf16(float c[4], const std::uint32_t a[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// Two floats -> one register of two bf16 (round to nearest even), `lo` in the low 16 bits (the lower column).
__device__ __forceinline__ std::uint32_t pack_bf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<std::uint32_t*>(&v);
}

// Async copy of `rows` rows (starting at global row row0 of a [T, D] head) into a shared tile of row stride
// D + 8; rows >= T are zero-filled (their source address clamped to row T - 1, a valid address; no byte is read).
template <int D, int ROWS>
__device__ __forceinline__ void load_tile(__nv_bfloat16* s, const __nv_bfloat16* g, int row0, int T, int tid) {
  constexpr int kChunksPerRow = D / 8;  // 16-byte chunks
  constexpr int kChunks = ROWS * kChunksPerRow;
  static_assert(kChunks % tiles::kThreads == 0, "tile chunks must divide evenly among the threads");
  constexpr int kRowsPerPass = tiles::kThreads / kChunksPerRow;
  // Chunk c = it * kThreads + tid: row c / kChunksPerRow = it * kRowsPerPass + tid / kChunksPerRow (kThreads is a
  // multiple of kChunksPerRow), column (c % kChunksPerRow) * 8 = (tid % kChunksPerRow) * 8 for every pass.
  static_assert(tiles::kThreads % kChunksPerRow == 0, "a pass must cover whole rows");
  const int r0 = tid / kChunksPerRow, col = (tid % kChunksPerRow) * 8;
  const std::uint32_t dst0 = smem_addr(s + r0 * (D + tiles::kPad) + col);
#pragma unroll
  for (int it = 0; it < kChunks / tiles::kThreads; ++it) {
    const int r = it * kRowsPerPass + r0;
    const int grow = row0 + r;
    const bool in = grow < T;
    const __nv_bfloat16* src = g + static_cast<std::size_t>(in ? grow : T - 1) * D + col;
    cp_async16(dst0 + it * kRowsPerPass * (D + tiles::kPad) * 2, src, in ? 16 : 0);
  }
}

// Two CTAs (16 warps) per SM for D = 64 (ptxas: ~127 registers, no spill under the 128 cap). For D = 128 the cap
// of 128 registers that two CTAs need made ptxas spill (16-32 bytes); one CTA per SM lets it keep everything in
// registers (163-167 with nvcc 13.0), at 8 warps per SM.
template <int D>
constexpr int kMinBlocksPerSm = (D == 64) ? 2 : 1;

template <int D, bool kCausal>
__global__ void __launch_bounds__(tiles::kThreads, kMinBlocksPerSm<D>)
    attention_fwd_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                         const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ o, int T, float scale_log2,
                         int no_rescale) {
  constexpr bool causal = kCausal;
  constexpr int BM = tiles::kBlockM, BN = tiles::kBlockN, S = (D + tiles::kPad);
  constexpr int NT = BN / 8;   // n8 tiles of S per warp
  constexpr int DT = D / 8;    // n8 tiles of O per warp
  constexpr int KD = D / 16;   // k-steps of Q K^T
  constexpr int KN = BN / 16;  // k-steps of P V
  // Q kept in registers as A fragments for D = 64 (16 regs); re-read from shared memory per key tile for D = 128
  // (32 more registers would not fit two CTAs per SM next to the 64 O accumulators).
  constexpr bool kQInRegs = (D == 64);

  extern __shared__ __align__(16) unsigned char smem_raw[];
  __nv_bfloat16* sQ = reinterpret_cast<__nv_bfloat16*>(smem_raw);
  __nv_bfloat16* sK0 = sQ + BM * S;  // K buffer b: sK0 + b * BN * S
  __nv_bfloat16* sV0 = sK0 + 2 * BN * S;

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t = lane & 3;
  // Causal: heavy query tiles (more key tiles) first, so the short ones fill the tail of the grid.
  const int m_block = causal ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;
  const int m0 = m_block * BM;
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * T * D;
  const __nv_bfloat16* qh = q + head;
  const __nv_bfloat16* kh = k + head;
  const __nv_bfloat16* vh = v + head;

  const int q_end = causal ? min(m0 + BM, T) : T;  // keys 0 .. q_end - 1 can matter to this CTA
  const int n_tiles = (q_end + BN - 1) / BN;

  const int wrow0 = m0 + warp * 16;                // first query row of this warp
  const int row_a = wrow0 + g, row_b = row_a + 8;  // the two rows this lane holds
  const bool warp_has_rows = wrow0 < T;

  // Prologue: Q (group 0), key tile 0 (group 1).
  load_tile<D, BM>(sQ, qh, m0, T, tid);
  cp_async_commit();
  load_tile<D, BN>(sK0, kh, 0, T, tid);
  load_tile<D, BN>(sV0, vh, 0, T, tid);
  cp_async_commit();
  cp_async_wait<1>();  // Q has landed (this thread's part)
  __syncthreads();     // ... and everyone's

  const __nv_bfloat16* sQw = sQ + warp * 16 * S;  // this warp's 16 rows
  // (1): lane's ldmatrix row address inside the warp's Q rows (add 16 kk columns per k-step).
  const std::uint32_t q_lane = smem_addr(sQw + (lane & 15) * S + (lane >> 4) * 8);
  std::uint32_t qf[kQInRegs ? KD : 1][4];
  if constexpr (kQInRegs) {
#pragma unroll
    for (int kk = 0; kk < KD; ++kk) ldmatrix_x4(qf[kk], q_lane + kk * 16 * 2);
  }

  float o_acc[DT][4];
#pragma unroll
  for (int dt = 0; dt < DT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) o_acc[dt][e] = 0.f;
  float m_a = -INFINITY, m_b = -INFINITY;  // running max (log2 domain) of rows row_a, row_b
  float l_a = 0.f, l_b = 0.f;              // this lane's partial running sums (quad-reduced at the end)

  // Lane offsets (bytes) of the K (2) and V (4) ldmatrix addresses inside a tile.
  const std::uint32_t k_lane_off = (((lane >> 4) * 8 + (lane & 7)) * S + ((lane >> 3) & 1) * 8) * 2;
  const std::uint32_t v_lane_off = ((lane & 15) * S + (lane >> 4) * 8) * 2;

  for (int j = 0; j < n_tiles; ++j) {
    const int buf = j & 1;
    if (j + 1 < n_tiles) {
      const int nb = (j + 1) & 1;  // last read in iteration j - 1, released by its closing barrier
      load_tile<D, BN>(sK0 + nb * BN * S, kh, (j + 1) * BN, T, tid);
      load_tile<D, BN>(sV0 + nb * BN * S, vh, (j + 1) * BN, T, tid);
      cp_async_commit();
      cp_async_wait<1>();  // everything but tile j + 1: tile j has landed
    } else {
      cp_async_wait<0>();
    }
    __syncthreads();  // tile j visible to all warps

    const int n0 = j * BN;
    // A warp whose 16 rows all lie before this tile's first key (causal), or past T, has nothing to add.
    const bool skip = !warp_has_rows || (causal && n0 > wrow0 + 15);
    if (!skip) {
      const std::uint32_t sK = smem_addr(sK0 + buf * BN * S);
      const std::uint32_t sV = smem_addr(sV0 + buf * BN * S);

      // ---- S = Q K^T ----
      float s[NT][4];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] = 0.f;
#pragma unroll
      for (int kk = 0; kk < KD; ++kk) {
        std::uint32_t a[4];
        if constexpr (kQInRegs) {
#pragma unroll
          for (int e = 0; e < 4; ++e) a[e] = qf[kk][e];
        } else {
          ldmatrix_x4(a, q_lane + kk * 16 * 2);
        }
#pragma unroll
        for (int p = 0; p < NT / 2; ++p) {
          std::uint32_t b[4];
          ldmatrix_x4(b, sK + k_lane_off + (p * 16 * S + kk * 16) * 2);
          mma_bf16(s[2 * p], a, b[0], b[1]);
          mma_bf16(s[2 * p + 1], a, b[2], b[3]);
        }
      }

      // ---- scale, mask, online softmax ----
      const bool need_mask = (n0 + BN > T) || (causal && n0 + BN - 1 > wrow0);
      float mx_a = m_a, mx_b = m_b;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          float xa = s[nt][e] * scale_log2, xb = s[nt][2 + e] * scale_log2;
          if (need_mask) {
            const int key = n0 + nt * 8 + 2 * t + e;  // (5)
            if (key >= T || (causal && key > row_a)) xa = -INFINITY;
            if (key >= T || (causal && key > row_b)) xb = -INFINITY;
          }
          s[nt][e] = xa;
          s[nt][2 + e] = xb;
          mx_a = fmaxf(mx_a, xa);
          mx_b = fmaxf(mx_b, xb);
        }
      }
      // The 4 lanes of a quad hold one row between them.
      mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 1));
      mx_a = fmaxf(mx_a, __shfl_xor_sync(0xffffffffu, mx_a, 2));
      mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 1));
      mx_b = fmaxf(mx_b, __shfl_xor_sync(0xffffffffu, mx_b, 2));
      // A row with no unmasked key yet keeps max -inf; subtract 0 instead so that exp2 sees -inf - 0 = -inf (-> 0)
      // and never -inf - (-inf) = NaN. m_old - use: (-inf) - finite = -inf -> alpha 0 (O and l are 0 then anyway).
      const float use_a = (mx_a == -INFINITY) ? 0.f : mx_a;
      const float use_b = (mx_b == -INFINITY) ? 0.f : mx_b;
      const float alpha_a = exp2f(m_a - use_a), alpha_b = exp2f(m_b - use_b);
      m_a = mx_a;
      m_b = mx_b;
      float sum_a = 0.f, sum_b = 0.f;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        s[nt][0] = exp2f(s[nt][0] - use_a);
        s[nt][1] = exp2f(s[nt][1] - use_a);
        s[nt][2] = exp2f(s[nt][2] - use_b);
        s[nt][3] = exp2f(s[nt][3] - use_b);
        sum_a += s[nt][0] + s[nt][1];
        sum_b += s[nt][2] + s[nt][3];
      }
      l_a = l_a * alpha_a + sum_a;
      l_b = l_b * alpha_b + sum_b;
      if (!no_rescale) {  // the planted fault skips this
#pragma unroll
        for (int dt = 0; dt < DT; ++dt) {
          o_acc[dt][0] *= alpha_a;
          o_acc[dt][1] *= alpha_a;
          o_acc[dt][2] *= alpha_b;
          o_acc[dt][3] *= alpha_b;
        }
      }

      // ---- O += P V ----
#pragma unroll
      for (int kk = 0; kk < KN; ++kk) {
        std::uint32_t a[4];  // (3)
        a[0] = pack_bf16(s[2 * kk][0], s[2 * kk][1]);
        a[1] = pack_bf16(s[2 * kk][2], s[2 * kk][3]);
        a[2] = pack_bf16(s[2 * kk + 1][0], s[2 * kk + 1][1]);
        a[3] = pack_bf16(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
        for (int qd = 0; qd < DT / 2; ++qd) {
          std::uint32_t b[4];
          ldmatrix_x4_trans(b, sV + v_lane_off + (kk * 16 * S + qd * 16) * 2);  // (4)
          mma_bf16(o_acc[2 * qd], a, b[0], b[1]);
          mma_bf16(o_acc[2 * qd + 1], a, b[2], b[3]);
        }
      }
    }
    __syncthreads();  // every warp is done with buffer `buf` before iteration j + 1 refills it (tile j + 2)
  }

  // ---- O / l, store ----
  l_a += __shfl_xor_sync(0xffffffffu, l_a, 1);
  l_a += __shfl_xor_sync(0xffffffffu, l_a, 2);
  l_b += __shfl_xor_sync(0xffffffffu, l_b, 1);
  l_b += __shfl_xor_sync(0xffffffffu, l_b, 2);
  const float inv_a = l_a > 0.f ? 1.f / l_a : 0.f;
  const float inv_b = l_b > 0.f ? 1.f / l_b : 0.f;
  __nv_bfloat16* oh = o + head;
  if (row_a < T) {
    __nv_bfloat16* dst = oh + static_cast<std::size_t>(row_a) * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
      *reinterpret_cast<__nv_bfloat162*>(dst + dt * 8) =
          __floats2bfloat162_rn(o_acc[dt][0] * inv_a, o_acc[dt][1] * inv_a);
  }
  if (row_b < T) {
    __nv_bfloat16* dst = oh + static_cast<std::size_t>(row_b) * D + 2 * t;
#pragma unroll
    for (int dt = 0; dt < DT; ++dt)
      *reinterpret_cast<__nv_bfloat162*>(dst + dt * 8) =
          __floats2bfloat162_rn(o_acc[dt][2] * inv_b, o_acc[dt][3] * inv_b);
  }
}

template <int D>
void launch(const __nv_bfloat16* q, const __nv_bfloat16* k, const __nv_bfloat16* v, __nv_bfloat16* o, const AttnDims& d,
            const AttnLaunch& L, bool causal, cudaStream_t stream) {
  static_assert(tiles::smem_bytes(D) <= 227 * 1024, "shared memory over the per-block limit");
  auto kernel = causal ? attention_fwd_kernel<D, true> : attention_fwd_kernel<D, false>;
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L.smem_bytes),
        "cudaFuncSetAttribute");
  const float scale_log2 = static_cast<float>(1.4426950408889634 / std::sqrt(static_cast<double>(D)));
  kernel<<<dim3(L.grid_x, L.grid_y), L.threads, L.smem_bytes, stream>>>(q, k, v, o, d.T, scale_log2,
                                                                        g_no_rescale.load() ? 1 : 0);
  check(cudaGetLastError(), "attention_fwd_kernel launch");
}

// Frees on scope exit (errors on the way out are ignored: the first error has already been thrown).
struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(std::size_t bytes) { check(cudaMalloc(&p, bytes), "cudaMalloc"); }
  ~DeviceBuffer() {
    if (p) cudaFree(p);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  bf16_t* bf16() const { return static_cast<bf16_t*>(p); }
};
struct Event {
  cudaEvent_t e = nullptr;
  Event() { check(cudaEventCreate(&e), "cudaEventCreate"); }
  ~Event() {
    if (e) cudaEventDestroy(e);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
};

// Deterministic pseudo-random bf16 in [-2, 2) (a hash of the index and a seed): timing data only.
__global__ void fill_random(__nv_bfloat16* x, std::size_t n, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float u = base::unit_float(base::splitmix64(static_cast<std::uint64_t>(i) * base::kGoldenGamma + seed));
    x[i] = __float2bfloat16(4.0f * u - 2.0f);
  }
}

std::size_t elements(const AttnDims& d) {
  return static_cast<std::size_t>(d.B) * d.H * static_cast<std::size_t>(d.T) * d.D;
}

}  // namespace

void attention_plant_fault(bool no_rescale) { g_no_rescale.store(no_rescale); }

void attention_fwd_bf16(const bf16_t* q, const bf16_t* k, const bf16_t* v, bf16_t* o, const AttnDims& d, bool causal,
                        void* stream) {
  const AttnLaunch L = attention_launch(d);  // throws std::invalid_argument for an unsupported shape
  for (const void* p : {static_cast<const void*>(q), static_cast<const void*>(k), static_cast<const void*>(v),
                        static_cast<const void*>(o)}) {
    if (p == nullptr) throw std::invalid_argument("attention: null pointer");
    if (reinterpret_cast<std::uintptr_t>(p) % 16 != 0)
      throw std::invalid_argument("attention: pointers must be 16-byte aligned (cp.async 16-byte copies)");
  }
  const auto* q_ = reinterpret_cast<const __nv_bfloat16*>(q);
  const auto* k_ = reinterpret_cast<const __nv_bfloat16*>(k);
  const auto* v_ = reinterpret_cast<const __nv_bfloat16*>(v);
  auto* o_ = reinterpret_cast<__nv_bfloat16*>(o);
  auto s = static_cast<cudaStream_t>(stream);
  if (d.D == 64)
    launch<64>(q_, k_, v_, o_, d, L, causal, s);
  else
    launch<128>(q_, k_, v_, o_, d, L, causal, s);
}

std::vector<bf16_t> attention_fwd_bf16_host(const bf16_t* q, const bf16_t* k, const bf16_t* v, const AttnDims& d,
                                            bool causal) {
  attention_launch(d);  // validate before allocating
  const std::size_t n = elements(d), bytes = n * sizeof(bf16_t);
  DeviceBuffer dq(bytes), dk(bytes), dv(bytes), dout(bytes);
  check(cudaMemcpy(dq.p, q, bytes, cudaMemcpyHostToDevice), "cudaMemcpy q");
  check(cudaMemcpy(dk.p, k, bytes, cudaMemcpyHostToDevice), "cudaMemcpy k");
  check(cudaMemcpy(dv.p, v, bytes, cudaMemcpyHostToDevice), "cudaMemcpy v");
  check(cudaMemset(dout.p, 0xFF, bytes), "cudaMemset");  // NaN pattern: an unwritten output cannot pass as zero
  attention_fwd_bf16(dq.bf16(), dk.bf16(), dv.bf16(), dout.bf16(), d, causal, nullptr);
  check(cudaDeviceSynchronize(), "attention_fwd_kernel");
  std::vector<bf16_t> out(n);
  check(cudaMemcpy(out.data(), dout.p, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy out");
  return out;
}

double time_attention_fwd_bf16(const AttnDims& d, bool causal, int repeats) {
  attention_launch(d);
  repeats = std::max(repeats, 1);
  const std::size_t n = elements(d), bytes = n * sizeof(bf16_t);
  DeviceBuffer dq(bytes), dk(bytes), dv(bytes), dout(bytes);
  const int fill_blocks = static_cast<int>(std::min<std::size_t>((n + 255) / 256, 4096));
  fill_random<<<fill_blocks, 256>>>(static_cast<__nv_bfloat16*>(dq.p), n, 1u);
  fill_random<<<fill_blocks, 256>>>(static_cast<__nv_bfloat16*>(dk.p), n, 2u);
  fill_random<<<fill_blocks, 256>>>(static_cast<__nv_bfloat16*>(dv.p), n, 3u);
  check(cudaGetLastError(), "fill_random launch");
  for (int w = 0; w < 2; ++w) attention_fwd_bf16(dq.bf16(), dk.bf16(), dv.bf16(), dout.bf16(), d, causal, nullptr);
  check(cudaDeviceSynchronize(), "attention warm-up");
  Event t0, t1;
  std::vector<double> times;
  times.reserve(repeats);
  constexpr int kBackToBack = 10;  // launches per timing: the host's work per launch overlaps the device's
  for (int r = 0; r < repeats; ++r) {
    check(cudaEventRecord(t0.e), "cudaEventRecord");
    for (int i = 0; i < kBackToBack; ++i)
      attention_fwd_bf16(dq.bf16(), dk.bf16(), dv.bf16(), dout.bf16(), d, causal, nullptr);
    check(cudaEventRecord(t1.e), "cudaEventRecord");
    check(cudaEventSynchronize(t1.e), "attention_fwd_kernel");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, t0.e, t1.e), "cudaEventElapsedTime");
    times.push_back(ms * 1e-3 / kBackToBack);
  }
  return base::median(std::move(times));
}

}  // namespace claimcheck::kernels::cuda
