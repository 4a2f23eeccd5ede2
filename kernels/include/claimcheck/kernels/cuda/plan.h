// Host-side arithmetic of the CUDA kernels (chapter 6 on the GPU): what a decode chain reads, how the GEMV and
// attention kernels are launched, and NF4 decoding shared by the kernels and the host. Plain C++ (compiled into
// claimcheck_kernels everywhere, CUDA or not), so that the CPU tests cover it where no GPU is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "claimcheck/kernels/gemv.h"

#if defined(__CUDACC__)
#define CLAIMCHECK_HD __host__ __device__ __forceinline__
#else
#define CLAIMCHECK_HD inline
#endif

namespace claimcheck::kernels::cuda {

// ---- NF4 (the CPU format of gemv.h: low nibble = even k, one fp32 absmax per 64 weights along K) -------------
// The 16 levels as the GPU kernels hold them (constant memory there); equal to kernels::nf4_levels().
CLAIMCHECK_HD float nf4_level(unsigned code) {
  constexpr float L[16] = {-1.0f,
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
  return L[code & 15u];
}
// Weight 2i (low nibble) and 2i+1 (high nibble) of a packed byte, times the block's scale.
CLAIMCHECK_HD void nf4_decode_byte(std::uint8_t b, float scale, float* w_even, float* w_odd) {
  *w_even = nf4_level(b & 15u) * scale;
  *w_odd = nf4_level(b >> 4) * scale;
}

// ---- The decode chain ------------------------------------------------------------------------------------------
struct MatShape {
  int N = 0, K = 0;
  std::string name;  // "q", "k", "v", "o", "gate", "up", "down", "lm_head"
};
// The matrices one decode step reads, in order: per layer q, k, v, o, gate, up, down; then lm_head [vocab, hidden]
// when vocab > 0.
std::vector<MatShape> decode_plan(const DecodeShape& s, int vocab);
// Bytes a step reads in `format` ("bf16": 2 per weight; "nf4": half a byte per weight + 4 per 64 weights).
double plan_weight_bytes(const std::vector<MatShape>& plan, const std::string& format);
double plan_flops(const std::vector<MatShape>& plan);  // 2 per weight

// ---- GEMV launch shapes ----------------------------------------------------------------------------------------
// One warp per output row for the bf16 kernel (each lane reads 16-byte vectors of 8 weights); several rows per
// block. The NF4 kernel: one warp per row too, each lane 16 bytes = 32 weights (half an NF4 block) per step.
struct GemvLaunch {
  int threads = 0;  // per block
  int rows_per_block = 0;
  int blocks = 0;
  int k_per_step = 0;  // weights a warp covers per loop step
};
// Throws std::invalid_argument when K is not a multiple of the kernel's vector width (bf16: 8; nf4: 64).
GemvLaunch gemv_launch(int N, int K, const std::string& format);

// ---- Attention tiling (FlashAttention-2 style forward) -----------------------------------------------------------
struct AttnDims {
  int B = 1, H = 1, T = 0, D = 0;
};
struct AttnLaunch {
  int block_m = 0, block_n = 0;  // query rows per block, key rows per inner tile
  int threads = 0;               // 32 * warps; each warp owns 16 query rows
  int smem_bytes = 0;            // dynamic shared memory per block
  int grid_x = 0, grid_y = 0;    // query tiles, B * H
};
// Throws std::invalid_argument for a head dimension other than 64 or 128, or T < 1.
AttnLaunch attention_launch(const AttnDims& d);
// Key tiles a query tile visits: all of ceil(T / block_n) without a mask, those at or below the diagonal with one.
long long attention_tiles_visited(const AttnDims& d, bool causal);
// FLOPs of the forward (4 T^2 D per head, half of that with a causal mask, as FlashAttention counts them).
double attention_flops(const AttnDims& d, bool causal);

}  // namespace claimcheck::kernels::cuda
