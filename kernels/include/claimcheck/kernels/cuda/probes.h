// Chapter 6's GPU probes (the measured roof): copy bandwidth, the bf16 GEMM peak through cuBLAS, and one Llama
// layer's GEMMs swept over the batch (the knee where decode turns compute-bound). The read-only probe is
// stream.h's. Plain C++ interface; std::runtime_error with the CUDA / cuBLAS error's text on failure.
#pragma once
#include <cstddef>
#include <vector>

#include "claimcheck/kernels/cuda/plan.h"
#include "claimcheck/kernels/roofline.h"

namespace claimcheck::kernels::cuda {

struct CopyResult {
  double seconds = 0;  // median of the timed repetitions
  double bytes = 0;    // bytes read + bytes written per repetition
  bool valid = false;  // the copy's destination equals its source (checked once, on the host)
};
// A device-to-device copy kernel (16-byte loads and stores, grid-stride) of `bytes`.
CopyResult copy_bandwidth(std::size_t bytes, int repeats);

struct GemmResult {
  double seconds = 0;      // median
  double flops = 0;        // 2 M N K
  double max_rel_err = 0;  // of a few sampled outputs against an fp64 dot product on the host (validation)
};
// C [M, N] = A [M, K] B [K, N], bf16 in, fp32 accumulate, bf16 out, through cublasGemmEx (tensor cores),
// random data drawn on the device.
GemmResult gemm_bf16_cublas(int M, int N, int K, int repeats);

// The compute roof: the bf16 GEMM peak, 8192^3 through cuBLAS. faults.few_chains / faults.scalar (planted by tests,
// the CPU probe's fault names): a 512^3 GEMM instead, too little work to fill the device (a fraction of its peak).
GemmResult gemm_peak_bf16(int repeats, const RooflineFaults& faults = {});

struct SweepPoint {
  int batch = 0;
  double seconds = 0;  // one layer's seven GEMMs at this batch (median)
  double flops = 0;    // 2 * batch * weights
  double bytes = 0;    // the weights (2 per bf16) + the activations in and out
};
// One Llama layer's q, k, v, o, gate, up, down as [batch, K] x [K, N] GEMMs through cuBLAS, for each batch.
// Planted by tests (the CPU kernels' fault names): faults.gemm_per_token runs each batch as `batch` GEMVs,
// re-reading the weights per token; read_weights_twice runs every GEMM twice; first_tile_only computes only the
// first 4 tokens of a batch (the time of a batch that was not done).
std::vector<SweepPoint> layer_batch_sweep(const DecodeShape& s, const std::vector<int>& batches, int repeats,
                                          const GemvFaults& faults = {});

}  // namespace claimcheck::kernels::cuda
