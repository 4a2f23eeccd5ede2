// Decode kernels on the CPU, the code under test of chapter 6: a bf16 GEMV (and its batched form, a skinny GEMM
// for the batch sweep), a 4-bit GEMV in NF4 with one fp32 absmax per block of 64 weights (the format of
// reference/data/quant/nf4-absmax64.json), dequantised in registers, and a decode step of a Llama-shaped stack
// running on them. Multi-threaded, compiled for AVX-512 / AVX2 / a portable baseline, the CPU picking one at load
// time (as the attention kernels do). Weights are row-major [N, K] (N outputs, K inputs: PyTorch's Linear layout);
// activations are fp32.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace claimcheck::kernels {

using bf16_t = std::uint16_t;  // raw bfloat16 bits
bf16_t to_bf16(float x);       // round to nearest even (NaN stays NaN)
float from_bf16(bf16_t x);

// Faults a test can plant to prove a check fails (never set in normal runs).
struct GemvFaults {
  bool read_weights_twice = false;   // every weight row is read twice (the second pass's result discarded)
  bool dequant_whole_first = false;  // the 4-bit kernel dequantises the whole matrix to bf16 in memory first
  bool gemm_per_token = false;       // the batched kernel runs one GEMV per token (re-reads the weights per token)
  bool bytes_as_elements = false;    // a decode stack counts its weights in elements, not bytes
  bool first_tile_only = false;      // the batched kernel's loop stops after its first tile of 4 tokens
  bool matmul_drop_last_k = false;   // the tiled bf16 matmul never multiplies the last 32 of K
  bool gemm_panel_narrow = false;    // the batched kernel runs the AVX2 panel tiles on the AVX-512 path
  bool matmul_one_thread = false;    // the dot-product matmul runs on one thread whatever the caller asked
  bool matmul_accumulates = false;   // the tiled bf16 matmul adds onto C on its first K slice (C not zeroed)
  bool matmul_fma_first = false;     // the bf16 matmul runs on fp32 FMAs where a bf16 engine is present
  bool nf4_half_rows = false;        // the 4-bit kernel computes only the first half of the rows (reads half the bytes)
  bool nf4_scales_uncounted = false;  // an nf4 stack counts its codes' bytes and not its scales'
  bool flops_fma_as_one = false;      // a decode stack counts a multiply-add as one FLOP
  // Wrong values from the right bytes (a timed run must check what it computed):
  bool stack_no_residual = false;    // a decode stack's step drops the residual add after the attention output
  bool nf4_wrong_sign = false;       // the 4-bit kernel returns -y
  bool gemm_accumulates = false;     // the batched kernel adds to Y instead of writing it (an accumulator not zeroed)
  bool nf4_nibbles_swapped = false;  // an nf4 stack packs each byte's codes high nibble first
  bool stack_input_bf16 = false;     // a decode stack's step starts from x rounded to bf16, not from x
  bool stack_q_skipped = false;      // a decode stack's step skips q's GEMV (q left as the layer's input)
  bool dequant_high_first = false;   // the whole-matrix dequantisation takes each byte's high nibble first
  bool weights_over_k = false;       // decode_weights_bf16 draws uniform in +-1/K, not +-1/sqrt(K)
  // Dispatch (right values, another path):
  bool narrow_first = false;     // the GEMV kernels run the AVX2 path where the AVX-512 one runs
  bool paths_drop_avx2 = false;  // gemv_paths_here leaves out the AVX2 paths (which a test then never runs)
  bool rows_portable = false;    // the bf16 GEMV runs the portable row loop whatever path it reports
};
// Parses "gemv_reads_twice" / "nf4_dequant_first" / "gemm_per_token" / "stack_bytes_as_elements" /
// "gemm_first_tile_only" / "matmul_drop_last_k" / "matmul_accumulates" / "matmul_fma_first" / "nf4_half_rows" /
// "stack_no_residual" / "nf4_wrong_sign" / "gemm_accumulates" / "nf4_scales_uncounted" / "nf4_nibbles_swapped" /
// "stack_flops_fma_as_one" / "stack_input_bf16" / "nf4_dequant_high_first" / "stack_q_skipped" /
// "gemv_narrow_first" / "gemv_paths_drop_avx2" / "weights_over_k" / "gemv_rows_portable";
// "" = none. Returns false for a name that is not a GEMV fault (which leaves *out cleared).
bool parse_gemv_fault(const std::string& name, GemvFaults* out);

struct GemvOptions {
  int threads = 1;
  GemvFaults faults;
};

// y[n] = sum_k W[n, k] x[k]; W bf16 [N, K]. W on a 64-byte line (base/aligned.h) keeps the AVX-512 loads to one line
// each; anywhere else is correct, and slower.
void gemv_bf16(const bf16_t* W, int N, int K, const float* x, float* y, const GemvOptions& o = {});
// Y[b, n] = sum_k W[n, k] X[b, k] for b < B: each weight read once for the whole batch.
void gemm_bf16(const bf16_t* W, int N, int K, const float* X, int B, float* Y, const GemvOptions& o = {});

// C[m, n] = sum_k A[m, k] W[n, k]: A bf16 [M, K], W bf16 [N, K] (Linear's layout), C fp32 [M, N], products and
// sums in fp32 (kernels/cpu/matmul_bf16.cpp). It runs on the engine matmul_bf16_engine() names: "amx_bf16" (the AMX
// tile unit, where the CPU has amx_bf16 and Linux grants the tile state), else "avx512_bf16" (vdpbf16ps on the same
// packed tiles, where the CPU has it), "fp32_fma" elsewhere (A widened to fp32, then gemm_bf16), or "amx_emulated"
// when a test forced it (the AMX kernel's packing and blocking with each tile instruction done in C: slow, any CPU).
void matmul_bf16(const bf16_t* A, int M, int K, const bf16_t* W, int N, float* C, const GemvOptions& o = {});
// (The engine a call with these faults runs on.)
std::string matmul_bf16_engine(const GemvFaults& faults = {});
// Forces an engine for the calls that follow ("fp32_fma", "amx_emulated", "amx_bf16" and "avx512_bf16" where present;
// "" = back to the detected one). Returns false for an unknown name or an engine this CPU lacks.
bool matmul_bf16_force(const std::string& name);
// The engines matmul_bf16_force accepts on this CPU.
std::vector<std::string> matmul_bf16_engines_here();

// NF4, blocks of 64 consecutive weights along K (K must be a multiple of 64). Weight k of row n is
// code(n, k) = packed[(n*K + k) / 2], low nibble for even k, high nibble for odd k; value = level[code] * scale,
// scale = scales[(n*K + k) / 64] = the block's absmax (fp32).
struct Nf4Matrix {
  int N = 0, K = 0;
  std::vector<std::uint8_t> packed;  // N*K/2 bytes
  std::vector<float> scales;         // N*K/64
  std::size_t bytes() const { return packed.size() + scales.size() * sizeof(float); }
};
// The 16 NF4 levels (QLoRA, Dettmers et al. 2023) as the kernels use them.
const float* nf4_levels();
// Quantises W (bf16) to NF4: per block absmax, nearest level of w / absmax.
Nf4Matrix quantize_nf4(const bf16_t* W, int N, int K);
// The same on `threads` threads (the result does not depend on the count).
Nf4Matrix quantize_nf4(const bf16_t* W, int N, int K, int threads);
// The whole matrix dequantised to bf16 (level * scale rounded to nearest even): what a dequantise-first kernel (the
// planted dequant_whole_first fault) multiplies. faults: "nf4_dequant_high_first" (tests only).
std::vector<bf16_t> dequantize_nf4_bf16(const Nf4Matrix& W, const GemvFaults& faults = {});
// y = W x with W dequantised in registers. Its arithmetic depends on the path: on "avx512_bf16" (a CPU with the bf16
// dot-product instruction) each product is level[code] rounded to bf16 times x[k] rounded to bf16, summed in fp32,
// each block's sum times its scale; on every other path level[code] * scale * x[k] in fp32.
void gemv_nf4(const Nf4Matrix& W, const float* x, float* y, const GemvOptions& o = {});

// "avx512_bf16" (AVX-512 with vdpbf16ps: the NF4 GEMV's products in bf16, the rest as avx512), "avx512", "avx2",
// "neon" (AArch64) or "portable": the path the GEMV kernels run with on this CPU.
// (The path a call with these faults runs.)
std::string gemv_simd_path(const GemvFaults& faults = {});
// The best path this CPU supports, whatever was forced.
std::string gemv_detected_path();
// The register tiles the last gemm_bf16 call of B > 1 ran ("avx512", "avx2", "avx512_emulated", "neon", "portable";
// "" before any): its direct tiles up to 16 tokens, its packed panels beyond.
std::string gemm_bf16_last_tile();
// The row kernel the last GEMV of a format ran ("bf16" or "nf4"): its path's name, reported by the kernel itself
// ("avx512_bf16", "avx512", "avx2", "neon", "portable"; "" before any).
std::string gemv_last_rows(const std::string& format);
// Forces a path for the calls that follow ("portable", "avx2", "avx512", "avx512_bf16", "neon"; "" = back to the
// detected one), for tests that run every path the CPU has. Returns false for an unknown name or a path this CPU
// cannot run.
bool gemv_force_path(const std::string& name);
// The paths gemv_force_path accepts on this CPU, the detected one among them.
std::vector<std::string> gemv_paths_here(const GemvFaults& faults = {});

// Deterministic bf16 weights [N, K], uniform in +-1/sqrt(K) (so that y = W x keeps |x|'s scale): element pair p
// from a 32-bit hash of (p, splitmix64(seed)), independent of `threads`. What DecodeStack fills each matrix with
// (a seed per matrix derived from the stack's seed).
std::vector<bf16_t> decode_weights_bf16(int N, int K, std::uint64_t seed, int threads = 1,
                                        const GemvFaults& faults = {});

// A decode step of a Llama-shaped stack: per layer q, k, v, o, gate, up, down (no norms, no attention over a
// cache: the step moves the weights, which is what decode time is), random weights from a seed.
struct DecodeShape {
  int hidden = 4096, kv_dim = 1024, ffn = 14336, layers = 1;
  int head_dim = 128;  // v (kv_dim) is repeated per head of min(head_dim, kv_dim) to the hidden / head_dim query heads
};
class DecodeStack {
 public:
  // format: "bf16" or "nf4". Builds the weights (deterministic from seed; the nf4 stack quantises the bf16
  // weights of the same seed).
  DecodeStack(const DecodeShape& s, const std::string& format, std::uint64_t seed, const GemvFaults& faults = {});
  // One token through every layer: x (hidden) in, out (hidden) out. layer_inputs (optional; layers x hidden floats)
  // receives each layer's input (layer 0's is x), so that each layer can be checked on the very input it ran on;
  // layer_qk (optional; layers x (hidden + kv_dim) floats) each layer's q then k, which a one-token context reads
  // nowhere else (softmax over one score is 1): checked apart, their GEMVs are not dead code to a check.
  void step(const float* x, float* out, const GemvOptions& o = {}, float* layer_inputs = nullptr,
            float* layer_qk = nullptr) const;
  // Bytes of weights (and scales) one step reads.
  std::size_t weight_bytes() const;
  // FLOPs of one step: 2 per weight.
  double flops() const;
  const DecodeShape& shape() const { return s_; }
  // The layer's seven matrices in order q, k, v, o, gate, up, down: bf16 pointers (bf16 stacks only).
  std::vector<const bf16_t*> bf16_weights(int layer) const;
  // Matrix m (0..6, order as above) of a layer of an nf4 stack; nullptr for a bf16 stack.
  const Nf4Matrix* nf4_weight(int layer, int m) const;
  const std::string& format() const { return format_; }

 private:
  DecodeShape s_;
  std::string format_;
  std::vector<std::vector<bf16_t>> bf16_;  // [layer * 7 + m]
  std::vector<Nf4Matrix> nf4_;
  GemvFaults faults_;  // tests only
};

}  // namespace claimcheck::kernels
