// Reference attention (chapter 2): deliberately plain.
//  - attention_fp64: independent fp64 loops (scores, causal mask, softmax with max subtraction, sum).
//  - torch_attention: LibTorch's scaled-dot-product attention, the library the series compares with.
//    Only reference/src/torch/ includes <torch/torch.h>.
#pragma once
#include <string>
#include <vector>

namespace claimcheck::ref {

struct AttnShape {
  int B = 1, H = 1, T = 1, D = 64;
  long elements() const { return static_cast<long>(B) * H * T * D; }
};

// q, k, v, out: [B, H, T, D] row-major.
void attention_fp64(const double* q, const double* k, const double* v, double* out, const AttnShape& s,
                    bool causal = true);
// What an fp32 causal attention wrote into `out`, against the fp64 rows of attention_fp64 on 32 rows spread over the
// heads and the sequence (the first and the last row among them): the largest absolute error. A timed run's check
// of its output (the benchmark rows): fp32 kernels read about 1e-6.
double attention_sampled_error(const float* q, const float* k, const float* v, const float* out, const AttnShape& s);

// LibTorch, fp32 or fp64, causal. Throws std::runtime_error when not built with LibTorch.
std::vector<float> torch_attention(const float* q, const float* k, const float* v, const AttnShape& s);
std::vector<double> torch_attention(const double* q, const double* k, const double* v, const AttnShape& s);
bool torch_available();
// LibTorch's CUDA scaled-dot-product attention (its flash kernel for causal bf16 on Hopper), the GPU competitor:
// seconds per call on random bf16 [B, H, T, D] data, the median of `repeats` timings of 10 back-to-back calls
// (host clock, the queue drained by a read of the result). Throws std::runtime_error where LibTorch has no CUDA
// device (a CPU build of it, no GPU) or there is no LibTorch.
double torch_sdpa_cuda_bf16_seconds(const AttnShape& s, bool causal, int repeats);
// The benchmark's competitor: the same call held ready, so that a timing loop times the library and nothing else
// (the inputs wrapped once as tensors, the output kept as one). The inputs must outlive it.
class TorchSdpa {
 public:
  TorchSdpa(const float* q, const float* k, const float* v, const AttnShape& s);
  ~TorchSdpa();
  TorchSdpa(const TorchSdpa&) = delete;
  TorchSdpa& operator=(const TorchSdpa&) = delete;
  void run();                // O = causal SDPA(Q, K, V)
  const float* out() const;  // [B, H, T, D] of the last run

 private:
  struct Impl;
  Impl* p_;
};
// LibTorch's bf16 matmul (oneDNN on x86: AMX, avx512_bf16 or an emulating path) on random [M, K] x [K, N] bf16
// tensors made once (and kept for the next call of the same shape): seconds per call, the median of `repeats` calls
// after one warm-up.
double torch_matmul_bf16_seconds(int M, int N, int K, int repeats);
std::string torch_attention_api();  // which LibTorch function ran
std::string torch_version();        // "2.15.0+cu132"; "" without LibTorch
// The kernel ATen's scaled_dot_product_attention picks for fp32 causal inputs of this shape on the CPU:
// "flash" or "math" (ATen's own choice function).
std::string torch_attention_backend(const AttnShape& s);
void torch_set_threads(int n);  // intra-op threads, and OpenBLAS's where it is the BLAS
int torch_get_threads();

// The series' broadcasting surprise in LibTorch: shape of ones(3) + ones(3, 1), and whether a shape
// assertion on the result (expecting (3,)) throws. Throws std::runtime_error without LibTorch.
struct BroadcastResult {
  std::vector<long> shape;
  bool raised = false;
  bool assertion_caught = false;
};
BroadcastResult torch_broadcast_demo();

}  // namespace claimcheck::ref
