// Causal (or full) bf16 attention forward on Hopper tensor cores: FlashAttention-2 style tiling (a block of query
// rows per CTA, key/value tiles streamed through shared memory, online softmax in fp32, mma.sync m16n8k16 bf16
// with fp32 accumulation). No external attention library. Layout [B, H, T, D] contiguous; D = 64 or 128; scale
// 1/sqrt(D). Launch shapes: plan.h's attention_launch. Throws std::invalid_argument for an unsupported shape and
// std::runtime_error with the CUDA error's text on failure.
#pragma once
#include <vector>

#include "claimcheck/kernels/cuda/plan.h"

namespace claimcheck::kernels::cuda {

// Device pointers, 16-byte aligned; o must not alias q, k or v (the kernel reads them through __restrict__);
// stream: a cudaStream_t (nullptr = the default stream).
void attention_fwd_bf16(const bf16_t* q, const bf16_t* k, const bf16_t* v, bf16_t* o, const AttnDims& d, bool causal,
                        void* stream = nullptr);
// For tests: host arrays in, the host result out (uploads, runs, downloads).
std::vector<bf16_t> attention_fwd_bf16_host(const bf16_t* q, const bf16_t* k, const bf16_t* v, const AttnDims& d,
                                            bool causal);
// Seconds per launch on random device data of the shape, after a warm-up: the median over `repeats` timings
// (CUDA events) of 10 back-to-back launches each, so that host-side launch work does not count at small shapes.
double time_attention_fwd_bf16(const AttnDims& d, bool causal, int repeats);

// A fault a test plants to prove the checks fail: the kernel skips the online-softmax rescale of the running
// output (wrong whenever a later key tile raises a row's maximum).
void attention_plant_fault(bool no_rescale);

}  // namespace claimcheck::kernels::cuda
