// Reference decode arithmetic (chapter 6), the answer key for the CPU decode kernels:
//  - fp64 GEMV over raw bf16 bits (decoded here, independently of the kernels);
//  - fp64 NF4 dequantisation + GEMV from packed codes and fp32 block scales, with the 16 levels read from
//    reference/data/quant/nf4-absmax64.json ("levels"); a nearest-level check of a quantisation;
//  - a decode step of the Llama-shaped stack (q, k, v, o, gate, up, down; one-token attention = v repeated per
//    head; residual adds; SiLU(gate) * up; no norms) in fp64 over any matrix-vector product;
//  - LibTorch's bf16 at::matmul as the competitor (only reference/src/torch/ includes LibTorch headers).
// Plain types only.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace claimcheck::ref {

// The value of a bfloat16 bit pattern (the upper half of an IEEE binary32), exactly, as a double.
double bf16_value(std::uint16_t bits);
// The bfloat16 nearest to a finite x (ties to the even pattern), chosen by comparing the two neighbours' values
// (bf16_value) with x in fp64, not by rounding bits.
std::uint16_t bf16_nearest(float x);

// y[n] = sum_k W[n, k] x[k] in fp64, W raw bf16 bits [N, K] row-major. absdot (optional): sum_k |W[n, k] x[k]|,
// the scale a rounding-error bound of a float accumulation is proportional to.
void gemv_bf16_fp64(const std::uint16_t* W, int N, int K, const double* x, double* y, double* absdot = nullptr);

// What a timed batched GEMM wrote (Y [B, N] = X [B, K] W^T, W raw bf16 [N, K]) against gemv_bf16_fp64 on sampled
// outputs: `samples` tokens spread over the batch x `samples` rows spread over N, both ends among them (all of
// them where there are no more); the largest error over the dot product's sum of |w x| (the scale an fp32
// accumulation's rounding grows with). About 1e-8 for fp32 work.
double gemm_bf16_sampled_error(const std::uint16_t* W, int N, int K, const float* X, int B, const float* Y,
                               int samples = 8);

// What a timed square matmul wrote (C = A B, all n x n row-major, C widened to fp32) against fp64 dot products on
// 8 x 8 outputs spread over C (the last row and column among them), A and B first rounded to bf16 where bf16_inputs
// (what autocast multiplies); the largest error over the dot product's sum of |a b|. fp32 work reads about 1e-7; a
// bf16 output's rounding at most 2^-9 of it.
double matmul_sampled_error(const float* A, const float* B, int n, const float* C, bool bf16_inputs);

// The 16 NF4 levels from a quantisation format's JSON ("levels": 16 increasing numbers from -1 to 1, 0 among
// them). Throws SpecError-like std::runtime_error naming the file and field.
std::vector<double> load_nf4_levels(const std::filesystem::path& json_file);

// What an NF4 GEMV multiplies. fp32: levels[code] * scale * x[k], as the numbers are. bf16: the product of
// levels[code] and x[k] each rounded to the nearest bf16 (via fp32), times the block's scale: the arithmetic of a
// kernel on the bf16 dot-product instruction (vdpbf16ps; bitsandbytes' kernels multiply in bf16 too, rounding
// level x absmax instead). Which one a CPU kernel owes is the CPU's: bf16 where it has avx512_bf16
// (nf4_products_for).
enum class Nf4Products { fp32, bf16 };
// The contract of the project's NF4 GEMV by what the CPU has (its flags, e.g. HardwareInfo::has_isa("avx512_bf16")),
// never by what the kernel says it ran.
inline Nf4Products nf4_products_for(bool cpu_has_avx512_bf16) {
  return cpu_has_avx512_bf16 ? Nf4Products::bf16 : Nf4Products::fp32;
}
const char* nf4_products_name(Nf4Products p);  // "fp32" / "bf16"

// NF4 layout: code of W[n, k] = packed[(n*K + k) / 2], low nibble for even k, high nibble for odd k;
// value = levels[code] * scales[(n*K + k) / 64]. K a multiple of 64. The sums in fp64, the products as `products`
// says.
void gemv_nf4_fp64(const std::uint8_t* packed, const float* scales, int N, int K, const std::vector<double>& levels,
                   const double* x, double* y, double* absdot = nullptr, Nf4Products products = Nf4Products::fp32);
// What a timed NF4 GEMV wrote into y (from x), against gemv_nf4_fp64 on 64 rows spread over N (the last among
// them): the largest error over the row's sum of |w x|.
double gemv_nf4_sampled_error(const std::uint8_t* packed, const float* scales, int N, int K,
                              const std::vector<double>& levels, const float* x, const float* y,
                              Nf4Products products = Nf4Products::fp32);

// Checks a quantisation of W (bf16 bits) against NF4's definition: each scale is the block's absmax, each code a
// nearest level of w / absmax (ties, within tie_tol, either way). Counts of violations and the first one.
struct Nf4QuantCheck {
  long bad_scales = 0, bad_codes = 0;
  long first_bad = -1;  // element (bad code) or block (bad scale) index, -1 if none
  std::string first_detail;
  bool ok() const { return bad_scales == 0 && bad_codes == 0; }
};
Nf4QuantCheck check_nf4_quantization(const std::uint16_t* W, int N, int K, const std::uint8_t* packed,
                                     const float* scales, const std::vector<double>& levels, double tie_tol = 1e-6);

// A dequantisation to bf16 (out: rows [row0, row0 + rows) of the N x K matrix, bf16 bits) against NF4's: each
// element the bf16 nearest (ties to even) to fp32(level[code]) x its block's scale. The elements that differ.
long nf4_dequant_mismatches(const std::uint8_t* packed, const float* scales, int K, const std::vector<double>& levels,
                            const std::uint16_t* out, long row0, long rows);

// A decode step in fp64: mv(layer, m, in, out) is the matrix-vector product of the layer's matrix m
// (0 q [hidden x hidden], 1 k [kv x hidden], 2 v [kv x hidden], 3 o [hidden x hidden], 4 gate [ffn x hidden],
// 5 up [ffn x hidden], 6 down [hidden x ffn]).
struct RefDecodeShape {
  int hidden = 0, kv_dim = 0, ffn = 0, layers = 1, head_dim = 128;  // head_dim: min(head_dim, kv_dim) is used
};
using RefMatvec = std::function<void(int layer, int m, const double* in, double* out)>;
void decode_step_fp64(const RefDecodeShape& s, const RefMatvec& mv, const double* x, double* out);
// A decode step of the code under test checked layer by layer: `inputs` (layers x hidden) holds each layer's input as
// the code ran it, `out` its output, `y` the output of the run being judged (a timed one: the same step, to equal
// out). The first layer's input is held to x, the step's own input (exactly: a step that starts from anything else,
// x rounded to bf16, computes another step's answer). Each layer's fp64 step (decode_step_fp64 with one layer, mv's
// layer l) on that layer's input is held to the next layer's input (the last layer's to out), and y to out: the largest
// element's error over the reference's largest magnitude, the worst of them. Layer by layer, because a kernel whose
// products round the activations to bf16 rounds an element the other way from fp64 where the two straddle a rounding
// point, and the layers after magnify that; each layer on its own input keeps the rounding the kernel's.
// qk (optional; layers x (hidden + kv_dim)): each layer's q then k as the code computed them, held to mv's q and k
// of that layer's input (a one-token step reads them nowhere else: its attention is v's alone).
double decode_step_error_by_layer(const RefDecodeShape& s, const RefMatvec& mv, const float* x, const float* inputs,
                                  const float* out, const float* y, const float* qk = nullptr);

// ---- LibTorch, the competitor -----------------------------------------------------------------------------------
struct Bf16Mat {
  const std::uint16_t* w = nullptr;  // raw bf16 bits [N, K], not copied (at::from_blob)
  int N = 0, K = 0;
};
// Y [B, N] = X [B, K] W^T through LibTorch's bf16 at::matmul (X rounded to bf16 first, as a bf16 model's
// activations are; the bf16 result widened to fp32). Threads: torch_set_threads (attention.h).
void torch_matmul_bf16(const std::uint16_t* W, int N, int K, const float* X, int B, float* Y);
// The same decode step as decode_step_fp64 in LibTorch, bf16 end to end (weights wrapped without a copy, the
// residual stream in bf16 as a bf16 PyTorch model runs it). mats: layers x 7 in the order above.
class TorchDecodeChain {
 public:
  explicit TorchDecodeChain(std::vector<Bf16Mat> mats, int head_dim = 128);
  ~TorchDecodeChain();
  TorchDecodeChain(const TorchDecodeChain&) = delete;
  TorchDecodeChain& operator=(const TorchDecodeChain&) = delete;
  void step(const float* x, float* out);
  int hidden() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
// Which LibTorch call the competitor makes ("at::matmul(bf16 [B,K], W^T) (LibTorch 2.x)"; "none" without it).
std::string torch_gemv_api();

}  // namespace claimcheck::ref
