// The CUDA attention kernel (kernels/cuda/attention.cu): its host-side plan everywhere, and on a GPU host its
// output against the fp64 answer key (reference/src/attention_ref.cpp), causal and full, odd T, both head
// dimensions, plus the planted fault (no online-softmax rescale) that the same bound must catch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "claimcheck/kernels/cuda/attention.h"
#include "claimcheck/kernels/cuda/plan.h"
#include "claimcheck/kernels/cuda/stream.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/ref/attention.h"

namespace K = claimcheck::kernels;
namespace KC = claimcheck::kernels::cuda;
namespace ref = claimcheck::ref;

namespace {

// ---- Host side: the launch plan -------------------------------------------------------------------------------

TEST(CudaAttentionPlan, LaunchCoversTheShape) {
  for (int D : {64, 128}) {
    for (int T : {1, 17, 128, 4096}) {
      SCOPED_TRACE("D=" + std::to_string(D) + " T=" + std::to_string(T));
      const KC::AttnDims d{2, 3, T, D};
      const KC::AttnLaunch L = KC::attention_launch(d);
      EXPECT_GT(L.block_m, 0);
      EXPECT_GT(L.block_n, 0);
      EXPECT_EQ(L.block_m % 16, 0);
      EXPECT_EQ(L.block_n % 16, 0);
      EXPECT_GE(static_cast<long long>(L.grid_x) * L.block_m, T);      // covers T
      EXPECT_LT(static_cast<long long>(L.grid_x - 1) * L.block_m, T);  // and no empty query tile
      EXPECT_EQ(L.grid_y, d.B * d.H);
      EXPECT_EQ(L.threads, 32 * (L.block_m / 16));
      EXPECT_GT(L.smem_bytes, 0);
      EXPECT_LE(L.smem_bytes, 227 * 1024);
      // At least the Q tile and one K and one V tile of bf16.
      EXPECT_GE(L.smem_bytes, (L.block_m + 2 * L.block_n) * D * 2);
    }
  }
}

TEST(CudaAttentionPlan, TilesVisited) {
  for (int D : {64, 128}) {
    const KC::AttnDims d{1, 1, 4096, D};
    const KC::AttnLaunch L = KC::attention_launch(d);
    const long long q_tiles = (4096 + L.block_m - 1) / L.block_m;
    const long long k_tiles = (4096 + L.block_n - 1) / L.block_n;
    const long long full = KC::attention_tiles_visited(d, false);
    const long long causal = KC::attention_tiles_visited(d, true);
    EXPECT_EQ(full, q_tiles * k_tiles);
    // Causal: query tile i visits the key tiles up to its last row, ceil((i + 1) block_m / block_n) of them.
    long long expect = 0;
    for (long long i = 0; i < q_tiles; ++i) expect += ((i + 1) * L.block_m + L.block_n - 1) / L.block_n;
    EXPECT_EQ(causal, expect);
    // About half plus the diagonal: between half and half + one block_m / block_n strip per query tile.
    EXPECT_GE(causal, full / 2);
    EXPECT_LE(causal, full / 2 + q_tiles * ((L.block_m + L.block_n - 1) / L.block_n));
    // Scales with B * H.
    EXPECT_EQ(KC::attention_tiles_visited(KC::AttnDims{2, 3, 4096, D}, true), 6 * causal);
  }
  // One row: one key tile either way.
  EXPECT_EQ(KC::attention_tiles_visited(KC::AttnDims{1, 1, 1, 64}, true), 1);
  EXPECT_EQ(KC::attention_tiles_visited(KC::AttnDims{1, 1, 1, 64}, false), 1);
  // T = 17 (one query tile, one key tile with the sizes >= 17).
  const KC::AttnLaunch L17 = KC::attention_launch(KC::AttnDims{1, 1, 17, 64});
  EXPECT_EQ(KC::attention_tiles_visited(KC::AttnDims{1, 1, 17, 64}, false), (17 + L17.block_n - 1) / L17.block_n);
}

TEST(CudaAttentionPlan, Flops) {
  const KC::AttnDims d{2, 32, 4096, 128};
  const double full = 4.0 * 2 * 32 * 4096.0 * 4096.0 * 128;
  EXPECT_DOUBLE_EQ(KC::attention_flops(d, false), full);
  EXPECT_DOUBLE_EQ(KC::attention_flops(d, true), full / 2);  // FlashAttention's convention: 2 B H T^2 D
  EXPECT_DOUBLE_EQ(KC::attention_flops(KC::AttnDims{1, 1, 1, 64}, false), 256.0);
}

TEST(CudaAttentionPlan, RejectsUnsupportedShapes) {
  EXPECT_THROW(KC::attention_launch(KC::AttnDims{1, 1, 128, 96}), std::invalid_argument);
  EXPECT_THROW(KC::attention_launch(KC::AttnDims{1, 1, 128, 0}), std::invalid_argument);
  EXPECT_THROW(KC::attention_launch(KC::AttnDims{1, 1, 0, 64}), std::invalid_argument);
  EXPECT_THROW(KC::attention_launch(KC::AttnDims{1, 1, -3, 128}), std::invalid_argument);
  EXPECT_THROW(KC::attention_tiles_visited(KC::AttnDims{1, 1, 128, 96}, true), std::invalid_argument);
  EXPECT_THROW(KC::attention_tiles_visited(KC::AttnDims{1, 1, 0, 64}, false), std::invalid_argument);
}

// ---- Device: against the fp64 answer key ----------------------------------------------------------------------

struct Inputs {
  std::vector<K::bf16_t> q, k, v;  // what the kernel gets
  std::vector<double> qd, kd, vd;  // the same values (bf16-exact) for the answer key
  std::vector<float> qf, kf, vf;   // and for LibTorch's fp32 SDPA
};

Inputs random_inputs(const KC::AttnDims& d, unsigned seed) {
  const std::size_t n = static_cast<std::size_t>(d.B) * d.H * d.T * d.D;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  Inputs in;
  for (auto* p : {&in.q, &in.k, &in.v}) {
    p->resize(n);
    for (auto& e : *p) e = K::to_bf16(nd(rng));
  }
  auto widen = [](const std::vector<K::bf16_t>& x, std::vector<double>* dd, std::vector<float>* ff) {
    dd->resize(x.size());
    ff->resize(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
      (*ff)[i] = K::from_bf16(x[i]);
      (*dd)[i] = (*ff)[i];
    }
  };
  widen(in.q, &in.qd, &in.qf);
  widen(in.k, &in.kd, &in.kf);
  widen(in.v, &in.vd, &in.vf);
  return in;
}

struct Verdict {
  double kernel_err = 0, lib_err = 0, bound = 0, max_out = 0;
  double worst_row = 0;  // the largest of each row's error over its own bound (<= 1 passes)
  bool finite = true;
  bool ok() const { return finite && kernel_err <= bound && worst_row <= 1.0; }
};

// FlashAttention's rule: the kernel's max abs error against the fp64 answer may be at most 2x the error of "the
// library" in the same precision. Our library stand-in: (a) the fp64 answer rounded to bf16 -- the error a
// perfect kernel with bf16 output cannot avoid; plus (b) where LibTorch is linked and the mask is causal, the error
// of PyTorch's CPU fp32 SDPA on the same (bf16-exact) inputs, i.e. what the library's own arithmetic adds
// (torch_attention is causal only, so the full-attention cases use (a) alone; (b) is tiny next to (a) anyway).
// A floor of 2^-8 * max|out| keeps the bound from collapsing to 0 where (a) happens to be 0 (e.g. T = 1, where
// the answer is a bf16 row of V) -- that is one bf16 ulp at the output's scale, still far below what the
// planted fault produces. (a) never exceeds that floor, so in effect the global bound is 2^-7 * max|out| plus
// twice LibTorch's error: an absolute tolerance at the largest row's scale, loose for a row of small outputs.
// Hence also a bound per row r: 2 x max(its own (a) + (b), 2^-8 * max_d |out[r]|), plus 2^-9 * max |v| over the
// keys r sees (P is rounded to bf16 before P V, as FlashAttention-2 does: each p off by at most 2^-9 of itself,
// sum_k p_k = 1).
Verdict judge(const KC::AttnDims& d, bool causal, const Inputs& in, const std::vector<K::bf16_t>& out) {
  const ref::AttnShape s{d.B, d.H, d.T, d.D};
  std::vector<double> want(in.qd.size());
  ref::attention_fp64(in.qd.data(), in.kd.data(), in.vd.data(), want.data(), s, causal);
  Verdict v;
  std::vector<float> t;
  if (causal && ref::torch_available()) t = ref::torch_attention(in.qf.data(), in.kf.data(), in.vf.data(), s);
  double round_err = 0, torch_err = 0;
  const std::size_t rows = want.size() / d.D;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t head = r / d.T, row = r % d.T, keys = causal ? row + 1 : d.T;
    double err = 0, lib = 0, scale = 0, vmax = 0;
    for (std::size_t k = 0; k < keys; ++k)
      for (int c = 0; c < d.D; ++c) vmax = std::max(vmax, std::fabs(in.vd[(head * d.T + k) * d.D + c]));
    for (int c = 0; c < d.D; ++c) {
      const std::size_t i = r * d.D + c;
      const double got = K::from_bf16(out[i]);
      if (!std::isfinite(got)) v.finite = false;
      const double rounding =
          std::fabs(static_cast<double>(K::from_bf16(K::to_bf16(static_cast<float>(want[i])))) - want[i]);
      const double lib_i = t.empty() ? 0.0 : std::fabs(t[i] - want[i]);
      err = std::max(err, std::fabs(got - want[i]));
      lib = std::max(lib, rounding + lib_i);
      scale = std::max(scale, std::fabs(want[i]));
      round_err = std::max(round_err, rounding);
      torch_err = std::max(torch_err, lib_i);
    }
    v.kernel_err = std::max(v.kernel_err, err);
    v.max_out = std::max(v.max_out, scale);
    const double row_bound = 2.0 * std::max(lib, std::ldexp(1.0, -8) * scale) + std::ldexp(1.0, -9) * vmax;
    v.worst_row = std::max(v.worst_row, std::isfinite(err) ? err / row_bound : 1e300);
  }
  v.lib_err = round_err + torch_err;
  v.bound = 2.0 * std::max(v.lib_err, std::ldexp(1.0, -8) * v.max_out);
  return v;
}

std::string describe(const KC::AttnDims& d, bool causal) {
  return "B=" + std::to_string(d.B) + " H=" + std::to_string(d.H) + " T=" + std::to_string(d.T) +
         " D=" + std::to_string(d.D) + (causal ? " causal" : " full");
}

TEST(CudaAttention, MatchesFp64AnswerKey) {
  std::string why;
  if (KC::device_count(&why) == 0) GTEST_SKIP() << why;
  KC::attention_plant_fault(false);
  unsigned seed = 1;
  for (int D : {64, 128})
    for (int B : {1, 2})
      for (int T : {1, 5, 64, 65, 130, 257})
        for (bool causal : {true, false}) {
          const KC::AttnDims d{B, 2, T, D};
          SCOPED_TRACE(describe(d, causal));
          const Inputs in = random_inputs(d, seed++);
          const std::vector<K::bf16_t> out =
              KC::attention_fwd_bf16_host(in.q.data(), in.k.data(), in.v.data(), d, causal);
          ASSERT_EQ(out.size(), in.q.size());
          const Verdict v = judge(d, causal, in, out);
          EXPECT_TRUE(v.finite);
          EXPECT_LE(v.kernel_err, v.bound) << "library error " << v.lib_err << ", max |out| " << v.max_out;
          EXPECT_LE(v.worst_row, 1.0) << "a row's error over its own bound";
        }
}

// Causal and full attention differ (the mask is applied), and the last row of a causal run matches the full run's
// last row (it sees every key either way) to within a bf16 ulp (two instantiations of the kernel; the compiler may
// contract the arithmetic differently), while the first rows differ by far more.
TEST(CudaAttention, CausalLastRowEqualsFull) {
  std::string why;
  if (KC::device_count(&why) == 0) GTEST_SKIP() << why;
  KC::attention_plant_fault(false);
  const KC::AttnDims d{1, 2, 130, 64};
  const Inputs in = random_inputs(d, 99);
  const auto c = KC::attention_fwd_bf16_host(in.q.data(), in.k.data(), in.v.data(), d, true);
  const auto f = KC::attention_fwd_bf16_host(in.q.data(), in.k.data(), in.v.data(), d, false);
  EXPECT_NE(c, f);
  for (int h = 0; h < d.H; ++h) {
    const std::size_t last = (static_cast<std::size_t>(h) * d.T + (d.T - 1)) * d.D;
    for (int i = 0; i < d.D; ++i) {
      const double a = K::from_bf16(c[last + i]), b = K::from_bf16(f[last + i]);
      EXPECT_LE(std::fabs(a - b), std::ldexp(1.0, -7) * std::max(1.0, std::fabs(b))) << "head " << h << " d " << i;
    }
  }
}

TEST(CudaAttention, RejectsUnsupportedHeadDim) {
  std::string why;
  if (KC::device_count(&why) == 0) GTEST_SKIP() << why;
  const KC::AttnDims d{1, 1, 8, 96};
  std::vector<K::bf16_t> x(static_cast<std::size_t>(8) * 96);
  EXPECT_THROW(KC::attention_fwd_bf16_host(x.data(), x.data(), x.data(), d, true), std::invalid_argument);
}

// The planted fault: no rescale of O when a later key tile raises a row's max. With random inputs and T = 257
// (five key tiles) many rows see a rising max; the same bound must fail.
TEST(CudaAttention, PlantedFaultNoRescaleIsCaught) {
  std::string why;
  if (KC::device_count(&why) == 0) GTEST_SKIP() << why;
  const KC::AttnDims d{1, 2, 257, 64};
  const Inputs in = random_inputs(d, 4242);
  KC::attention_plant_fault(true);
  std::vector<K::bf16_t> out;
  try {
    out = KC::attention_fwd_bf16_host(in.q.data(), in.k.data(), in.v.data(), d, true);
  } catch (...) {
    KC::attention_plant_fault(false);
    throw;
  }
  KC::attention_plant_fault(false);
  const Verdict v = judge(d, true, in, out);
  EXPECT_FALSE(v.ok()) << "the planted fault went unnoticed: error " << v.kernel_err;
  EXPECT_GT(v.kernel_err, v.bound) << "the global bound alone catches it too";
  // And without the fault the same inputs pass (the fault flag was reset).
  const auto good = KC::attention_fwd_bf16_host(in.q.data(), in.k.data(), in.v.data(), d, true);
  const Verdict g = judge(d, true, in, good);
  EXPECT_TRUE(g.ok()) << "error " << g.kernel_err << " (bound " << g.bound << "), worst row " << g.worst_row;
}

TEST(CudaAttention, TimingReturnsPositiveSeconds) {
  std::string why;
  if (KC::device_count(&why) == 0) GTEST_SKIP() << why;
  const double s = KC::time_attention_fwd_bf16(KC::AttnDims{1, 2, 256, 128}, true, 3);
  EXPECT_GT(s, 0.0);
  EXPECT_LT(s, 1.0);
}

}  // namespace
