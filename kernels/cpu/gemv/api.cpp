// The public entry points of claimcheck/kernels/gemv.h for the CPU decode kernels: bf16 conversions, faults by name,
// the path (which one runs, forcing one), the bf16 GEMV and GEMM, NF4 quantisation and the NF4 GEMV. The planted
// faults are applied here; the passes themselves are dispatch.cpp's and gemm.cpp's.
#include "claimcheck/kernels/gemv.h"

#include "../thread_pool.h"
#include "internal.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace claimcheck::kernels {

using namespace gemv_detail;

// ---- scalar conversions -------------------------------------------------------------------------------------
bf16_t to_bf16(float x) { return f32_bf16(x); }
float from_bf16(bf16_t x) {
  const std::uint32_t u = static_cast<std::uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

bool parse_gemv_fault(const std::string& name, GemvFaults* out) {
  *out = {};
  if (name.empty()) return true;
  if (name == "gemv_reads_twice")
    out->read_weights_twice = true;
  else if (name == "nf4_dequant_first")
    out->dequant_whole_first = true;
  else if (name == "gemm_per_token")
    out->gemm_per_token = true;
  else if (name == "stack_bytes_as_elements")
    out->bytes_as_elements = true;
  else if (name == "stack_flops_fma_as_one")
    out->flops_fma_as_one = true;
  else if (name == "gemm_first_tile_only")
    out->first_tile_only = true;
  else if (name == "gemm_panel_narrow")
    out->gemm_panel_narrow = true;
  else if (name == "matmul_one_thread")
    out->matmul_one_thread = true;
  else if (name == "matmul_drop_last_k")
    out->matmul_drop_last_k = true;
  else if (name == "matmul_accumulates")
    out->matmul_accumulates = true;
  else if (name == "matmul_fma_first")
    out->matmul_fma_first = true;
  else if (name == "nf4_half_rows")
    out->nf4_half_rows = true;
  else if (name == "stack_no_residual")
    out->stack_no_residual = true;
  else if (name == "stack_input_bf16")
    out->stack_input_bf16 = true;
  else if (name == "nf4_wrong_sign")
    out->nf4_wrong_sign = true;
  else if (name == "gemm_accumulates")
    out->gemm_accumulates = true;
  else if (name == "nf4_scales_uncounted")
    out->nf4_scales_uncounted = true;
  else if (name == "nf4_nibbles_swapped")
    out->nf4_nibbles_swapped = true;
  else if (name == "nf4_dequant_high_first")
    out->dequant_high_first = true;
  else if (name == "stack_q_skipped")
    out->stack_q_skipped = true;
  else if (name == "weights_over_k")
    out->weights_over_k = true;
  else if (name == "gemv_narrow_first")
    out->narrow_first = true;
  else if (name == "gemv_rows_portable")
    out->rows_portable = true;
  else if (name == "gemv_paths_drop_avx2")
    out->paths_drop_avx2 = true;
  else
    return false;
  return true;
}

namespace {
// Keeps a discarded result alive (the planted fault's second pass must not be optimised away).
void consume(const float* p) { asm volatile("" : : "r"(p) : "memory"); }
}  // namespace

// ---- public entry points ----------------------------------------------------------------------------------------
const float* nf4_levels() { return kNf4; }

std::string gemv_simd_path(const GemvFaults& faults) { return path_name(path(faults)); }
std::string gemv_detected_path() { return path_name(kDetected); }
std::string gemm_bf16_last_tile() { return gemm_last_tile(); }
std::string gemv_last_rows(const std::string& format) {
  if (format == "bf16") return rows_ran(kBf16Rows);
  if (format == "nf4") return rows_ran(kNf4Rows);
  throw std::invalid_argument("gemv_last_rows: format '" + format + "' (bf16, nf4)");
}

bool gemv_force_path(const std::string& name) {
  int want;
  if (name.empty())
    want = -1;
  else if (name == "portable")
    want = kPortable;
  else if (name == "avx2")
    want = kAvx2;
  else if (name == "avx512")
    want = kAvx512;
  else if (name == "avx512_bf16")
    want = kAvx512Bf16;
  else if (name == "avx512_emulated")
    want = kEmulated512;
  else if (name == "neon")
    want = kNeon;
  else
    return false;
  if (want >= 0 && !can_run(static_cast<Path>(want))) return false;
  g_forced.store(want);
  return true;
}

std::vector<std::string> gemv_paths_here(const GemvFaults& faults) {
  std::vector<std::string> out;
  for (Path p : {kPortable, kAvx2, kAvx512, kEmulated512, kNeon, kAvx512Bf16})
    if (can_run(p) && !(faults.paths_drop_avx2 && (p == kAvx2 || p == kEmulated512)))  // (a planted fault's gap)
      out.emplace_back(path_name(p));
  return out;
}

void gemv_bf16(const bf16_t* W, int N, int K, const float* x, float* y, const GemvOptions& o) {
  if (N < 0 || K < 0) throw std::invalid_argument("gemv_bf16: negative shape");
  if (N == 0) return;
  const Path pth = path(o.faults);
  bf16_pass(o.faults.rows_portable ? kPortable : pth, W, N, K, x, y, o.threads);
  if (o.faults.read_weights_twice) {
    float* y2 = scratch_floats(1, N);
    bf16_pass(pth, W, N, K, x, y2, o.threads);
    consume(y2);
  }
}

void gemm_bf16(const bf16_t* W, int N, int K, const float* X, int B, float* Y, const GemvOptions& o) {
  if (N < 0 || K < 0 || B < 0) throw std::invalid_argument("gemm_bf16: negative shape");
  if (N == 0 || B == 0) return;
  if (o.faults.gemm_accumulates) {  // a planted fault: Y += X W^T, the same bytes read, the old Y kept
    const std::vector<float> before(Y, Y + static_cast<std::size_t>(B) * N);
    GemvOptions inner = o;
    inner.faults.gemm_accumulates = false;
    gemm_bf16(W, N, K, X, B, Y, inner);
    for (std::size_t i = 0; i < before.size(); ++i) Y[i] += before[i];
    return;
  }
  if (B == 1) return gemv_bf16(W, N, K, X, Y, o);
  const Path pth = path(o.faults);
  if (o.faults.gemm_per_token) {  // a planted fault: one GEMV per token, each reading all of W again
    for (int b = 0; b < B; ++b)
      bf16_pass(pth, W, N, K, X + static_cast<std::size_t>(b) * K, Y + static_cast<std::size_t>(b) * N, o.threads);
    return;
  }
  // (A planted fault: the loop bound is one tile of tokens, not the batch; the other tokens' outputs are left.)
  gemm_pass(pth, W, N, K, X, o.faults.first_tile_only ? std::min(B, 4) : B, Y, o.threads, o.faults.gemm_panel_narrow);
  if (o.faults.read_weights_twice) {
    std::vector<float> y2(static_cast<std::size_t>(B) * N);
    gemm_pass(pth, W, N, K, X, B, y2.data(), o.threads);
    consume(y2.data());
  }
}

Nf4Matrix quantize_nf4(const bf16_t* W, int N, int K, int threads) {
  if (N < 0 || K < 0 || K % 64 != 0) throw std::invalid_argument("quantize_nf4: K must be a multiple of 64");
  Nf4Matrix m;
  m.N = N;
  m.K = K;
  m.packed.resize(static_cast<std::size_t>(N) * K / 2);
  m.scales.resize(static_cast<std::size_t>(N) * K / 64);
  if (N == 0 || K == 0) return m;
  const int chunk = std::max(1, std::min(N, 1 << 16) / std::max(1, 8 * threads));
  parallel_rows(N, chunk, threads,
                [&](int r0, int r1) { quantize_rows(W, K, r0, r1, m.packed.data(), m.scales.data()); });
  return m;
}
Nf4Matrix quantize_nf4(const bf16_t* W, int N, int K) { return quantize_nf4(W, N, K, 1); }

namespace {
// Each block of 64 weights: its 16 levels times its scale rounded once, then two codes per byte (low nibble first).
void dequantize_nf4_bf16_into(const Nf4Matrix& W, bf16_t* out, bool high_first = false) {
  const std::size_t blocks = static_cast<std::size_t>(W.N) * W.K / 64;
  for (std::size_t b = 0; b < blocks; ++b) {
    bf16_t level[16];
    for (int c = 0; c < 16; ++c) level[c] = to_bf16(kNf4[c] * W.scales[b]);
    const std::uint8_t* in = W.packed.data() + b * 32;
    bf16_t* o = out + b * 64;
    const int lo = high_first ? 4 : 0, hi = high_first ? 0 : 4;  // (a planted fault: the high nibble first)
    for (int j = 0; j < 32; ++j) {
      o[2 * j] = level[(in[j] >> lo) & 15];
      o[2 * j + 1] = level[(in[j] >> hi) & 15];
    }
  }
}
}  // namespace

std::vector<bf16_t> dequantize_nf4_bf16(const Nf4Matrix& W, const GemvFaults& faults) {
  std::vector<bf16_t> out(static_cast<std::size_t>(W.N) * W.K);
  dequantize_nf4_bf16_into(W, out.data(), faults.dequant_high_first);
  return out;
}

void gemv_nf4(const Nf4Matrix& W, const float* x, float* y, const GemvOptions& o) {
  if (W.K % 64 != 0 || W.packed.size() != static_cast<std::size_t>(W.N) * W.K / 2 ||
      W.scales.size() != static_cast<std::size_t>(W.N) * W.K / 64)
    throw std::invalid_argument("gemv_nf4: malformed matrix");
  if (W.N == 0) return;
  if (o.faults.dequant_whole_first) {
    // The planted fault: the whole matrix dequantised to bf16 in memory (a buffer kept between calls, as a caching
    // allocator would), then the bf16 GEMV over it.
    thread_local std::vector<bf16_t> d;
    if (d.size() < static_cast<std::size_t>(W.N) * W.K) d.resize(static_cast<std::size_t>(W.N) * W.K);
    dequantize_nf4_bf16_into(W, d.data());
    GemvOptions inner = o;
    inner.faults.dequant_whole_first = false;
    return gemv_bf16(d.data(), W.N, W.K, x, y, inner);
  }
  const Path pth = path(o.faults);
  // The planted nf4_half_rows: the second half of the rows never computed (left 0), so the step reads half its bytes.
  const int rows = o.faults.nf4_half_rows ? W.N / 2 : W.N;
  if (rows < W.N) std::fill(y + rows, y + W.N, 0.0f);
  nf4_pass(pth, W, x, y, o.threads, rows);
  if (o.faults.read_weights_twice) {
    float* y2 = scratch_floats(1, W.N);
    nf4_pass(pth, W, x, y2, o.threads, rows);
    consume(y2);
  }
  if (o.faults.nf4_wrong_sign)
    for (int i = 0; i < W.N; ++i) y[i] = -y[i];
}

}  // namespace claimcheck::kernels
