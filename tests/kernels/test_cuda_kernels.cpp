// kernels/cuda against the fp64 answer key. The host-side arithmetic (NF4 decoding shared with the kernels, the
// decode plan, launch shapes) runs everywhere; the device tests skip with the reason where there is no CUDA
// device (or no CUDA build), and never pass there.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "claimcheck/kernels/cuda/decode.h"
#include "claimcheck/kernels/cuda/plan.h"
#include "claimcheck/kernels/cuda/probes.h"
#include "claimcheck/kernels/cuda/stream.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/ref/gemv.h"
#include "gemv_test_util.h"

namespace K = claimcheck::kernels;
namespace C = claimcheck::kernels::cuda;
namespace ref = claimcheck::ref;

namespace {

using gemv_test::levels;
using gemv_test::random_bf16;
using gemv_test::random_f32;
using gemv_test::tol32;

#define NEED_DEVICE()                                    \
  do {                                                   \
    std::string why;                                     \
    if (C::device_count(&why) == 0) GTEST_SKIP() << why; \
  } while (0)

}  // namespace

// ---- host side: runs everywhere -----------------------------------------------------------------------------------

// cuBLAS is loaded on first use, not linked (a process that links it pays ~70 ms at start): where the build has CUDA,
// the library loads and binds every entry point the kernels call, with or without a device.
TEST(CudaPlan, CublasLoadsOnFirstUse) {
  std::string why;
  if (C::device_count(&why) == 0 && why.find("not built with CUDA") != std::string::npos) GTEST_SKIP() << why;
  why.clear();
  EXPECT_TRUE(C::cublas_loadable(&why)) << why;
}
TEST(CudaPlan, Nf4LevelsAreTheFormatsAndTheCpuKernels) {
  const auto L = levels();
  ASSERT_EQ(L.size(), 16u);
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(C::nf4_level(c), K::nf4_levels()[c]) << "code " << c;
    EXPECT_NEAR(C::nf4_level(c), L[c], 1e-7) << "code " << c;
  }
  for (unsigned b = 0; b < 256; ++b) {  // every byte: low nibble the even weight, high the odd
    float e, o;
    C::nf4_decode_byte(static_cast<std::uint8_t>(b), 0.5f, &e, &o);
    EXPECT_NEAR(e, L[b & 15] * 0.5, 1e-7);
    EXPECT_NEAR(o, L[b >> 4] * 0.5, 1e-7);
  }
}

TEST(CudaPlan, DecodePlanReadsWhatTheCpuStackReads) {
  K::DecodeShape s;
  s.hidden = 128, s.kv_dim = 32, s.ffn = 192, s.layers = 3, s.head_dim = 16;
  const K::DecodeStack bf(s, "bf16", 3), nf(s, "nf4", 3);
  const auto plan = C::decode_plan(s, 0);
  ASSERT_EQ(plan.size(), 21u);
  EXPECT_EQ(plan[4].name, "gate");
  EXPECT_EQ(plan[6].N, s.hidden);
  EXPECT_EQ(plan[6].K, s.ffn);
  EXPECT_DOUBLE_EQ(C::plan_weight_bytes(plan, "bf16"), static_cast<double>(bf.weight_bytes()));
  EXPECT_DOUBLE_EQ(C::plan_weight_bytes(plan, "nf4"), static_cast<double>(nf.weight_bytes()));
  EXPECT_DOUBLE_EQ(C::plan_flops(plan), bf.flops());
  const auto with_head = C::decode_plan(s, 1000);
  ASSERT_EQ(with_head.size(), 22u);
  EXPECT_EQ(with_head.back().name, "lm_head");
  EXPECT_DOUBLE_EQ(C::plan_weight_bytes(with_head, "bf16") - C::plan_weight_bytes(plan, "bf16"), 2.0 * 1000 * 128);
  EXPECT_THROW(C::plan_weight_bytes(plan, "int8"), std::invalid_argument);
  EXPECT_THROW(C::decode_plan(s, -1), std::invalid_argument);
}

TEST(CudaPlan, Llama3DecodeChainIs15GBOfBf16) {
  // Llama-3-8B without its embedding table (a lookup, not a GEMV): 32 layers' projections and the untied lm_head,
  // 7.50e9 weights; NF4 with an fp32 scale per 64 weights: 0.28125 of the bf16 bytes.
  const auto plan = C::decode_plan(K::DecodeShape{4096, 1024, 14336, 32, 128}, 128256);
  EXPECT_EQ(plan.size(), 32u * 7 + 1);
  EXPECT_NEAR(C::plan_weight_bytes(plan, "bf16") / 1e9, 15.01, 0.01);
  EXPECT_DOUBLE_EQ(C::plan_weight_bytes(plan, "nf4") / C::plan_weight_bytes(plan, "bf16"), 0.28125);
}

TEST(CudaPlan, GemvLaunchCoversEveryRow) {
  for (int N : {1, 7, 8, 9, 4096, 6144, 128256})
    for (const char* f : {"bf16", "nf4"}) {
      const C::GemvLaunch l = C::gemv_launch(N, 4096, f);
      EXPECT_EQ(l.threads, 32 * l.rows_per_block);
      EXPECT_GE(static_cast<long long>(l.blocks) * l.rows_per_block, N);
      EXPECT_LT(static_cast<long long>(l.blocks - 1) * l.rows_per_block, N);
    }
  EXPECT_EQ(C::gemv_launch(8, 4096, "bf16").k_per_step, 256);
  EXPECT_EQ(C::gemv_launch(8, 4096, "nf4").k_per_step, 1024);
  EXPECT_THROW(C::gemv_launch(8, 12, "bf16"), std::invalid_argument);
  EXPECT_THROW(C::gemv_launch(8, 96, "nf4"), std::invalid_argument);
  EXPECT_THROW(C::gemv_launch(0, 64, "nf4"), std::invalid_argument);
  EXPECT_THROW(C::gemv_launch(8, 64, "fp8"), std::invalid_argument);
}

// ---- on the device ----------------------------------------------------------------------------------------------
TEST(CudaDevice, GemvBf16MatchesFp64) {
  NEED_DEVICE();
  for (auto [N, Kd] : std::vector<std::pair<int, int>>{{1, 8}, {7, 264}, {129, 4096}, {300, 1000}, {33, 14336}}) {
    const auto W = random_bf16(static_cast<std::size_t>(N) * Kd, N + Kd);
    const auto x = random_f32(Kd, 5);
    const std::vector<double> xd(x.begin(), x.end());
    std::vector<double> y(N), absdot(N);
    ref::gemv_bf16_fp64(W.data(), N, Kd, xd.data(), y.data(), absdot.data());
    for (bool twice : {false, true}) {
      K::GemvFaults f;
      f.read_weights_twice = twice;  // a slower kernel, the same result
      const auto g = C::gemv_bf16_host(W.data(), N, Kd, x.data(), f);
      for (int n = 0; n < N; ++n) ASSERT_NEAR(g[n], y[n], tol32(Kd, absdot[n])) << N << "x" << Kd << " row " << n;
    }
  }
}

TEST(CudaDevice, GemvNf4MatchesFp64) {
  NEED_DEVICE();
  const auto L = levels();
  for (auto [N, Kd] : std::vector<std::pair<int, int>>{{1, 64}, {9, 192}, {130, 4096}, {17, 14336}}) {
    const auto W = random_bf16(static_cast<std::size_t>(N) * Kd, N * 3 + Kd);
    const K::Nf4Matrix q = K::quantize_nf4(W.data(), N, Kd);
    const auto x = random_f32(Kd, 6);
    const std::vector<double> xd(x.begin(), x.end());
    std::vector<double> y(N), absdot(N);
    ref::gemv_nf4_fp64(q.packed.data(), q.scales.data(), N, Kd, L, xd.data(), y.data(), absdot.data());
    const auto g = C::gemv_nf4_host(q, x.data());
    for (int n = 0; n < N; ++n) ASSERT_NEAR(g[n], y[n], tol32(Kd, absdot[n])) << N << "x" << Kd << " row " << n;
    K::GemvFaults f;
    f.dequant_whole_first = true;  // through bf16 in memory: within bf16's rounding of each weight
    const auto d = C::gemv_nf4_host(q, x.data(), f);
    for (int n = 0; n < N; ++n) ASSERT_NEAR(d[n], y[n], std::ldexp(1.0, -8) * absdot[n] + 1e-6);
  }
}

TEST(CudaDevice, DecodeChainMatchesFp64AndTheCpuWeights) {
  NEED_DEVICE();
  K::DecodeShape s;
  s.hidden = 256, s.kv_dim = 64, s.ffn = 384, s.layers = 2, s.head_dim = 32;
  const int vocab = 100;
  const ref::RefDecodeShape rs{s.hidden, s.kv_dim, s.ffn, s.layers, s.head_dim};
  const auto L = levels();
  const auto x = random_f32(s.hidden, 21);
  const std::vector<double> xd(x.begin(), x.end());
  const K::DecodeStack cpu(s, "bf16", 11);
  for (const char* format : {"bf16", "nf4"}) {
    SCOPED_TRACE(format);
    C::GpuDecodeChain chain(s, vocab, format, 11, 2);
    const auto plan = chain.plan();
    ASSERT_EQ(plan.size(), 15u);
    EXPECT_DOUBLE_EQ(chain.weight_bytes(), C::plan_weight_bytes(plan, format));
    const bool nf4 = std::string(format) == "nf4";
    std::vector<K::Nf4Matrix> q;
    std::vector<std::vector<K::bf16_t>> w;
    for (int i = 0; i < static_cast<int>(plan.size()); ++i) {
      if (nf4)
        q.push_back(chain.nf4_matrix(i));
      else
        w.push_back(chain.bf16_matrix(i));
    }
    if (!nf4) {  // the CPU stack's weights for the same seed (the device layout interleaves gate and up)
      for (int l = 0; l < s.layers; ++l)
        for (int m = 0; m < 7; ++m)
          ASSERT_EQ(0, std::memcmp(w[l * 7 + m].data(), cpu.bf16_weights(l)[m], w[l * 7 + m].size() * 2))
              << l << " " << m;
    }
    auto mv = [&](int i, const double* in, double* out) {
      if (nf4)
        ref::gemv_nf4_fp64(q[i].packed.data(), q[i].scales.data(), plan[i].N, plan[i].K, L, in, out);
      else
        ref::gemv_bf16_fp64(w[i].data(), plan[i].N, plan[i].K, in, out);
    };
    std::vector<double> h(s.hidden), logits(vocab);
    ref::decode_step_fp64(
        rs, [&](int l, int m, const double* in, double* out) { mv(l * 7 + m, in, out); }, xd.data(), h.data());
    mv(static_cast<int>(plan.size()) - 1, h.data(), logits.data());
    std::vector<float> gh(s.hidden), gl(vocab);
    chain.step(x.data(), gh.data(), gl.data());
    double scale = 0;
    for (double v : h) scale = std::max(scale, std::fabs(v));
    for (int i = 0; i < s.hidden; ++i) ASSERT_NEAR(gh[i], h[i], 2e-5 * scale) << "hidden " << i;
    for (int i = 0; i < vocab; ++i) ASSERT_NEAR(gl[i], logits[i], 2e-5 * scale) << "logit " << i;
    EXPECT_GT(chain.time_graph(3), 0);
    EXPECT_GT(chain.time_eager(3), 0);
    if (!nf4)
      EXPECT_GT(chain.time_graph(3, /*cublas=*/true), 0);
    else
      EXPECT_THROW(chain.time_graph(3, true), std::invalid_argument);
  }
  K::GemvFaults f;
  f.bytes_as_elements = true;  // the planted fault the check's kernel_bytes_match_shape must see
  C::GpuDecodeChain wrong(s, vocab, "bf16", 11, 2, f);
  EXPECT_NE(wrong.weight_bytes(), C::plan_weight_bytes(wrong.plan(), "bf16"));
}

TEST(CudaDevice, ProbesValidateWhatTheyTime) {
  NEED_DEVICE();
  const C::ReadResult r = C::read_bandwidth(std::size_t(256) << 20, 3);
  EXPECT_NEAR(r.sum, r.expected_sum, 0.5);
  // The planted probe faults the checks' GPU forms are held against (the CPU probe's names).
  const C::ReadResult skipped = C::read_bandwidth(std::size_t(256) << 20, 3, /*skips=*/true);
  EXPECT_GT(std::fabs(skipped.sum - skipped.expected_sum), 0.5) << "reading one vector in four misses the closed form";
  K::RooflineFaults few;
  few.few_chains = true;
  EXPECT_DOUBLE_EQ(C::gemm_peak_bf16(2, few).flops, 2.0 * 512 * 512 * 512);
  const C::CopyResult c = C::copy_bandwidth(std::size_t(256) << 20, 3);
  EXPECT_TRUE(c.valid);
  EXPECT_GT(c.seconds, 0);
  const C::GemmResult g = C::gemm_bf16_cublas(1024, 512, 768, 3);
  EXPECT_LT(g.max_rel_err, 1e-2);
  EXPECT_DOUBLE_EQ(g.flops, 2.0 * 1024 * 512 * 768);
  const auto sweep = C::layer_batch_sweep(K::DecodeShape{512, 128, 1024, 1, 64}, {1, 4, 16}, 3);
  ASSERT_EQ(sweep.size(), 3u);
  EXPECT_EQ(sweep[1].batch, 4);
  EXPECT_DOUBLE_EQ(sweep[1].flops, 4 * sweep[0].flops);
}

// main: with --skip-without-device (the device tests' ctest run), exit 77, ctest's skip, with the reason when
// there is no CUDA device; otherwise GoogleTest as usual (each device test then skips on its own).
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--skip-without-device") {
      std::string why;
      if (C::device_count(&why) == 0) {
        std::printf("SKIP %s\n", why.c_str());
        return 77;
      }
    }
  return RUN_ALL_TESTS();
}
