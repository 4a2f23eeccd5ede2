// Chapter 6's GPU probes (probes.h): a copy kernel, the bf16 GEMM peak through cuBLAS, a batch sweep of one
// Llama layer's GEMMs. Every probe validates what it computed before its time is used.
#include "claimcheck/kernels/cuda/probes.h"

#include <cmath>
#include <cstring>

#include "claimcheck/base/random.h"
#include "claimcheck/kernels/cuda/stream.h"
#include "common.cuh"

namespace claimcheck::kernels::cuda {
namespace detail {
namespace {

__device__ __forceinline__ std::uint32_t hash32(std::uint64_t i, std::uint32_t seed) {
  return base::lowbias32(static_cast<std::uint32_t>(i) * 0x9e3779b1u ^
                         static_cast<std::uint32_t>(i >> 32) * 0x85ebca77u ^ seed);
}

__global__ void fill_uniform_bf16_kernel(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float a) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float u = (hash32(i, seed) >> 8) * (1.0f / 16777216.0f);  // [0, 1)
    p[i] = __float2bfloat16_rn((2.f * u - 1.f) * a);
  }
}

}  // namespace

void fill_uniform_bf16(__nv_bfloat16* p, std::size_t n, std::uint32_t seed, float a, cudaStream_t s) {
  fill_uniform_bf16_kernel<<<1024, 256, 0, s>>>(p, n, seed, a);
  check_launch("fill_uniform_bf16");
}

}  // namespace detail

namespace {
using detail::check;
using detail::check_blas;
using detail::check_launch;
using detail::DevBuf;

__global__ void copy_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    __stcs(dst + i, __ldcs(src + i));
}

void need_device() {
  std::string why;
  if (device_count(&why) == 0) throw std::runtime_error(why);
}

float host_bf16(const __nv_bfloat16& b) {
  std::uint16_t bits;
  std::memcpy(&bits, &b, 2);
  const std::uint32_t w = static_cast<std::uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &w, 4);
  return f;
}

// C [M, N] (column-major, ldc M) = A^T B with A stored [K, M] column-major (i.e. row-major [M, K]) and
// B [K, N] column-major: row-major weights times a batch of column vectors, the layout of a Linear layer.
void gemm(cublasHandle_t h, int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C) {
  const float alpha = 1.f, beta = 0.f;
  check_blas(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, M, N, K, &alpha, A, CUDA_R_16BF, K, B, CUDA_R_16BF, K, &beta, C,
                          CUDA_R_16BF, M, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             "cublasGemmEx");
}

struct Blas {
  cublasHandle_t h = nullptr;
  cudaStream_t s = nullptr;
  DevBuf ws;
  Blas() {
    try {
      check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
      check_blas(cublasCreate(&h), "cublasCreate");
      check_blas(cublasSetStream(h, s), "cublasSetStream");
      ws = DevBuf(std::size_t(64) << 20);
      check_blas(cublasSetWorkspace(h, ws.as<void>(), ws.bytes()), "cublasSetWorkspace");
    } catch (...) {
      release();
      throw;
    }
  }
  void release() {
    if (h) cublasDestroy(h);
    if (s) cudaStreamDestroy(s);
    h = nullptr, s = nullptr;
  }
  ~Blas() { release(); }
};

}  // namespace

CopyResult copy_bandwidth(std::size_t bytes, int repeats) {
  need_device();
  const std::size_t n = bytes / sizeof(uint4);
  DevBuf src(n * sizeof(uint4)), dst(n * sizeof(uint4));
  detail::fill_uniform_bf16(src.as<__nv_bfloat16>(), n * 8, 12345u, 1.f);
  check(cudaMemset(dst.as<void>(), 0, dst.bytes()), "cudaMemset");
  // The fill and the memset ran on the legacy stream; the copies below run on a non-blocking one.
  check(cudaDeviceSynchronize(), "copy_bandwidth fill");
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "cudaDeviceGetAttribute");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  CopyResult r;
  try {
    r.seconds = detail::median_event_seconds(s, repeats, [&] {
      copy_kernel<<<sms * 8, 512, 0, s>>>(src.as<uint4>(), dst.as<uint4>(), n);
      check_launch("copy_kernel");
    });
  } catch (...) {
    cudaStreamDestroy(s);
    throw;
  }
  cudaStreamDestroy(s);
  r.bytes = 2.0 * n * sizeof(uint4);
  // Validation: the first and last MiB and one from the middle equal the source.
  const std::size_t probe = std::min<std::size_t>(n * sizeof(uint4), 1 << 20);
  std::vector<unsigned char> a(probe), b(probe);
  r.valid = true;
  for (std::size_t off : {std::size_t(0), (n * sizeof(uint4) - probe) / 2, n * sizeof(uint4) - probe}) {
    check(cudaMemcpy(a.data(), src.as<unsigned char>() + off, probe, cudaMemcpyDeviceToHost), "cudaMemcpy");
    check(cudaMemcpy(b.data(), dst.as<unsigned char>() + off, probe, cudaMemcpyDeviceToHost), "cudaMemcpy");
    r.valid = r.valid && std::memcmp(a.data(), b.data(), probe) == 0;
  }
  return r;
}

GemmResult gemm_bf16_cublas(int M, int N, int K, int repeats) {
  need_device();
  if (M < 1 || N < 1 || K < 1) throw std::invalid_argument("gemm_bf16_cublas: M, N, K must be positive");
  Blas b;
  DevBuf A(2 * static_cast<std::size_t>(M) * K), B(2 * static_cast<std::size_t>(K) * N),
      C(2 * static_cast<std::size_t>(M) * N);
  detail::fill_uniform_bf16(A.as<__nv_bfloat16>(), static_cast<std::size_t>(M) * K, 1u, 1.f, b.s);
  detail::fill_uniform_bf16(B.as<__nv_bfloat16>(), static_cast<std::size_t>(K) * N, 2u, 1.f, b.s);
  GemmResult r;
  r.flops = 2.0 * M * N * K;
  r.seconds = detail::median_event_seconds(
      b.s, repeats, [&] { gemm(b.h, M, N, K, A.as<__nv_bfloat16>(), B.as<__nv_bfloat16>(), C.as<__nv_bfloat16>()); });
  // Validation: 16 sampled outputs against fp64 dot products of the same bf16 inputs.
  for (int t = 0; t < 16; ++t) {
    const int i = static_cast<int>((t * 2654435761u) % static_cast<unsigned>(M));
    const int j = static_cast<int>((t * 40503u + 7) % static_cast<unsigned>(N));
    std::vector<__nv_bfloat16> a(K), bb(K);
    __nv_bfloat16 c;
    check(cudaMemcpy(a.data(), A.as<__nv_bfloat16>() + static_cast<std::size_t>(i) * K, 2 * K, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    check(cudaMemcpy(bb.data(), B.as<__nv_bfloat16>() + static_cast<std::size_t>(j) * K, 2 * K, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    check(cudaMemcpy(&c, C.as<__nv_bfloat16>() + static_cast<std::size_t>(j) * M + i, 2, cudaMemcpyDeviceToHost),
          "cudaMemcpy");
    double ref = 0, mag = 0;
    for (int k = 0; k < K; ++k) {
      ref += static_cast<double>(host_bf16(a[k])) * host_bf16(bb[k]);
      mag += std::fabs(static_cast<double>(host_bf16(a[k])) * host_bf16(bb[k]));
    }
    r.max_rel_err = std::max(r.max_rel_err, std::fabs(host_bf16(c) - ref) / std::max(mag, 1e-30));
  }
  return r;
}

GemmResult gemm_peak_bf16(int repeats, const RooflineFaults& faults) {
  const int n = faults.few_chains || faults.scalar ? 512 : 8192;
  return gemm_bf16_cublas(n, n, n, repeats);
}

std::vector<SweepPoint> layer_batch_sweep(const DecodeShape& s, const std::vector<int>& batches, int repeats,
                                          const GemvFaults& faults) {
  need_device();
  const auto plan = decode_plan(DecodeShape{s.hidden, s.kv_dim, s.ffn, 1, s.head_dim}, 0);
  int bmax = 1, kmax = 1, nmax = 1;
  for (int b : batches) {
    if (b < 1) throw std::invalid_argument("layer_batch_sweep: batches must be positive");
    bmax = std::max(bmax, b);
  }
  double weights = 0;
  for (const auto& m : plan) kmax = std::max(kmax, m.K), nmax = std::max(nmax, m.N), weights += double(m.N) * m.K;
  Blas b;
  std::vector<DevBuf> W;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    W.emplace_back(2 * static_cast<std::size_t>(plan[i].N) * plan[i].K);
    detail::fill_uniform_bf16(W.back().as<__nv_bfloat16>(), static_cast<std::size_t>(plan[i].N) * plan[i].K,
                              100u + static_cast<std::uint32_t>(i), 1.f / std::sqrt(float(plan[i].K)), b.s);
  }
  DevBuf X(2 * static_cast<std::size_t>(bmax) * kmax), Y(2 * static_cast<std::size_t>(bmax) * nmax);
  detail::fill_uniform_bf16(X.as<__nv_bfloat16>(), static_cast<std::size_t>(bmax) * kmax, 7u, 1.f, b.s);
  std::vector<SweepPoint> out;
  for (int B : batches) {
    SweepPoint p;
    p.batch = B;
    p.flops = 2.0 * B * weights;
    p.bytes = 2.0 * weights;
    for (const auto& m : plan) p.bytes += 2.0 * B * (m.K + m.N);
    p.seconds = detail::median_event_seconds(b.s, repeats, [&] {
      for (std::size_t i = 0; i < plan.size(); ++i) {
        for (int twice = 0; twice < (faults.read_weights_twice ? 2 : 1); ++twice) {
          if (faults.gemm_per_token) {
            for (int t = 0; t < B; ++t)
              gemm(b.h, plan[i].N, 1, plan[i].K, W[i].as<__nv_bfloat16>(),
                   X.as<__nv_bfloat16>() + static_cast<std::size_t>(t) * plan[i].K,
                   Y.as<__nv_bfloat16>() + static_cast<std::size_t>(t) * plan[i].N);
          } else {
            gemm(b.h, plan[i].N, faults.first_tile_only ? std::min(B, 4) : B, plan[i].K, W[i].as<__nv_bfloat16>(),
                 X.as<__nv_bfloat16>(), Y.as<__nv_bfloat16>());
          }
        }
      }
    });
    out.push_back(p);
  }
  return out;
}

}  // namespace claimcheck::kernels::cuda
