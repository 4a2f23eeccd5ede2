// Chapter 6's decode kernels on the GPU (decode.h). One warp per output row: each lane streams 16-byte vectors of
// the row (8 bf16, or 32 NF4 weights = half a block of 64), four loads in flight, the dot product reduced across
// the warp with shuffles. Activations are fp32 and read through the read-only cache. The chain fuses what a
// decode step lets it fuse without changing what it reads: q, k, v as one matrix of stacked rows; gate and up as
// one with their rows interleaved, so that one warp computes silu(gate_j) * up_j; the attention over a one-token
// context (each query head's output is its kv head's v) as the o projection's input indexing; the residual adds
// as the o and down projections accumulating into the hidden state. One file past 500 lines: the bf16 and NF4 rows
// share the warp's loaders and reduction, instantiated together for the chain, the graph and the planted faults.
#include "claimcheck/kernels/cuda/decode.h"

#include <cmath>
#include <cstring>

#include "claimcheck/base/random.h"
#include "claimcheck/kernels/cuda/stream.h"
#include "common.cuh"

namespace claimcheck::kernels::cuda {
namespace {
using detail::bf16_hi;
using detail::bf16_lo;
using detail::check;
using detail::check_blas;
using detail::check_launch;
using detail::DevBuf;

constexpr int kRowsPerBlock = 8;  // plan.h's gemv_launch: 8 warps, one row each
constexpr int kThreads = 32 * kRowsPerBlock;

// ---- activation loaders: 8 consecutive inputs k .. k+7 (k a multiple of 8) -------------------------------------
struct XPlain {
  const float* x;
  __device__ __forceinline__ void load8(int k, float* o) const {
    const float4 a = __ldg(reinterpret_cast<const float4*>(x + k));
    const float4 b = __ldg(reinterpret_cast<const float4*>(x + k + 4));
    o[0] = a.x, o[1] = a.y, o[2] = a.z, o[3] = a.w, o[4] = b.x, o[5] = b.y, o[6] = b.z, o[7] = b.w;
  }
};
// The attention output of a one-token context: query head h reads kv head h / group's v (head_dim hd, a multiple
// of 8, so 8 consecutive inputs stay in one head).
struct XRepeatV {
  const float* v;
  int hd, group;
  __device__ __forceinline__ void load8(int k, float* o) const {
    const int head = k / hd;
    XPlain{v + (head / group) * hd}.load8(k % hd, o);
  }
};

__device__ __forceinline__ float warp_sum(float a) {
  for (int off = 16; off > 0; off >>= 1) a += __shfl_xor_sync(0xffffffffu, a, off);
  return a;
}

__device__ __forceinline__ float dot8_bf16(const uint4 w, const float* x) {
  float s = bf16_lo(w.x) * x[0];
  s = fmaf(bf16_hi(w.x), x[1], s);
  s = fmaf(bf16_lo(w.y), x[2], s);
  s = fmaf(bf16_hi(w.y), x[3], s);
  s = fmaf(bf16_lo(w.z), x[4], s);
  s = fmaf(bf16_hi(w.z), x[5], s);
  s = fmaf(bf16_lo(w.w), x[6], s);
  s = fmaf(bf16_hi(w.w), x[7], s);
  return s;
}

// Row dot product of a bf16 row (K8 16-byte vectors) with x: the lane's partial sum (not yet reduced).
template <class X>
__device__ __forceinline__ float row_bf16(const uint4* __restrict__ w, int K8, const X& x, int lane) {
  float acc = 0.f;
  int i = lane;
  for (; i + 96 < K8; i += 128) {  // four independent 16-byte loads in flight per lane
    const uint4 a0 = __ldcs(w + i), a1 = __ldcs(w + i + 32), a2 = __ldcs(w + i + 64), a3 = __ldcs(w + i + 96);
    float x0[8], x1[8], x2[8], x3[8];
    x.load8(8 * i, x0);
    x.load8(8 * (i + 32), x1);
    x.load8(8 * (i + 64), x2);
    x.load8(8 * (i + 96), x3);
    acc += (dot8_bf16(a0, x0) + dot8_bf16(a1, x1)) + (dot8_bf16(a2, x2) + dot8_bf16(a3, x3));
  }
  for (; i < K8; i += 32) {
    float x0[8];
    x.load8(8 * i, x0);
    acc += dot8_bf16(__ldcs(w + i), x0);
  }
  return acc;
}

// 8 NF4 codes of a 32-bit word (byte b: weight 2b low nibble, 2b+1 high) against x[0..7], levels from shared memory.
__device__ __forceinline__ float dot8_nf4(std::uint32_t q, const float* x, const float* lut) {
  float s = 0.f;
#pragma unroll
  for (int b = 0; b < 4; ++b) {
    const std::uint32_t byte = (q >> (8 * b)) & 0xffu;
    s = fmaf(lut[byte & 15u], x[2 * b], s);
    s = fmaf(lut[byte >> 4], x[2 * b + 1], s);
  }
  return s;
}
// 32 weights (a 16-byte vector, half an NF4 block, one scale) against x from k0.
template <class X>
__device__ __forceinline__ float chunk_nf4(const uint4 q, float scale, int k0, const X& x, const float* lut) {
  float x8[8], s = 0.f;
  x.load8(k0, x8);
  s += dot8_nf4(q.x, x8, lut);
  x.load8(k0 + 8, x8);
  s += dot8_nf4(q.y, x8, lut);
  x.load8(k0 + 16, x8);
  s += dot8_nf4(q.z, x8, lut);
  x.load8(k0 + 24, x8);
  s += dot8_nf4(q.w, x8, lut);
  return s * scale;
}
template <class X>
__device__ __forceinline__ float row_nf4(const uint4* __restrict__ p, const float* __restrict__ sc, int K32, const X& x,
                                         int lane, const float* lut) {
  float acc = 0.f;
  int i = lane;
  for (; i + 32 < K32; i += 64) {  // two 16-byte loads (and their scales) in flight per lane
    const uint4 q0 = __ldcs(p + i), q1 = __ldcs(p + i + 32);
    const float s0 = __ldcs(sc + i / 2), s1 = __ldcs(sc + (i + 32) / 2);
    acc += chunk_nf4(q0, s0, 32 * i, x, lut) + chunk_nf4(q1, s1, 32 * (i + 32), x, lut);
  }
  for (; i < K32; i += 32) acc += chunk_nf4(__ldcs(p + i), __ldcs(sc + i / 2), 32 * i, x, lut);
  return acc;
}

enum Out { kStore = 0, kAccumulate = 1, kSiluPair = 2 };

// Row r's partial sum in either format.
template <bool NF4, class X>
__device__ __forceinline__ float row_partial(const void* W, const float* scales, long long r, int K, const X& x,
                                             int lane, const float* lut) {
  if constexpr (NF4) {
    const uint4* p = reinterpret_cast<const uint4*>(static_cast<const std::uint8_t*>(W) + r * (K / 2));
    return row_nf4(p, scales + r * (K / 64), K / 32, x, lane, lut);
  } else {
    const uint4* w = reinterpret_cast<const uint4*>(static_cast<const std::uint16_t*>(W) + r * K);
    return row_bf16(w, K / 8, x, lane);
  }
}

// y[n] (= / +=) row n . x for n < N; with kSiluPair, rows 2n and 2n+1 (gate_n, up_n) give y[n] = silu(g) * u.
// twice: the planted fault that reads every row a second time (its result multiplied by 0, which the compiler
// may not drop: 0 * x is not 0 for an infinite or NaN x).
template <bool NF4, int OUT, class X>
__global__ void __launch_bounds__(kThreads) gemv_kernel(const void* __restrict__ W, const float* __restrict__ scales,
                                                        int N, int K, X x, float* __restrict__ y, int twice) {
  __shared__ float lut[16];
  if constexpr (NF4) {
    if (threadIdx.x < 16) lut[threadIdx.x] = nf4_level(threadIdx.x);
    __syncthreads();
  }
  const int lane = threadIdx.x & 31;
  const long long n = static_cast<long long>(blockIdx.x) * kRowsPerBlock + (threadIdx.x >> 5);
  if (n >= N) return;
  if constexpr (OUT == kSiluPair) {
    float g = warp_sum(row_partial<NF4>(W, scales, 2 * n, K, x, lane, lut));
    float u = warp_sum(row_partial<NF4>(W, scales, 2 * n + 1, K, x, lane, lut));
    if (twice) {
      g += 0.f * warp_sum(row_partial<NF4>(W, scales, 2 * n, K, x, lane, lut));
      u += 0.f * warp_sum(row_partial<NF4>(W, scales, 2 * n + 1, K, x, lane, lut));
    }
    if (lane == 0) y[n] = g / (1.f + expf(-g)) * u;
  } else {
    float s = warp_sum(row_partial<NF4>(W, scales, n, K, x, lane, lut));
    if (twice) s += 0.f * warp_sum(row_partial<NF4>(W, scales, n, K, x, lane, lut));
    if (lane == 0) {
      if constexpr (OUT == kAccumulate)
        y[n] += s;
      else
        y[n] = s;
    }
  }
}

template <bool NF4, int OUT, class X>
void launch_gemv(const void* W, const float* scales, int N, int K, X x, float* y, bool twice, cudaStream_t s) {
  const GemvLaunch l = gemv_launch(N, K, NF4 ? "nf4" : "bf16");
  gemv_kernel<NF4, OUT, X><<<l.blocks, l.threads, 0, s>>>(W, scales, N, K, x, y, twice ? 1 : 0);
  check_launch("gemv_kernel");
}

// NF4 -> bf16 in memory (the planted dequant_whole_first fault's first pass): one thread per packed byte.
__global__ void dequant_nf4_kernel(const std::uint8_t* __restrict__ p, const float* __restrict__ sc, long long bytes,
                                   __nv_bfloat16* __restrict__ out) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    float a, b;
    nf4_decode_byte(p[i], sc[i / 32], &a, &b);
    out[2 * i] = __float2bfloat16_rn(a);
    out[2 * i + 1] = __float2bfloat16_rn(b);
  }
}

// Elementwise steps of the cuBLAS chain (its activations are bf16, as cublasGemmEx's inputs).
__global__ void to_bf16_kernel(const float* __restrict__ x, __nv_bfloat16* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __float2bfloat16_rn(x[i]);
}
__global__ void repeat_v_kernel(const float* __restrict__ v, __nv_bfloat16* __restrict__ a, int H, int hd, int group) {
  const int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < H) a[k] = __float2bfloat16_rn(v[(k / hd / group) * hd + k % hd]);
}
__global__ void silu_pair_kernel(const float* __restrict__ gu, __nv_bfloat16* __restrict__ a, int F) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < F) {
    const float g = gu[2 * j], u = gu[2 * j + 1];
    a[j] = __float2bfloat16_rn(g / (1.f + expf(-g)) * u);
  }
}

using base::splitmix64;

// One fused device matrix: rows of bf16 (2K bytes each) or NF4 (K/2 bytes + K/64 scales each).
struct DevMat {
  DevBuf w, scales;
  int rows = 0, K = 0;
};
// Where logical matrix i of the plan lives: a fused matrix, its first row there and the row step (2 when
// interleaved with another matrix).
struct Placement {
  int fused = 0, first_row = 0, row_step = 1;
};

}  // namespace

std::string device_summary() {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  return std::string(p.name) + ", " + std::to_string(p.multiProcessorCount) + " SMs, sm_" + std::to_string(p.major) +
         std::to_string(p.minor) + ", " + std::to_string(p.totalGlobalMem >> 30) + " GiB";
}

struct GpuDecodeChain::Impl {
  DecodeShape s;
  int vocab = 0, hd = 0, group = 0;
  std::string format;
  GemvFaults faults;
  std::vector<MatShape> plan;
  std::vector<DevMat> fused;       // per layer: qkv, o, gate_up, down; then lm_head
  std::vector<Placement> where;    // per plan entry
  DevBuf x_in, h, qkv, a, logits;  // fp32 activations
  DevBuf hb, ab, gu;               // the cuBLAS chain's bf16 inputs and its gate/up output
  DevBuf scratch;                  // the dequant_whole_first fault's bf16 copy of a matrix
  DevBuf workspace;                // cuBLAS's, set before capture (no allocation inside a graph)
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  cudaGraphExec_t graph[2] = {nullptr, nullptr};  // ours, cuBLAS's

  ~Impl() {
    for (auto& g : graph)
      if (g) cudaGraphExecDestroy(g);
    if (blas) cublasDestroy(blas);
    if (stream) cudaStreamDestroy(stream);
  }
  bool nf4() const { return format == "nf4"; }
  int fused_of(int layer, int j) const { return layer * 4 + j; }

  void gemv_plain(const DevMat& m, const float* x, float* y, int OUT, cudaStream_t st) {
    const bool twice = faults.read_weights_twice;
    const void* W = m.w.as<void>();
    if (nf4() && faults.dequant_whole_first) {  // the fault: the whole matrix to bf16 in memory first
      const long long bytes = static_cast<long long>(m.rows) * m.K / 2;
      dequant_nf4_kernel<<<1024, 256, 0, st>>>(m.w.as<std::uint8_t>(), m.scales.as<float>(), bytes,
                                               scratch.as<__nv_bfloat16>());
      check_launch("dequant_nf4_kernel");
      W = scratch.as<void>();
    }
    const bool as_nf4 = nf4() && !faults.dequant_whole_first;
    const float* sc = m.scales.as<float>();
    if (OUT == kStore) {
      if (as_nf4)
        launch_gemv<true, kStore>(W, sc, m.rows, m.K, XPlain{x}, y, twice, st);
      else
        launch_gemv<false, kStore>(W, sc, m.rows, m.K, XPlain{x}, y, twice, st);
    } else if (OUT == kAccumulate) {
      if (as_nf4)
        launch_gemv<true, kAccumulate>(W, sc, m.rows, m.K, XPlain{x}, y, twice, st);
      else
        launch_gemv<false, kAccumulate>(W, sc, m.rows, m.K, XPlain{x}, y, twice, st);
    } else {
      if (as_nf4)
        launch_gemv<true, kSiluPair>(W, sc, m.rows / 2, m.K, XPlain{x}, y, twice, st);
      else
        launch_gemv<false, kSiluPair>(W, sc, m.rows / 2, m.K, XPlain{x}, y, twice, st);
    }
  }
  void gemv_o(const DevMat& m, const float* v, float* y, cudaStream_t st) {
    const XRepeatV xv{v, hd, group};
    const bool twice = faults.read_weights_twice;
    if (nf4() && faults.dequant_whole_first) {
      const long long bytes = static_cast<long long>(m.rows) * m.K / 2;
      dequant_nf4_kernel<<<1024, 256, 0, st>>>(m.w.as<std::uint8_t>(), m.scales.as<float>(), bytes,
                                               scratch.as<__nv_bfloat16>());
      check_launch("dequant_nf4_kernel");
      launch_gemv<false, kAccumulate>(scratch.as<void>(), nullptr, m.rows, m.K, xv, y, twice, st);
    } else if (nf4()) {
      launch_gemv<true, kAccumulate>(m.w.as<void>(), m.scales.as<float>(), m.rows, m.K, xv, y, twice, st);
    } else {
      launch_gemv<false, kAccumulate>(m.w.as<void>(), nullptr, m.rows, m.K, xv, y, twice, st);
    }
  }

  // One token on our kernels, enqueued on st: x_in -> h -> ... -> h (and logits).
  void enqueue_ours(cudaStream_t st) {
    const int H = s.hidden, KV = s.kv_dim;
    check(cudaMemcpyAsync(h.as<float>(), x_in.as<float>(), H * sizeof(float), cudaMemcpyDeviceToDevice, st),
          "cudaMemcpyAsync");
    for (int l = 0; l < s.layers; ++l) {
      gemv_plain(fused[fused_of(l, 0)], h.as<float>(), qkv.as<float>(), kStore, st);
      gemv_o(fused[fused_of(l, 1)], qkv.as<float>() + H + KV, h.as<float>(), st);
      gemv_plain(fused[fused_of(l, 2)], h.as<float>(), a.as<float>(), kSiluPair, st);
      gemv_plain(fused[fused_of(l, 3)], a.as<float>(), h.as<float>(), kAccumulate, st);
    }
    if (vocab > 0) gemv_plain(fused.back(), h.as<float>(), logits.as<float>(), kStore, st);
  }

  // y (fp32, N) = W (bf16 [N, K] row-major) x (bf16, K), beta 0 or 1: cublasGemmEx with N = 1 column.
  void blas_gemv(const DevMat& m, const __nv_bfloat16* x, float* y, float beta) {
    const float alpha = 1.f;
    check_blas(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, m.rows, 1, m.K, &alpha, m.w.as<void>(), CUDA_R_16BF, m.K, x,
                            CUDA_R_16BF, m.K, &beta, y, CUDA_R_32F, m.rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "cublasGemmEx");
  }
  void enqueue_cublas(cudaStream_t st) {
    const int H = s.hidden, KV = s.kv_dim, F = s.ffn;
    auto blocks = [](int n) { return (n + 255) / 256; };
    check(cudaMemcpyAsync(h.as<float>(), x_in.as<float>(), H * sizeof(float), cudaMemcpyDeviceToDevice, st),
          "cudaMemcpyAsync");
    for (int l = 0; l < s.layers; ++l) {
      to_bf16_kernel<<<blocks(H), 256, 0, st>>>(h.as<float>(), hb.as<__nv_bfloat16>(), H);
      blas_gemv(fused[fused_of(l, 0)], hb.as<__nv_bfloat16>(), qkv.as<float>(), 0.f);
      repeat_v_kernel<<<blocks(H), 256, 0, st>>>(qkv.as<float>() + H + KV, ab.as<__nv_bfloat16>(), H, hd, group);
      blas_gemv(fused[fused_of(l, 1)], ab.as<__nv_bfloat16>(), h.as<float>(), 1.f);
      to_bf16_kernel<<<blocks(H), 256, 0, st>>>(h.as<float>(), hb.as<__nv_bfloat16>(), H);
      blas_gemv(fused[fused_of(l, 2)], hb.as<__nv_bfloat16>(), gu.as<float>(), 0.f);
      silu_pair_kernel<<<blocks(F), 256, 0, st>>>(gu.as<float>(), ab.as<__nv_bfloat16>(), F);
      blas_gemv(fused[fused_of(l, 3)], ab.as<__nv_bfloat16>(), h.as<float>(), 1.f);
    }
    if (vocab > 0) {
      to_bf16_kernel<<<blocks(H), 256, 0, st>>>(h.as<float>(), hb.as<__nv_bfloat16>(), H);
      blas_gemv(fused.back(), hb.as<__nv_bfloat16>(), logits.as<float>(), 0.f);
    }
    check_launch("cuBLAS chain");
  }

  cudaGraphExec_t captured(bool cublas) {
    cudaGraphExec_t& g = graph[cublas ? 1 : 0];
    if (g) return g;
    cudaGraph_t raw = nullptr;
    // One eager run first: every kernel and cuBLAS call meets the device (module loading, heuristics) outside capture.
    if (cublas)
      enqueue_cublas(stream);
    else
      enqueue_ours(stream);
    check(cudaStreamSynchronize(stream), "decode step before capture");
    check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
      if (cublas)
        enqueue_cublas(stream);
      else
        enqueue_ours(stream);
    } catch (...) {
      cudaStreamEndCapture(stream, &raw);
      if (raw) cudaGraphDestroy(raw);
      throw;
    }
    check(cudaStreamEndCapture(stream, &raw), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, raw, 0);
    cudaGraphDestroy(raw);
    check(e, "cudaGraphInstantiate");
    return g = exec;
  }
};

GpuDecodeChain::GpuDecodeChain(const DecodeShape& s, int vocab, const std::string& format, std::uint64_t seed,
                               int threads, const GemvFaults& faults)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (format != "bf16" && format != "nf4") throw std::invalid_argument("GpuDecodeChain: format must be bf16 or nf4");
  const int hd = std::min(s.head_dim, s.kv_dim);
  if (s.hidden < 1 || s.kv_dim < 1 || s.ffn < 1 || s.layers < 1 || hd < 8 || hd % 8 != 0 || s.kv_dim % hd != 0 ||
      s.hidden % s.kv_dim != 0 || s.hidden % hd != 0 || vocab < 0)
    throw std::invalid_argument(
        "GpuDecodeChain: bad shape (kv_dim must divide hidden, head_dim (a multiple of 8) kv_dim)");
  std::string why;
  if (device_count(&why) == 0) throw std::runtime_error(why);
  m.s = s;
  m.vocab = vocab;
  m.hd = hd;
  m.group = s.hidden / s.kv_dim;
  m.format = format;
  m.faults = faults;
  m.plan = decode_plan(s, vocab);
  const bool nf4 = format == "nf4";
  for (const auto& p : m.plan) gemv_launch(p.N, p.K, format);  // K's divisibility, before any allocation
  const int H = s.hidden, KV = s.kv_dim, F = s.ffn;
  auto make = [&](int rows, int K) {
    DevMat d;
    d.rows = rows;
    d.K = K;
    const std::size_t w = static_cast<std::size_t>(rows) * K;
    d.w = DevBuf(nf4 ? w / 2 : 2 * w);
    if (nf4) d.scales = DevBuf(w / 64 * sizeof(float));
    return d;
  };
  std::size_t largest = 0;
  for (int l = 0; l < s.layers; ++l) {
    m.fused.push_back(make(H + 2 * KV, H));
    m.fused.push_back(make(H, H));
    m.fused.push_back(make(2 * F, H));
    m.fused.push_back(make(H, F));
    const int f = l * 4;
    // q, k, v stacked; o; gate and up interleaved by row; down.
    m.where.push_back({f, 0, 1});
    m.where.push_back({f, H, 1});
    m.where.push_back({f, H + KV, 1});
    m.where.push_back({f + 1, 0, 1});
    m.where.push_back({f + 2, 0, 2});
    m.where.push_back({f + 2, 1, 2});
    m.where.push_back({f + 3, 0, 1});
  }
  if (vocab > 0) {
    m.fused.push_back(make(vocab, H));
    m.where.push_back({static_cast<int>(m.fused.size()) - 1, 0, 1});
  }
  for (const auto& d : m.fused) largest = std::max(largest, static_cast<std::size_t>(d.rows) * d.K);
  if (nf4 && faults.dequant_whole_first) m.scratch = DevBuf(2 * largest);
  // Weights: drawn on the host as DecodeStack draws them (the same seed per matrix), quantised there for NF4.
  for (std::size_t i = 0; i < m.plan.size(); ++i) {
    const MatShape& p = m.plan[i];
    const Placement& w = m.where[i];
    const std::uint64_t mseed = splitmix64(seed * 1000003ull + static_cast<std::uint64_t>(i));
    const std::vector<bf16_t> host = decode_weights_bf16(p.N, p.K, mseed, threads);
    DevMat& d = m.fused[w.fused];
    if (!nf4) {
      const std::size_t row = 2 * static_cast<std::size_t>(p.K);
      check(cudaMemcpy2D(d.w.as<std::uint8_t>() + w.first_row * row, row * w.row_step, host.data(), row, row, p.N,
                         cudaMemcpyHostToDevice),
            "cudaMemcpy2D (weights)");
    } else {
      const Nf4Matrix q = quantize_nf4(host.data(), p.N, p.K, threads);
      const std::size_t row = p.K / 2, srow = p.K / 64 * sizeof(float);
      check(cudaMemcpy2D(d.w.as<std::uint8_t>() + w.first_row * row, row * w.row_step, q.packed.data(), row, row, p.N,
                         cudaMemcpyHostToDevice),
            "cudaMemcpy2D (packed)");
      check(cudaMemcpy2D(d.scales.as<std::uint8_t>() + w.first_row * srow, srow * w.row_step, q.scales.data(), srow,
                         srow, p.N, cudaMemcpyHostToDevice),
            "cudaMemcpy2D (scales)");
    }
  }
  m.x_in = DevBuf(H * sizeof(float));
  m.h = DevBuf(H * sizeof(float));
  m.qkv = DevBuf((H + 2 * KV) * sizeof(float));
  m.a = DevBuf(std::max(H, F) * sizeof(float));
  m.logits = DevBuf(std::max(vocab, 1) * sizeof(float));
  m.hb = DevBuf(H * sizeof(__nv_bfloat16));
  m.ab = DevBuf(std::max(H, F) * sizeof(__nv_bfloat16));
  m.gu = DevBuf(2 * static_cast<std::size_t>(F) * sizeof(float));
  check(cudaMemset(m.x_in.as<void>(), 0, H * sizeof(float)), "cudaMemset");
  check(cudaStreamCreateWithFlags(&m.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  if (!nf4) {
    check_blas(cublasCreate(&m.blas), "cublasCreate");
    check_blas(cublasSetStream(m.blas, m.stream), "cublasSetStream");
    m.workspace = DevBuf(std::size_t(32) << 20);
    check_blas(cublasSetWorkspace(m.blas, m.workspace.as<void>(), m.workspace.bytes()), "cublasSetWorkspace");
  }
  check(cudaDeviceSynchronize(), "GpuDecodeChain upload");
}

GpuDecodeChain::~GpuDecodeChain() = default;  // Impl owns the stream, the cuBLAS handle and the graphs

const std::vector<MatShape>& GpuDecodeChain::plan() const { return impl_->plan; }

double GpuDecodeChain::weight_bytes() const {
  double b = 0;
  for (const auto& d : impl_->fused) {
    // The planted stack_bytes_as_elements fault counts bf16 elements for bytes.
    b += impl_->faults.bytes_as_elements && !impl_->nf4() ? d.w.bytes() / 2.0 : static_cast<double>(d.w.bytes());
    b += static_cast<double>(d.scales.bytes());
  }
  return b;
}

double GpuDecodeChain::flops() const { return plan_flops(impl_->plan); }

void GpuDecodeChain::step(const float* x, float* hidden_out, float* logits) {
  Impl& m = *impl_;
  const int H = m.s.hidden;
  // On the chain's stream: a non-blocking stream does not wait for the legacy stream's copies.
  check(cudaMemcpyAsync(m.x_in.as<float>(), x, H * sizeof(float), cudaMemcpyHostToDevice, m.stream),
        "cudaMemcpyAsync (x)");
  m.enqueue_ours(m.stream);
  check(cudaStreamSynchronize(m.stream), "decode step");
  check(cudaMemcpy(hidden_out, m.h.as<float>(), H * sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy (h)");
  if (logits && m.vocab > 0)
    check(cudaMemcpy(logits, m.logits.as<float>(), m.vocab * sizeof(float), cudaMemcpyDeviceToHost),
          "cudaMemcpy (logits)");
}

std::vector<bf16_t> GpuDecodeChain::bf16_matrix(int i) const {
  const Impl& m = *impl_;
  if (m.nf4() || i < 0 || i >= static_cast<int>(m.plan.size()))
    throw std::invalid_argument("bf16_matrix: no such bf16 matrix");
  const MatShape& p = m.plan[i];
  const Placement& w = m.where[i];
  std::vector<bf16_t> out(static_cast<std::size_t>(p.N) * p.K);
  const std::size_t row = 2 * static_cast<std::size_t>(p.K);
  check(cudaMemcpy2D(out.data(), row, m.fused[w.fused].w.as<std::uint8_t>() + w.first_row * row, row * w.row_step, row,
                     p.N, cudaMemcpyDeviceToHost),
        "cudaMemcpy2D");
  return out;
}

Nf4Matrix GpuDecodeChain::nf4_matrix(int i) const {
  const Impl& m = *impl_;
  if (!m.nf4() || i < 0 || i >= static_cast<int>(m.plan.size()))
    throw std::invalid_argument("nf4_matrix: no such NF4 matrix");
  const MatShape& p = m.plan[i];
  const Placement& w = m.where[i];
  Nf4Matrix q;
  q.N = p.N;
  q.K = p.K;
  q.packed.resize(static_cast<std::size_t>(p.N) * p.K / 2);
  q.scales.resize(static_cast<std::size_t>(p.N) * p.K / 64);
  const std::size_t row = p.K / 2, srow = p.K / 64 * sizeof(float);
  const DevMat& d = m.fused[w.fused];
  check(cudaMemcpy2D(q.packed.data(), row, d.w.as<std::uint8_t>() + w.first_row * row, row * w.row_step, row, p.N,
                     cudaMemcpyDeviceToHost),
        "cudaMemcpy2D");
  check(cudaMemcpy2D(q.scales.data(), srow, d.scales.as<std::uint8_t>() + w.first_row * srow, srow * w.row_step, srow,
                     p.N, cudaMemcpyDeviceToHost),
        "cudaMemcpy2D");
  return q;
}

double GpuDecodeChain::time_graph(int repeats, bool cublas) {
  Impl& m = *impl_;
  if (cublas && m.nf4()) throw std::invalid_argument("time_graph: the cuBLAS chain is bf16 only");
  cudaGraphExec_t g = m.captured(cublas);
  return detail::median_event_seconds(m.stream, repeats,
                                      [&] { check(cudaGraphLaunch(g, m.stream), "cudaGraphLaunch"); });
}

double GpuDecodeChain::time_eager(int repeats, bool cublas) {
  Impl& m = *impl_;
  if (cublas && m.nf4()) throw std::invalid_argument("time_eager: the cuBLAS chain is bf16 only");
  return detail::median_event_seconds(m.stream, repeats, [&] {
    if (cublas)
      m.enqueue_cublas(m.stream);
    else
      m.enqueue_ours(m.stream);
  });
}

// ---- single GEMVs for tests ------------------------------------------------------------------------------------
std::vector<float> gemv_bf16_host(const bf16_t* W, int N, int K, const float* x, const GemvFaults& f) {
  gemv_launch(N, K, "bf16");
  std::string why;
  if (device_count(&why) == 0) throw std::runtime_error(why);
  DevBuf dw(2 * static_cast<std::size_t>(N) * K), dx(K * sizeof(float)), dy(N * sizeof(float));
  check(cudaMemcpy(dw.as<void>(), W, dw.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dx.as<void>(), x, dx.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  launch_gemv<false, kStore>(dw.as<void>(), nullptr, N, K, XPlain{dx.as<float>()}, dy.as<float>(), f.read_weights_twice,
                             nullptr);
  std::vector<float> y(N);
  check(cudaMemcpy(y.data(), dy.as<void>(), dy.bytes(), cudaMemcpyDeviceToHost), "gemv_bf16");
  return y;
}

std::vector<float> gemv_nf4_host(const Nf4Matrix& W, const float* x, const GemvFaults& f) {
  gemv_launch(W.N, W.K, "nf4");
  std::string why;
  if (device_count(&why) == 0) throw std::runtime_error(why);
  DevBuf dp(W.packed.size()), ds(W.scales.size() * sizeof(float)), dx(W.K * sizeof(float)), dy(W.N * sizeof(float));
  check(cudaMemcpy(dp.as<void>(), W.packed.data(), dp.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(ds.as<void>(), W.scales.data(), ds.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  check(cudaMemcpy(dx.as<void>(), x, dx.bytes(), cudaMemcpyHostToDevice), "cudaMemcpy");
  if (f.dequant_whole_first) {
    DevBuf scratch(2 * static_cast<std::size_t>(W.N) * W.K);
    dequant_nf4_kernel<<<1024, 256>>>(dp.as<std::uint8_t>(), ds.as<float>(), static_cast<long long>(W.packed.size()),
                                      scratch.as<__nv_bfloat16>());
    check_launch("dequant_nf4_kernel");
    launch_gemv<false, kStore>(scratch.as<void>(), nullptr, W.N, W.K, XPlain{dx.as<float>()}, dy.as<float>(),
                               f.read_weights_twice, nullptr);
    check(cudaDeviceSynchronize(), "gemv_nf4");
  } else {
    launch_gemv<true, kStore>(dp.as<void>(), ds.as<float>(), W.N, W.K, XPlain{dx.as<float>()}, dy.as<float>(),
                              f.read_weights_twice, nullptr);
  }
  std::vector<float> y(W.N);
  check(cudaMemcpy(y.data(), dy.as<void>(), dy.bytes(), cudaMemcpyDeviceToHost), "gemv_nf4");
  return y;
}

}  // namespace claimcheck::kernels::cuda
