// The attention kernel's tile sizes, shared by the host-side plan (attention_plan.cpp, g++) and the kernel
// (attention.cu, nvcc) so that the launch the plan reports is the launch that runs. Plain constexpr C++.
//
// Choice (both head dimensions): block_m = 128 query rows per CTA = 8 warps of 16 rows (256 threads), block_n = 64
// key rows per inner tile, K and V double-buffered in shared memory. Every shared-memory row is padded by 8 bf16
// (16 bytes) so that the 8 row addresses of one ldmatrix 8x8 matrix fall in 8 distinct groups of 4 banks (row
// stride 144 B = 36 words for D=64, 272 B = 68 words for D=128; both are 4 mod 32 words).
// Shared memory: (block_m + 4 * block_n) * (D + 8) * 2 bytes = 55,296 B (D=64), 104,448 B (D=128): two CTAs would
// fit in the 228 KB of one H200 SM either way, but at D=128 the kernel's 163-167 registers per thread allow one
// (attention.cu says why it is built so: no spills).
#pragma once

namespace claimcheck::kernels::cuda::attn_tiles {

constexpr int kBlockM = 128;  // query rows per CTA (8 warps x 16 rows)
constexpr int kBlockN = 64;   // key rows per inner tile
constexpr int kWarps = kBlockM / 16;
constexpr int kThreads = 32 * kWarps;
constexpr int kPad = 8;  // bf16 elements of padding per shared-memory row (16 bytes)

constexpr int row_stride(int D) { return D + kPad; }  // in bf16 elements
// Q tile once, K and V tiles twice each (double buffer).
constexpr int smem_bytes(int D) { return (kBlockM + 4 * kBlockN) * row_stride(D) * 2; }

}  // namespace claimcheck::kernels::cuda::attn_tiles
