// Chapter 6's decode kernels on the GPU, the code under test: a bf16 GEMV and a 4-bit (NF4, the CPU format of
// gemv.h) GEMV dequantising in registers, a batched bf16 GEMM for the batch sweep through cuBLAS, and a decode
// chain (the CPU DecodeStack's step, plus an optional lm_head) on them, captured in a CUDA graph and timed with
// CUDA events; the same chain through cuBLAS (cublasGemmEx, N = 1) is the competitor. Plain C++ interface: no
// CUDA or LibTorch header needed to call it. Errors: std::runtime_error with the CUDA / cuBLAS error's text.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "claimcheck/kernels/cuda/plan.h"
#include "claimcheck/kernels/gemv.h"

namespace claimcheck::kernels::cuda {

// For tests: one GEMV on the device, host arrays in and out (y = W x; x fp32, y fp32).
std::vector<float> gemv_bf16_host(const bf16_t* W, int N, int K, const float* x, const GemvFaults& f = {});
std::vector<float> gemv_nf4_host(const Nf4Matrix& W, const float* x, const GemvFaults& f = {});

// A decode chain on the device: the matrices of decode_plan(shape, vocab) (random weights, deterministic from the
// seed: kernels::decode_weights_bf16 per matrix as DecodeStack draws them; NF4 quantised by kernels::quantize_nf4),
// activations fp32, the step of DecodeStack::step (one token of context) then lm_head.
class GpuDecodeChain {
 public:
  // format "bf16" or "nf4"; threads: host threads to draw and quantise the weights with.
  GpuDecodeChain(const DecodeShape& s, int vocab, const std::string& format, std::uint64_t seed, int threads,
                 const GemvFaults& faults = {});
  ~GpuDecodeChain();
  GpuDecodeChain(const GpuDecodeChain&) = delete;
  GpuDecodeChain& operator=(const GpuDecodeChain&) = delete;

  const std::vector<MatShape>& plan() const;
  double weight_bytes() const;  // what the weights occupy on the device (the kernel's own count)
  double flops() const;
  // One token: x (hidden) in, the last layer's hidden state out (and the logits when vocab > 0).
  void step(const float* x, float* hidden_out, float* logits = nullptr);
  // The host copy of matrix i of the plan (bf16 chains; for tests), or its NF4 form (nf4 chains).
  std::vector<bf16_t> bf16_matrix(int i) const;
  Nf4Matrix nf4_matrix(int i) const;
  // Median seconds per token over `repeats` replays of the step captured in a CUDA graph (CUDA events), after a
  // warm-up replay; cublas = true runs the same chain with cublasGemmEx (bf16 chains only) instead of our GEMVs.
  double time_graph(int repeats, bool cublas = false);
  // Median seconds per token launching the kernels one by one (no graph).
  double time_eager(int repeats, bool cublas = false);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The GPU's name, SM count and compute capability ("NVIDIA H200, 132 SMs, sm_90").
std::string device_summary();

}  // namespace claimcheck::kernels::cuda
