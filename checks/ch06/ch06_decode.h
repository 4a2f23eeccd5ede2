// Chapter 6's decode measurements: the deterministic test data, a decode stack's matrices for the LibTorch
// competitor, its step time, and that time against one read of its own bytes at the same moment.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ch06_inputs.h"
#include "claimcheck/base/aligned.h"
#include "claimcheck/base/random.h"
#include "claimcheck/base/timing.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/kernels/roofline.h"
#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/stats.h"

namespace ch06 {
namespace ref = claimcheck::ref;
using claimcheck::base::best_seconds;

// Deterministic test weights: uniform in +-1/sqrt(K), as bf16 (SplitMix64), on a cache line as a tensor would be.
inline claimcheck::base::aligned_vector<K::bf16_t> random_bf16(std::size_t n, int fan_in, std::uint64_t seed) {
  claimcheck::base::aligned_vector<K::bf16_t> w(n);
  const float scale = 1.0f / std::sqrt(static_cast<float>(fan_in));
  claimcheck::base::SplitMix64 rng(seed * claimcheck::base::kGoldenGamma + 1);
  for (auto& x : w) x = K::to_bf16((2 * rng.next_unit() - 1) * scale);
  return w;
}
inline std::vector<float> random_activations(std::size_t n, std::uint64_t seed) {
  std::vector<float> x(n);
  std::uint64_t s = seed ^ 0x5DEECE66DULL;
  for (auto& v : x) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    v = static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1);
  }
  return x;
}

// The rows and columns of matrix m (0 q, 1 k, 2 v, 3 o, 4 gate, 5 up, 6 down) of a layer of the stack's shape.
struct MatShape {
  int rows, cols;
};
inline MatShape mat_shape(const K::DecodeShape& d, int m) {
  const int rows[7] = {d.hidden, d.kv_dim, d.kv_dim, d.hidden, d.ffn, d.ffn, d.hidden};
  return {rows[m], m == 6 ? d.ffn : d.hidden};
}

// The seven matrices of each layer of a bf16 stack, as the LibTorch competitor takes them.
inline std::vector<ref::Bf16Mat> stack_mats(const K::DecodeStack& s) {
  const auto& d = s.shape();
  std::vector<ref::Bf16Mat> mats;
  for (int l = 0; l < d.layers; ++l) {
    const auto w = s.bf16_weights(l);
    for (int m = 0; m < 7; ++m) mats.push_back({w[m], mat_shape(d, m).rows, mat_shape(d, m).cols});
  }
  return mats;
}

// The buffers a step of a bf16 stack reads (its weights), for a read of the very same pages (ch06::Kernel::reads).
inline std::vector<std::pair<const void*, std::size_t>> stack_reads(const K::DecodeStack& s) {
  std::vector<std::pair<const void*, std::size_t>> bufs;
  for (const auto& m : stack_mats(s)) bufs.push_back({m.w, static_cast<std::size_t>(m.N) * m.K * sizeof(K::bf16_t)});
  return bufs;
}

// Seconds per decode step of a stack on input x (hidden floats): the median of `steps` after one warm-up step, each
// step writing y (hidden floats), which holds what the last timed step computed, for stack_output_error on the same x.
inline double time_stack(const K::DecodeStack& s, const K::GemvOptions& o, int steps, const float* x, float* y) {
  s.step(x, y, o);
  std::vector<double> t;
  for (int i = 0; i < steps; ++i) t.push_back(best_seconds(1, [&] { s.step(x, y, o); }));
  return claimcheck::base::median(std::move(t));
}

// What a timed step computed (y, from input x) against the answer key's fp64 step over the same weights
// (ref::gemv_bf16_fp64, or ref::gemv_nf4_fp64 with the format's levels and the products this CPU's kernel owes for an
// nf4 stack), layer by layer (ref::decode_step_error_by_layer): one more step, untimed, on the same weights and x
// keeps each layer's input, and its q and k (which a one-token step reads nowhere else). The largest element's error
// over the reference's largest magnitude: a kernel that reads
// its bytes and computes the wrong thing reads O(1) in the layer it is wrong in; fp32 accumulation over K <= 14,336,
// about 1e-6 (bf16 products: below 5e-6 a layer; end to end over two layers their roundings of the activations
// parted from fp64's read 1.7-4.0e-4 on a 2-vCPU Zen 4 guest, 2026-12-06, six seeds).
inline double stack_output_error(const K::DecodeStack& s, const float* x, const float* y, const K::GemvOptions& o,
                                 const std::vector<double>& nf4_levels = {},
                                 ref::Nf4Products nf4_products = ref::Nf4Products::fp32) {
  const auto& d = s.shape();
  std::vector<float> inputs(static_cast<std::size_t>(d.hidden) * d.layers), out(static_cast<std::size_t>(d.hidden));
  std::vector<float> qk(static_cast<std::size_t>(d.hidden + d.kv_dim) * d.layers);  // each layer's q and k
  s.step(x, out.data(), o, inputs.data(), qk.data());
  return ref::decode_step_error_by_layer(
      {d.hidden, d.kv_dim, d.ffn, d.layers, d.head_dim},
      [&](int l, int m, const double* a, double* b) {
        const MatShape ms = mat_shape(d, m);
        if (const K::Nf4Matrix* q = s.nf4_weight(l, m))
          ref::gemv_nf4_fp64(q->packed.data(), q->scales.data(), ms.rows, ms.cols, nf4_levels, a, b, nullptr,
                             nf4_products);
        else
          ref::gemv_bf16_fp64(s.bf16_weights(l)[m], ms.rows, ms.cols, a, b);
      },
      x, inputs.data(), out.data(), y, qk.data());
}

// The NF4 stack q's codes and scales against NF4's definition of the bf16 weights of stack b (built from the same
// seed), on `rows` rows of each matrix spread from its first to its last (ref::check_nf4_quantization, the answer
// key's nearest level of w / absmax): the violations counted, the first described in *first. An output check cannot
// see a quantiser that codes wrongly: the kernel and the fp64 reference read the same codes. A wrong code or scale
// in the packing repeats across rows, so a sample of rows sees it.
inline long nf4_quantization_mismatches(const K::DecodeStack& b, const K::DecodeStack& q,
                                        const std::vector<double>& levels, std::string* first, int rows = 16) {
  const auto& d = b.shape();
  long bad = 0;
  for (int l = 0; l < d.layers; ++l)
    for (int m = 0; m < 7; ++m) {
      const MatShape ms = mat_shape(d, m);
      const K::Nf4Matrix* Q = q.nf4_weight(l, m);
      const std::vector<const K::bf16_t*> W = b.bf16_weights(l);
      if (!Q || W.size() != 7 || Q->N != ms.rows || Q->K != ms.cols ||
          Q->packed.size() != static_cast<std::size_t>(ms.rows) * ms.cols / 2 ||
          Q->scales.size() != static_cast<std::size_t>(ms.rows) * ms.cols / 64) {
        if (bad == 0 && first)
          *first = "layer " + std::to_string(l) + " matrix " + std::to_string(m) + ": not an NF4 matrix of its shape";
        ++bad;
        continue;
      }
      const long K = ms.cols;
      for (int i = 0; i < rows; ++i) {
        const long r = rows > 1 ? static_cast<long>(i) * (ms.rows - 1) / (rows - 1) : 0;
        const ref::Nf4QuantCheck c =
            ref::check_nf4_quantization(W[static_cast<std::size_t>(m)] + r * K, 1, static_cast<int>(K),
                                        Q->packed.data() + r * K / 2, Q->scales.data() + r * K / 64, levels);
        if (!c.ok() && bad == 0 && first)
          *first = "layer " + std::to_string(l) + " matrix " + std::to_string(m) + " row " + std::to_string(r) + ": " +
                   c.first_detail;
        bad += c.bad_codes + c.bad_scales;
      }
    }
  return bad;
}

// The weights' scale, as DecodeStack's contract states it (uniform in +-1/sqrt(K)): the largest |w| x sqrt(K) of an
// N x K bf16 matrix, read through the answer key's bf16 decoding. About 1 (the largest of N K draws, bf16-rounded); a
// generator that leaves a matrix or its tail unfilled reads below, one scaled by another size away from 1.
inline double weights_scale(const K::bf16_t* W, long N, long K) {
  double top = 0;
  for (long i = 0; i < N * K; ++i) top = std::max(top, std::fabs(ref::bf16_value(W[i])));
  return top * std::sqrt(static_cast<double>(K));
}
// Of two weights_scale readings, the one farther from 1 (the worse).
inline double farther_from_one(double a, double b) { return std::fabs(a - 1) >= std::fabs(b - 1) ? a : b; }

// The GEMV kernels on every path this CPU can run (K::gemv_paths_here(); the detected one is the timed one), each
// forced in turn, untimed, against the answer key: the bf16 GEMV and the NF4 GEMV (with the
// products that path owes: bf16 on "avx512_bf16", fp32 elsewhere) on matrix W of the stacks' weights, and the NF4
// GEMV again on 62 rows whose K holds an odd number of 64-blocks (the kernels' row and K tails: 2 rows past a chunk of
// 4), and on activations that are all ties between two bf16 (their low 16 bits 0x8000), each signed as row 0's weight
// so that row 0's products all add: a path that rounds activations to bf16 and breaks ties otherwise than to even (half
// up, toward zero) moves that row by about 1e-3 of its scale. The bf16 GEMV also on a matrix of 63 rows and K = 1053 (3
// rows past a chunk of 4, and a K tail of every vector width: 5 past 8, 13 past 16, 29 past 32, each above half the
// width; and past the packed panels' K block of 1024), and the batched GEMM on it at batches 6, 13 and 3 (each of the
// direct tiles) and 17 (the packed panels, in two K blocks). The worst sampled error over the reference's scale; the
// path it was on in *worst_path. A path a CPU other than this one would run is checked here too: its code is the same
// code under test. `scale`, when given, receives the weights_scale of the tail matrices this builds, the one farthest
// from 1.
inline double gemv_paths_error(const K::bf16_t* W, const K::Nf4Matrix& Q, const std::vector<double>& levels,
                               const K::GemvOptions& o, std::uint64_t seed, std::string* worst_path,
                               double* scale = nullptr) {
  const int N = Q.N, Kd = Q.K, Ko = 64 * 65, No = 62, Nt = 63, Kt = 1053;
  const std::vector<K::bf16_t> Wo = K::decode_weights_bf16(No, Ko, seed ^ 0x9e3779b97f4a7c15ull, 1, o.faults),
                               Wt = K::decode_weights_bf16(Nt, Kt, seed ^ 0x2545f4914f6cdd1dull, 1, o.faults);
  if (scale) {
    *scale = farther_from_one(weights_scale(Wo.data(), No, Ko), weights_scale(Wt.data(), Nt, Kt));
  }
  // Quantised on the run's threads (62 rows split unevenly among them), every row held to NF4's definition: an output
  // check cannot see rows the quantiser left empty, whose zero codes and scales the reference reads as well.
  const K::Nf4Matrix Qo = K::quantize_nf4(Wo.data(), No, Ko, o.threads);
  const std::vector<float> x = random_activations(static_cast<std::size_t>(Kd), seed + 1),
                           xo = random_activations(static_cast<std::size_t>(Ko), seed + 2),
                           xt = random_activations(static_cast<std::size_t>(Kt), seed + 3);
  std::vector<float> ties(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) {
    std::uint32_t bits = 0;
    std::memcpy(&bits, &x[k], 4);
    bits = (bits & 0x7fff0000u) | 0x8000u | (static_cast<std::uint32_t>(W[k] & 0x8000u) << 16);
    std::memcpy(&ties[k], &bits, 4);
  }
  std::vector<float> y(static_cast<std::size_t>(N)), yo(static_cast<std::size_t>(No)), yt(static_cast<std::size_t>(Nt));
  double worst = 0;
  if (Qo.packed.size() != static_cast<std::size_t>(No) * Ko / 2 ||
      Qo.scales.size() != static_cast<std::size_t>(No) * Ko / 64 ||
      !ref::check_nf4_quantization(Wo.data(), No, Ko, Qo.packed.data(), Qo.scales.data(), levels).ok()) {
    *worst_path = "the 62-row NF4 matrix's quantisation (codes or scales apart from NF4's definition)";
    return std::numeric_limits<double>::quiet_NaN();
  }
  // Each output NaN before its call: a row the kernel leaves unwritten reads NaN, not the last path's right answer.
  const auto poison = [](std::vector<float>& v) {
    std::fill(v.begin(), v.end(), std::numeric_limits<float>::quiet_NaN());
  };
  auto keep = [&](double e, const std::string& path) {
    if (worst == worst && !(e <= worst)) worst = e, *worst_path = path;  // (a NaN, once met, stays the worst)
  };
  for (const std::string& path : K::gemv_paths_here(o.faults)) {
    if (!K::gemv_force_path(path)) continue;
    const ref::Nf4Products products = path == "avx512_bf16" ? ref::Nf4Products::bf16 : ref::Nf4Products::fp32;
    poison(y);
    K::gemv_bf16(W, N, Kd, x.data(), y.data(), o);
    keep(ref::gemm_bf16_sampled_error(W, N, Kd, x.data(), 1, y.data()), path);
    poison(y);
    K::gemv_nf4(Q, x.data(), y.data(), o);
    keep(ref::gemv_nf4_sampled_error(Q.packed.data(), Q.scales.data(), N, Kd, levels, x.data(), y.data(), products),
         path);
    poison(y);
    K::gemv_nf4(Q, ties.data(), y.data(), o);
    keep(ref::gemv_nf4_sampled_error(Q.packed.data(), Q.scales.data(), N, Kd, levels, ties.data(), y.data(), products),
         path + " (activations at bf16 ties)");
    poison(yt);
    K::gemv_bf16(Wt.data(), Nt, Kt, xt.data(), yt.data(), o);
    keep(ref::gemm_bf16_sampled_error(Wt.data(), Nt, Kt, xt.data(), 1, yt.data(), Nt),
         path + " (" + std::to_string(Nt) + " rows, K = " + std::to_string(Kt) + ")");
    // The batched GEMM on the same tail matrix, at batches that run each of the direct tiles (4 tokens, then a
    // remainder of 2, 1 and 3) and one of the packed panels.
    for (const int B : {6, 13, 3, 17}) {
      std::vector<float> X(static_cast<std::size_t>(B) * Kt), Y(static_cast<std::size_t>(B) * Nt);
      for (std::size_t i = 0; i < X.size(); ++i) X[i] = xt[i % xt.size()] * (1.0f + static_cast<float>(i / Kt) / 8);
      poison(Y);
      K::gemm_bf16(Wt.data(), Nt, Kt, X.data(), B, Y.data(), o);
      keep(ref::gemm_bf16_sampled_error(Wt.data(), Nt, Kt, X.data(), B, Y.data(), Nt),  // every row and token
           path + " (GEMM, " + std::to_string(Nt) + " rows, K = " + std::to_string(Kt) + ", B = " + std::to_string(B) +
               ")");
    }
    poison(yo);
    K::gemv_nf4(Qo, xo.data(), yo.data(), o);
    keep(
        ref::gemv_nf4_sampled_error(Qo.packed.data(), Qo.scales.data(), No, Ko, levels, xo.data(), yo.data(), products),
        path + " (" + std::to_string(No) + " rows, K of 65 blocks)");
  }
  K::gemv_force_path("");
  return worst;
}

}  // namespace ch06
