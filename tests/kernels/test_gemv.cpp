// The CPU decode kernels (kernels/cpu/gemv/) against the fp64 answer key (reference/src/gemv_ref.cpp):
// every SIMD path this CPU has, odd shapes, one and two threads, the planted faults, and the decode stack. One file
// past 500 lines: one executable whose fixtures (the answer key's matrices, each path forced in turn) every test
// shares.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "claimcheck/kernels/attention.h"
#include "claimcheck/kernels/gemv.h"
#include "claimcheck/kernels/roofline.h"
#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/gemv.h"
#include "gemv_test_util.h"

namespace K = claimcheck::kernels;
namespace ref = claimcheck::ref;

namespace {

using gemv_test::levels;
using gemv_test::random_bf16;
using gemv_test::random_f32;
using gemv_test::tol32;
std::vector<double> widen(const float* x, std::size_t n) { return std::vector<double>(x, x + n); }
// A decode stack small enough for fp64 references: two layers, hidden 128 (8 heads of 16; 2 of keys and values).
K::DecodeShape small_stack() {
  K::DecodeShape s;
  s.hidden = 128;
  s.kv_dim = 32;
  s.ffn = 192;
  s.layers = 2;
  s.head_dim = 16;
  return s;
}

// Runs body once per SIMD path this CPU can run, that path forced ("avx512_emulated": the AVX-512 panel tile's source
// on two ymm per register, so that its 16-lane, 12 x 32 indexing runs on every AVX2 machine; "neon": AArch64's;
// "avx512_bf16": AVX-512 with the NF4 GEMV on vdpbf16ps).
template <typename Fn>
void for_each_path(Fn body) {
  for (const char* p : {"portable", "avx2", "avx512", "avx512_bf16", "avx512_emulated", "neon"}) {
    if (!K::gemv_force_path(p)) continue;
    SCOPED_TRACE(std::string("path ") + p);
    ASSERT_EQ(K::gemv_simd_path(), p);
    body(std::string(p));
  }
  K::gemv_force_path("");
}

struct Shape {
  int N, K;
};

// What the NF4 GEMV multiplies on a forced path (gemv.h): bf16 products on avx512_bf16, fp32 elsewhere.
ref::Nf4Products nf4_products(const std::string& path) {
  return path == "avx512_bf16" ? ref::Nf4Products::bf16 : ref::Nf4Products::fp32;
}

// Whether /proc/cpuinfo lists a flag (what the checks read: HardwareInfo), apart from the kernels' own detection.
[[maybe_unused]] bool cpuinfo_flag(const std::string& flag) {
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  if (!f) return false;
  char line[8192];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "flags", 5) == 0)
      found = std::strstr(line, (" " + flag + " ").c_str()) || std::strstr(line, (" " + flag + "\n").c_str());
  std::fclose(f);
  return found;
}

}  // namespace

TEST(Gemv, Bf16ConversionMatchesTheDefinition) {
  for (float f : {0.0f, -0.0f, 1.0f, -2.5f, 3.14159f, 1e-30f, -7e20f, 65504.0f, 1.00390625f, 1.01171875f}) {
    const K::bf16_t b = K::to_bf16(f);
    EXPECT_EQ(K::from_bf16(b), static_cast<float>(ref::bf16_value(b))) << f;
    // nearest: no other bf16 value is closer
    const double v = ref::bf16_value(b), up = ref::bf16_value(b + 1), down = ref::bf16_value(b - 1);
    if (f != 0.0f) {
      EXPECT_LE(std::fabs(v - f), std::fabs(up - f)) << f;
      EXPECT_LE(std::fabs(v - f), std::fabs(down - f)) << f;
    }
  }
  EXPECT_EQ(K::to_bf16(1.00390625f), 0x3f80);  // tie (1 + 2^-8) goes to even
  EXPECT_EQ(K::to_bf16(1.01171875f), 0x3f82);  // tie (1 + 3 * 2^-8) goes to even
  EXPECT_TRUE(std::isnan(K::from_bf16(K::to_bf16(std::nanf("")))));
  EXPECT_TRUE(std::isinf(ref::bf16_value(0x7f80)));
  EXPECT_EQ(ref::bf16_value(0x0001), std::ldexp(1.0, -133));  // smallest subnormal
}

TEST(Gemv, ParsesFaults) {
  K::GemvFaults f;
  EXPECT_TRUE(K::parse_gemv_fault("", &f));
  EXPECT_FALSE(f.read_weights_twice || f.dequant_whole_first);
  EXPECT_TRUE(K::parse_gemv_fault("gemv_reads_twice", &f));
  EXPECT_TRUE(f.read_weights_twice);
  EXPECT_TRUE(K::parse_gemv_fault("nf4_dequant_first", &f));
  EXPECT_TRUE(f.dequant_whole_first && !f.read_weights_twice);
  EXPECT_TRUE(K::parse_gemv_fault("nf4_half_rows", &f));
  EXPECT_TRUE(f.nf4_half_rows && !f.dequant_whole_first);
  EXPECT_TRUE(K::parse_gemv_fault("stack_no_residual", &f));
  EXPECT_TRUE(f.stack_no_residual && !f.nf4_half_rows);
  EXPECT_TRUE(K::parse_gemv_fault("nf4_wrong_sign", &f));
  EXPECT_TRUE(f.nf4_wrong_sign && !f.stack_no_residual);
  EXPECT_FALSE(K::parse_gemv_fault("scale_by_d", &f));
  EXPECT_FALSE(f.read_weights_twice || f.dequant_whole_first || f.nf4_half_rows);
}

TEST(Gemv, PathsAreKnown) {
  const std::string d = K::gemv_detected_path();
  EXPECT_TRUE(d == "avx512_bf16" || d == "avx512" || d == "avx2" || d == "neon" || d == "portable");
#if defined(__x86_64__)  // (under qemu-user an AArch64 build reads the host's flags)
  // The NF4 products a check holds this CPU to (ref::nf4_products_for, from the CPU's flags) are the ones its
  // detected path computes.
  EXPECT_EQ(nf4_products(d), ref::nf4_products_for(cpuinfo_flag("avx512_bf16"))) << d;
#endif
  if (d == "avx512_bf16") {
    EXPECT_TRUE(K::gemv_force_path("avx512"));  // the fp32 NF4 kernel stays testable
  } else {
    EXPECT_FALSE(K::gemv_force_path("avx512_bf16"));
  }
  EXPECT_TRUE(K::gemv_force_path(""));
#if defined(__aarch64__)
  EXPECT_EQ(d, "neon");                        // every AArch64 core has NEON
  EXPECT_EQ(K::roofline_simd_path(), "neon");  // and the FMA probe runs it too
  EXPECT_FALSE(K::gemv_force_path("avx2"));
#else
  EXPECT_FALSE(K::gemv_force_path("neon"));
#endif
  EXPECT_EQ(K::gemv_simd_path(), d);
  EXPECT_TRUE(K::gemv_force_path("portable"));
  EXPECT_FALSE(K::gemv_force_path("sse9"));
  EXPECT_TRUE(K::gemv_force_path(""));
  EXPECT_EQ(K::gemv_simd_path(), d);
}

TEST(Gemv, Bf16MatchesFp64OnOddShapes) {
  // 1003 x 64 at 2 threads: chunks of 128 rows read as four 32-row streams, a last chunk of 107 (26 each, 3 left).
  const std::vector<Shape> shapes = {{1, 1},    {5, 17},     {13, 31},  {4, 16}, {37, 100},
                                     {64, 256}, {130, 1001}, {7, 4099}, {9, 33}, {1003, 64}};
  for_each_path([&](const std::string&) {
    for (const auto& s : shapes) {
      SCOPED_TRACE("N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
      const auto W = random_bf16(static_cast<std::size_t>(s.N) * s.K, 1 + s.N * 7 + s.K);
      const auto x = random_f32(s.K, 99 + s.K);
      const auto xd = widen(x.data(), x.size());
      std::vector<double> r(s.N), a(s.N);
      ref::gemv_bf16_fp64(W.data(), s.N, s.K, xd.data(), r.data(), a.data());
      std::vector<float> y1(s.N, NAN), y2(s.N, NAN);
      K::gemv_bf16(W.data(), s.N, s.K, x.data(), y1.data(), {1, {}});
      K::gemv_bf16(W.data(), s.N, s.K, x.data(), y2.data(), {2, {}});
      for (int n = 0; n < s.N; ++n) ASSERT_NEAR(y1[n], r[n], tol32(s.K, a[n])) << "row " << n;
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), sizeof(float) * s.N)) << "1 and 2 threads differ";
    }
  });
}

TEST(Gemv, BatchedBf16MatchesFp64) {
  // N: less than one panel, one and a part (16 or 32 columns), several with a tail; K: one k block and two.
  const std::vector<Shape> shapes = {{13, 31}, {37, 64}, {6, 515}, {21, 1030}, {70, 1030}};
  for_each_path([&](const std::string& path) {
    for (const auto& s : shapes)
      for (int B : {1, 2, 3, 7, 16, 17, 24, 64, 100}) {
        SCOPED_TRACE("N=" + std::to_string(s.N) + " K=" + std::to_string(s.K) + " B=" + std::to_string(B));
        const auto W = random_bf16(static_cast<std::size_t>(s.N) * s.K, 3 + s.N + s.K);
        const auto X = random_f32(static_cast<std::size_t>(B) * s.K, 5 + B);
        std::vector<float> y1(static_cast<std::size_t>(B) * s.N, NAN), y2(y1.size(), NAN);
        K::gemm_bf16(W.data(), s.N, s.K, X.data(), B, y1.data(), {1, {}});
        K::gemm_bf16(W.data(), s.N, s.K, X.data(), B, y2.data(), {2, {}});
        if (B > 1) {  // the tiles that ran, as gemm_bf16_last_tile reports them: the path's own (NF4's is AVX-512's)
          const std::string want = path == "avx512_bf16" ? "avx512" : path;
          EXPECT_EQ(K::gemm_bf16_last_tile(), path == "avx512_emulated" && B <= 16 ? "avx2" : want);
        }
        for (int b = 0; b < B; ++b) {
          const auto xd = widen(X.data() + static_cast<std::size_t>(b) * s.K, s.K);
          std::vector<double> r(s.N), a(s.N);
          ref::gemv_bf16_fp64(W.data(), s.N, s.K, xd.data(), r.data(), a.data());
          for (int n = 0; n < s.N; ++n)
            ASSERT_NEAR(y1[static_cast<std::size_t>(b) * s.N + n], r[n], tol32(s.K, a[n])) << "b " << b << " n " << n;
        }
        EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), sizeof(float) * y1.size())) << "1 and 2 threads differ";
      }
  });
}

TEST(Gemv, Nf4LevelsAreBitsandbytes) {
  const auto L = levels();
  for (int c = 0; c < 16; ++c) EXPECT_EQ(K::nf4_levels()[c], static_cast<float>(L[c])) << c;
}

TEST(Gemv, Nf4QuantisationPicksTheNearestLevel) {
  const auto L = levels();
  for (const Shape s : {Shape{1, 64}, Shape{13, 128}, Shape{37, 640}, Shape{5, 4096}}) {
    SCOPED_TRACE("N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
    auto W = random_bf16(static_cast<std::size_t>(s.N) * s.K, 11 + s.N, 0.02f);
    for (int i = 0; i < 64 && s.N > 1; ++i) W[64 + i] = 0;  // an all-zero block
    W[3] = K::to_bf16(-1.0f);                               // exact extremes and ties with the midpoints' neighbourhood
    W[5] = K::to_bf16(1.0f);
    const K::Nf4Matrix m1 = K::quantize_nf4(W.data(), s.N, s.K);
    const K::Nf4Matrix m2 = K::quantize_nf4(W.data(), s.N, s.K, 2);
    ASSERT_EQ(m1.packed.size(), static_cast<std::size_t>(s.N) * s.K / 2);
    ASSERT_EQ(m1.scales.size(), static_cast<std::size_t>(s.N) * s.K / 64);
    EXPECT_EQ(m1.bytes(), m1.packed.size() + 4 * m1.scales.size());
    EXPECT_EQ(m1.packed, m2.packed);
    EXPECT_EQ(m1.scales, m2.scales);
    const auto c = ref::check_nf4_quantization(W.data(), s.N, s.K, m1.packed.data(), m1.scales.data(), L);
    EXPECT_TRUE(c.ok()) << c.bad_codes << " bad codes, " << c.bad_scales << " bad scales; " << c.first_detail;
  }
  // The check catches a wrong code.
  auto W = random_bf16(128, 4, 0.02f);
  K::Nf4Matrix m = K::quantize_nf4(W.data(), 1, 128);
  m.packed[7] ^= 0x10;
  EXPECT_FALSE(ref::check_nf4_quantization(W.data(), 1, 128, m.packed.data(), m.scales.data(), L).ok());
  EXPECT_THROW(K::quantize_nf4(W.data(), 2, 63), std::invalid_argument);
}

TEST(Gemv, Nf4MatchesFp64) {
  const auto L = levels();
  const std::vector<Shape> shapes = {{1, 64}, {3, 128}, {13, 192}, {37, 640}, {130, 1024}, {5, 4096}};
  for_each_path([&](const std::string& p) {
    for (const auto& s : shapes) {
      SCOPED_TRACE("N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
      const auto W = random_bf16(static_cast<std::size_t>(s.N) * s.K, 21 + s.N * 3 + s.K, 0.05f);
      const K::Nf4Matrix m = K::quantize_nf4(W.data(), s.N, s.K);
      const auto x = random_f32(s.K, 77 + s.K);
      const auto xd = widen(x.data(), x.size());
      std::vector<double> r(s.N), a(s.N);
      ref::gemv_nf4_fp64(m.packed.data(), m.scales.data(), s.N, s.K, L, xd.data(), r.data(), a.data(), nf4_products(p));
      std::vector<float> y1(s.N, NAN), y2(s.N, NAN);
      K::gemv_nf4(m, x.data(), y1.data(), {1, {}});
      K::gemv_nf4(m, x.data(), y2.data(), {2, {}});
      for (int n = 0; n < s.N; ++n) ASSERT_NEAR(y1[n], r[n], tol32(s.K, a[n])) << "row " << n;
      EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), sizeof(float) * s.N)) << "1 and 2 threads differ";
    }
  });
}

// The two contracts are told apart where the checks judge an output (ch06.decode_4bit: the largest error over the
// largest output, within 1e-4): each path's kernel meets its own reference far inside that and misses the other's
// (the bf16 rounding of levels and activations, about 2^-9 of each product) by more, so a kernel that runs the wrong
// arithmetic for its CPU fails the check.
TEST(Gemv, Nf4ProductsContractsDiffer) {
  const auto L = levels();
  const int N = 256, Kd = 4096;
  const auto W = random_bf16(static_cast<std::size_t>(N) * Kd, 5, 0.05f);
  const K::Nf4Matrix m = K::quantize_nf4(W.data(), N, Kd);
  const auto x = random_f32(Kd, 6);
  const auto xd = widen(x.data(), x.size());
  std::vector<double> r32(N), rbf(N);
  ref::gemv_nf4_fp64(m.packed.data(), m.scales.data(), N, Kd, L, xd.data(), r32.data());
  ref::gemv_nf4_fp64(m.packed.data(), m.scales.data(), N, Kd, L, xd.data(), rbf.data(), nullptr,
                     ref::Nf4Products::bf16);
  // The largest error over the reference's largest magnitude (checks/ch06/ch06_decode.h: stack_output_error).
  const auto error = [&](const auto& y, const std::vector<double>& r) {
    double err = 0, scale = 0;
    for (int n = 0; n < N; ++n) {
      err = std::max(err, std::fabs(static_cast<double>(y[n]) - r[n]));
      scale = std::max(scale, std::fabs(r[n]));
    }
    return err / scale;
  };
  EXPECT_GT(error(r32, rbf), 1e-3) << "the bf16 and fp32 references agree within what a check allows";
  for_each_path([&](const std::string& p) {
    std::vector<float> y(N);
    K::gemv_nf4(m, x.data(), y.data(), {2, {}});
    const bool bf = nf4_products(p) == ref::Nf4Products::bf16;
    EXPECT_LT(error(y, bf ? rbf : r32), 1e-5);
    EXPECT_GT(error(y, bf ? r32 : rbf), 1e-3);
  });
  EXPECT_STREQ(ref::nf4_products_name(ref::Nf4Products::bf16), "bf16");
  EXPECT_STREQ(ref::nf4_products_name(ref::Nf4Products::fp32), "fp32");
}

TEST(Gemv, PlantedFaultsKeepResults) {
  const int N = 45, Kd = 320;
  const auto W = random_bf16(static_cast<std::size_t>(N) * Kd, 8, 0.05f);
  const auto x = random_f32(Kd, 9);
  const auto X = random_f32(5 * Kd, 10);
  const K::Nf4Matrix m = K::quantize_nf4(W.data(), N, Kd);
  K::GemvOptions twice{2, {}};
  twice.faults.read_weights_twice = true;
  K::GemvOptions first{2, {}};
  first.faults.dequant_whole_first = true;
  for_each_path([&](const std::string&) {
    std::vector<float> a(N), b(N), A(5 * N), Bm(5 * N);
    K::gemv_bf16(W.data(), N, Kd, x.data(), a.data(), {2, {}});
    K::gemv_bf16(W.data(), N, Kd, x.data(), b.data(), twice);
    EXPECT_EQ(a, b) << "bf16 read twice";
    K::gemm_bf16(W.data(), N, Kd, X.data(), 5, A.data(), {2, {}});
    K::gemm_bf16(W.data(), N, Kd, X.data(), 5, Bm.data(), twice);
    EXPECT_EQ(A, Bm) << "gemm read twice";
    K::gemv_nf4(m, x.data(), a.data(), {2, {}});
    K::gemv_nf4(m, x.data(), b.data(), twice);
    EXPECT_EQ(a, b) << "nf4 read twice";
    // Dequantised to bf16 first (then the bf16 GEMV on fp32 activations): each weight moves by at most half a bf16
    // step (2^-9 relative) from the fp32 reference's.
    const auto xd = widen(x.data(), x.size());
    std::vector<double> r(N), ab(N);
    ref::gemv_nf4_fp64(m.packed.data(), m.scales.data(), N, Kd, levels(), xd.data(), r.data(), ab.data());
    K::gemv_nf4(m, x.data(), b.data(), first);
    for (int n = 0; n < N; ++n) ASSERT_NEAR(b[n], r[n], std::ldexp(ab[n], -9) + tol32(Kd, ab[n])) << n;
    // Half the rows (a fault that does change the result: the rest come out 0).
    K::GemvOptions half{2, {}};
    half.faults.nf4_half_rows = true;
    K::gemv_nf4(m, x.data(), b.data(), half);
    for (int n = 0; n < N; ++n) EXPECT_EQ(b[n], n < N / 2 ? a[n] : 0.0f) << n;
  });
  // The dequantised matrix is level * scale rounded to bf16.
  const auto d = K::dequantize_nf4_bf16(m);
  for (std::size_t i = 0; i < d.size(); i += 97) {
    const int c = (i % 2) ? m.packed[i / 2] >> 4 : m.packed[i / 2] & 15;
    EXPECT_EQ(d[i], K::to_bf16(K::nf4_levels()[c] * m.scales[i / 64])) << i;
  }
}

TEST(Gemv, RejectsMalformedNf4) {
  K::Nf4Matrix m;
  m.N = 2;
  m.K = 64;
  m.packed.resize(10);
  m.scales.resize(2);
  float x[64] = {}, y[2];
  EXPECT_THROW(K::gemv_nf4(m, x, y), std::invalid_argument);
}

TEST(Gemv, DecodeWeightsAreDeterministic) {
  const auto a = K::decode_weights_bf16(33, 100, 5, 1), b = K::decode_weights_bf16(33, 100, 5, 2);
  const auto c = K::decode_weights_bf16(33, 100, 6, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double amax = 0, sum = 0;
  for (auto w : a) {
    amax = std::max(amax, std::fabs(ref::bf16_value(w)));
    sum += ref::bf16_value(w);
  }
  EXPECT_LE(amax, 0.1 * 1.01);
  EXPECT_GT(amax, 0.09);
  EXPECT_LT(std::fabs(sum / a.size()), 0.01);
}

TEST(Gemv, DecodeStackMatchesFp64) {
  const K::DecodeShape s = small_stack();
  const K::DecodeStack bf(s, "bf16", 7), nf(s, "nf4", 7), bf2(s, "bf16", 7);
  const ref::RefDecodeShape rs{s.hidden, s.kv_dim, s.ffn, s.layers, s.head_dim};
  const std::size_t per_layer = 2ull * s.hidden * s.hidden + 2ull * s.kv_dim * s.hidden + 3ull * s.ffn * s.hidden;
  EXPECT_EQ(bf.weight_bytes(), 2 * per_layer * s.layers);
  EXPECT_EQ(nf.weight_bytes(), per_layer * s.layers / 2 + per_layer * s.layers / 64 * 4);
  EXPECT_DOUBLE_EQ(bf.flops(), 2.0 * per_layer * s.layers);
  EXPECT_EQ(nf.bf16_weights(0).size(), 0u);
  ASSERT_EQ(bf.bf16_weights(1).size(), 7u);
  EXPECT_EQ(bf.nf4_weight(0, 0), nullptr);
  const int rows[7] = {s.hidden, s.kv_dim, s.kv_dim, s.hidden, s.ffn, s.ffn, s.hidden};
  const int cols[7] = {s.hidden, s.hidden, s.hidden, s.hidden, s.hidden, s.hidden, s.ffn};
  // Same seed, same weights; the nf4 stack quantises exactly those.
  for (int l = 0; l < s.layers; ++l)
    for (int m = 0; m < 7; ++m) {
      const std::size_t n = static_cast<std::size_t>(rows[m]) * cols[m];
      ASSERT_EQ(0, std::memcmp(bf.bf16_weights(l)[m], bf2.bf16_weights(l)[m], n * 2));
      const K::Nf4Matrix q = K::quantize_nf4(bf.bf16_weights(l)[m], rows[m], cols[m]);
      ASSERT_EQ(q.packed, nf.nf4_weight(l, m)->packed);
      ASSERT_EQ(q.scales, nf.nf4_weight(l, m)->scales);
    }
  const auto x = random_f32(s.hidden, 12);
  const auto xd = widen(x.data(), x.size());
  const auto L = levels();
  std::vector<double> rb(s.hidden);
  ref::decode_step_fp64(
      rs,
      [&](int l, int m, const double* in, double* out) {
        ref::gemv_bf16_fp64(bf.bf16_weights(l)[m], rows[m], cols[m], in, out);
      },
      xd.data(), rb.data());
  const auto nf4_reference = [&](ref::Nf4Products products) {
    std::vector<double> r(s.hidden);
    ref::decode_step_fp64(
        rs,
        [&](int l, int m, const double* in, double* out) {
          const K::Nf4Matrix* q = nf.nf4_weight(l, m);
          ref::gemv_nf4_fp64(q->packed.data(), q->scales.data(), rows[m], cols[m], L, in, out, nullptr, products);
        },
        xd.data(), r.data());
    return r;
  };
  const std::vector<double> rn32 = nf4_reference(ref::Nf4Products::fp32), rnbf = nf4_reference(ref::Nf4Products::bf16);
  double scale = 0;
  for (double v : rb) scale = std::max(scale, std::fabs(v));
  EXPECT_GT(scale, 0.5);  // activations stay O(1) through the layers
  EXPECT_LT(scale, 50.0);
  for_each_path([&](const std::string& p) {
    const std::vector<double>& rn = nf4_products(p) == ref::Nf4Products::bf16 ? rnbf : rn32;
    for (int threads : {1, 2}) {
      std::vector<float> yb(s.hidden), yn(s.hidden);
      bf.step(x.data(), yb.data(), {threads, {}});
      nf.step(x.data(), yn.data(), {threads, {}});
      for (int i = 0; i < s.hidden; ++i) {
        ASSERT_NEAR(yb[i], rb[i], 2e-5 * scale) << "bf16 stack, element " << i;
        ASSERT_NEAR(yn[i], rn[i], 2e-5 * scale) << "nf4 stack, element " << i;
      }
    }
  });
  EXPECT_THROW(K::DecodeStack(s, "int8", 1), std::invalid_argument);
}

// A step checked layer by layer (ref::decode_step_error_by_layer, what the ch06 checks read): each layer's input as
// the stack ran it is kept, every layer meets the fp64 step on it, and a wrong layer or a judged output that is not
// the step's own is seen.
TEST(Gemv, DecodeStackIsCheckedLayerByLayer) {
  K::DecodeShape s = small_stack();
  s.layers = 3;
  const K::DecodeStack nf(s, "nf4", 9);
  const ref::RefDecodeShape rs{s.hidden, s.kv_dim, s.ffn, s.layers, s.head_dim};
  const int rows[7] = {s.hidden, s.kv_dim, s.kv_dim, s.hidden, s.ffn, s.ffn, s.hidden};
  const int cols[7] = {s.hidden, s.hidden, s.hidden, s.hidden, s.hidden, s.hidden, s.ffn};
  const auto L = levels();
  const auto x = random_f32(s.hidden, 13);
  for_each_path([&](const std::string& p) {
    const auto mv = [&](int l, int m, const double* in, double* out) {
      const K::Nf4Matrix* q = nf.nf4_weight(l, m);
      ref::gemv_nf4_fp64(q->packed.data(), q->scales.data(), rows[m], cols[m], L, in, out, nullptr, nf4_products(p));
    };
    std::vector<float> inputs(static_cast<std::size_t>(s.hidden) * s.layers, NAN), out(s.hidden), y(s.hidden);
    nf.step(x.data(), y.data(), {2, {}});
    nf.step(x.data(), out.data(), {2, {}}, inputs.data());
    EXPECT_EQ(0, std::memcmp(inputs.data(), x.data(), sizeof(float) * s.hidden)) << "layer 0's input is x";
    EXPECT_LT(ref::decode_step_error_by_layer(rs, mv, x.data(), inputs.data(), out.data(), y.data()), 1e-5);
    auto bad = inputs;
    bad[static_cast<std::size_t>(s.hidden) + 3] *= 1.01f;  // layer 0's output (layer 1's input) off by 1% in one place
    EXPECT_GT(ref::decode_step_error_by_layer(rs, mv, x.data(), bad.data(), out.data(), y.data()),
              1e-4);        // the checks' bound
    auto rounded = inputs;  // layer 0 run on x rounded to bf16 (the rest as computed)
    for (int i = 0; i < s.hidden; ++i)
      rounded[static_cast<std::size_t>(i)] = K::from_bf16(K::to_bf16(x[static_cast<std::size_t>(i)]));
    EXPECT_GT(ref::decode_step_error_by_layer(rs, mv, x.data(), rounded.data(), out.data(), y.data()), 1e-4);
    auto other = y;
    other[5] += 0.01f;  // a judged output that is not the step's
    EXPECT_GT(ref::decode_step_error_by_layer(rs, mv, x.data(), inputs.data(), out.data(), other.data()), 1e-4);
    // q and k, which the one-token step reads nowhere else: held to the fp64 GEMVs of each layer's input; a q left
    // unprojected (stack_q_skipped) changes no output, only them.
    std::vector<float> qk(static_cast<std::size_t>(s.hidden + s.kv_dim) * s.layers, NAN);
    nf.step(x.data(), out.data(), {2, {}}, inputs.data(), qk.data());
    EXPECT_LT(ref::decode_step_error_by_layer(rs, mv, x.data(), inputs.data(), out.data(), y.data(), qk.data()), 1e-5);
    K::GemvFaults f;
    ASSERT_TRUE(K::parse_gemv_fault("stack_q_skipped", &f));
    const K::DecodeStack skipped(s, "nf4", 9, f);
    std::vector<float> y_skipped(s.hidden);
    skipped.step(x.data(), y_skipped.data(), {2, {}}, inputs.data(), qk.data());
    EXPECT_EQ(0, std::memcmp(y_skipped.data(), out.data(), sizeof(float) * s.hidden)) << "the output does not read q";
    EXPECT_GT(
        ref::decode_step_error_by_layer(rs, mv, x.data(), inputs.data(), y_skipped.data(), y_skipped.data(), qk.data()),
        1e-4);
  });
}

TEST(Gemv, LibTorchCompetitorMatchesFp64) {
  if (!ref::torch_available()) GTEST_SKIP() << "not built with LibTorch";
  ref::torch_set_threads(2);
  const int N = 24, Kd = 200, B = 3;
  const auto W = random_bf16(static_cast<std::size_t>(N) * Kd, 31, 0.05f);
  const auto X = random_f32(static_cast<std::size_t>(B) * Kd, 32);
  std::vector<float> Y(static_cast<std::size_t>(B) * N);
  ref::torch_matmul_bf16(W.data(), N, Kd, X.data(), B, Y.data());
  for (int b = 0; b < B; ++b) {
    const auto xd = widen(X.data() + static_cast<std::size_t>(b) * Kd, Kd);
    std::vector<double> r(N), a(N);
    ref::gemv_bf16_fp64(W.data(), N, Kd, xd.data(), r.data(), a.data());
    // bf16 activations and a bf16 result: a few bf16 steps of sum |w x|.
    for (int n = 0; n < N; ++n) ASSERT_NEAR(Y[static_cast<std::size_t>(b) * N + n], r[n], std::ldexp(a[n], -6)) << n;
  }
  const K::DecodeShape s = small_stack();
  const K::DecodeStack bf(s, "bf16", 7);
  const int rows[7] = {s.hidden, s.kv_dim, s.kv_dim, s.hidden, s.ffn, s.ffn, s.hidden};
  const int cols[7] = {s.hidden, s.hidden, s.hidden, s.hidden, s.hidden, s.hidden, s.ffn};
  std::vector<ref::Bf16Mat> mats;
  for (int l = 0; l < s.layers; ++l)
    for (int m = 0; m < 7; ++m) mats.push_back({bf.bf16_weights(l)[m], rows[m], cols[m]});
  ref::TorchDecodeChain chain(mats, s.head_dim);
  EXPECT_EQ(chain.hidden(), s.hidden);
  const auto x = random_f32(s.hidden, 12);
  const auto xd = widen(x.data(), x.size());
  std::vector<double> r(s.hidden);
  ref::decode_step_fp64(
      {s.hidden, s.kv_dim, s.ffn, s.layers, s.head_dim},
      [&](int l, int m, const double* in, double* out) {
        ref::gemv_bf16_fp64(bf.bf16_weights(l)[m], rows[m], cols[m], in, out);
      },
      xd.data(), r.data());
  std::vector<float> y(s.hidden);
  chain.step(x.data(), y.data());
  double scale = 0, err = 0;
  for (int i = 0; i < s.hidden; ++i) {
    scale = std::max(scale, std::fabs(r[i]));
    err = std::max(err, std::fabs(y[i] - r[i]));
  }
  EXPECT_LT(err, 0.05 * scale) << "a bf16 chain strays by a few percent at most";
}

TEST(Gemv, ThreadPoolIsRaceFreeAcrossManyCalls) {
  // Back-to-back calls with 1, 2 and 3 threads (more than this machine's cores): every result bit-identical.
  const int N = 40, Kd = 192;
  const auto W = random_bf16(static_cast<std::size_t>(N) * Kd, 41, 0.05f);
  const K::Nf4Matrix m = K::quantize_nf4(W.data(), N, Kd);
  const auto x = random_f32(Kd, 42);
  const auto X = random_f32(20 * Kd, 43);
  std::vector<float> y0(N), n0(N), g0(20 * N), y(N), g(20 * N);
  K::gemv_bf16(W.data(), N, Kd, x.data(), y0.data(), {1, {}});
  K::gemv_nf4(m, x.data(), n0.data(), {1, {}});
  K::gemm_bf16(W.data(), N, Kd, X.data(), 20, g0.data(), {1, {}});
  for (int i = 0; i < 600; ++i) {
    const int t = 1 + i % 3;
    K::gemv_bf16(W.data(), N, Kd, x.data(), y.data(), {t, {}});
    ASSERT_EQ(y, y0) << "bf16, call " << i;
    K::gemv_nf4(m, x.data(), y.data(), {t, {}});
    ASSERT_EQ(y, n0) << "nf4, call " << i;
    if (i % 10 == 0) {
      K::gemm_bf16(W.data(), N, Kd, X.data(), 20, g.data(), {t, {}});
      ASSERT_EQ(g, g0) << "gemm, call " << i;
    }
  }
}

// The bf16 matmul (kernels/cpu/matmul_bf16.cpp) on every engine this process can run: the fp32 FMA fallback, the
// AMX kernel's packing, blocking and tile schedule with each tile instruction done in C (any CPU), and AMX itself
// where the CPU has it. Shapes cross every edge: partial tiles in M, N and K, odd K, and the 256 x 256 x 512 cache
// blocks. The answer: fp64 sums of the bf16 values (the answer key's bf16_value), within fp32 accumulation's bound.
TEST(Matmul, Bf16MatchesFp64OnEveryEngine) {
  struct MNK {
    int M, N, K;
  };
  const MNK shapes[] = {{1, 1, 1},     {17, 33, 70}, {32, 32, 32},  {40, 300, 1030},
                        {300, 20, 41}, {5, 7, 3},    {33, 40, 4130}};  // 4130: past one K slice (4096)
  int ran = 0;
  for (const char* engine : {"fp32_fma", "amx_emulated", "amx_bf16", "avx512_bf16"}) {
    if (!K::matmul_bf16_force(engine)) continue;
    SCOPED_TRACE(std::string("engine ") + engine);
    ASSERT_EQ(K::matmul_bf16_engine(), engine);
    ++ran;
    for (const MNK& s : shapes) {
      SCOPED_TRACE("M=" + std::to_string(s.M) + " N=" + std::to_string(s.N) + " K=" + std::to_string(s.K));
      const auto A = random_bf16(static_cast<std::size_t>(s.M) * s.K, 11u + s.M);
      const auto W = random_bf16(static_cast<std::size_t>(s.N) * s.K, 29u + s.N);
      std::vector<float> C1(static_cast<std::size_t>(s.M) * s.N, -1.0f), C2(C1.size(), -2.0f);
      K::matmul_bf16(A.data(), s.M, s.K, W.data(), s.N, C1.data(), {1, {}});
      K::matmul_bf16(A.data(), s.M, s.K, W.data(), s.N, C2.data(), {2, {}});
      EXPECT_EQ(0, std::memcmp(C1.data(), C2.data(), C1.size() * sizeof(float))) << "threads change the result";
      int bad = 0;
      for (int m = 0; m < s.M; ++m)
        for (int n = 0; n < s.N; ++n) {
          double want = 0, absdot = 0;
          for (int k = 0; k < s.K; ++k) {
            const double p = ref::bf16_value(A[static_cast<std::size_t>(m) * s.K + k]) *
                             ref::bf16_value(W[static_cast<std::size_t>(n) * s.K + k]);
            want += p;
            absdot += std::fabs(p);
          }
          const double got = C1[static_cast<std::size_t>(m) * s.N + n];
          if (!(std::fabs(got - want) <= tol32(s.K, absdot)) && ++bad <= 3)
            ADD_FAILURE() << "C[" << m << "][" << n << "] = " << got << ", fp64 " << want;
        }
    }
  }
  K::matmul_bf16_force("");
  EXPECT_GE(ran, 2);  // the fallback and the emulated AMX kernel run everywhere
  EXPECT_FALSE(K::matmul_bf16_force("amx_int8"));
}

// The planted fault (the last 32 of K never multiplied) is seen by the same comparison.
TEST(Matmul, DroppedKTailIsSeen) {
  ASSERT_TRUE(K::matmul_bf16_force("amx_emulated"));
  const int M = 20, N = 40, Kd = 96;
  const auto A = random_bf16(static_cast<std::size_t>(M) * Kd, 5), W = random_bf16(static_cast<std::size_t>(N) * Kd, 6);
  std::vector<float> good(static_cast<std::size_t>(M) * N), bad(good.size());
  K::GemvOptions fault{1, {}};
  ASSERT_TRUE(K::parse_gemv_fault("matmul_drop_last_k", &fault.faults));
  K::matmul_bf16(A.data(), M, Kd, W.data(), N, good.data(), {1, {}});
  K::matmul_bf16(A.data(), M, Kd, W.data(), N, bad.data(), fault);
  K::matmul_bf16_force("");
  double worst = 0;
  for (std::size_t i = 0; i < good.size(); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(good[i] - bad[i])));
  EXPECT_GT(worst, 1.0);  // 32 products of unit-variance values are missing from every element
}

// A property test: every version (v1-v3) in fp32 and fp64 against the answer key's fp64 attention over random shapes,
// drawn until they reach every tail: T mod 16 (v3's partial query groups) and D mod 24 (the 6-, 8- and 12-wide
// micro-kernel tails) take every value. Seeded ($CLAIMCHECK_PROPERTY_SEED, else a fixed seed) and logged.
TEST(Attention, RandomShapesReachEveryTailAndMatchFp64) {
  const char* env = std::getenv("CLAIMCHECK_PROPERTY_SEED");
  const unsigned seed = env && *env ? static_cast<unsigned>(std::strtoul(env, nullptr, 10)) : 20261202u;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dt(1, 200), dd(1, 96), dh(1, 2);
  std::set<int> t_tails, d_tails;
  int shapes = 0;
  while ((t_tails.size() < 16 || d_tails.size() < 24) && shapes < 400) {
    const int T = dt(rng), D = dd(rng), H = dh(rng);
    ++shapes;
    t_tails.insert(T % 16);
    d_tails.insert(D % 24);
    SCOPED_TRACE("seed " + std::to_string(seed) + " shape " + std::to_string(shapes) + ": H=" + std::to_string(H) +
                 " T=" + std::to_string(T) + " D=" + std::to_string(D));
    const ref::AttnShape rs{1, H, T, D};
    const K::AttentionShape ks{1, H, T, D};
    const auto q = random_f32(rs.elements(), rng()), k = random_f32(rs.elements(), rng()),
               v = random_f32(rs.elements(), rng());
    const auto q64 = widen(q.data(), q.size()), k64 = widen(k.data(), k.size()), v64 = widen(v.data(), v.size());
    std::vector<double> want(rs.elements());
    ref::attention_fp64(q64.data(), k64.data(), v64.data(), want.data(), rs);
    for (int version : K::kAttentionVersions) {
      std::vector<float> got(rs.elements());
      K::attention_forward(version, q.data(), k.data(), v.data(), got.data(), ks, {1, {}});
      std::vector<double> got64(rs.elements());
      K::attention_forward(version, q64.data(), k64.data(), v64.data(), got64.data(), ks, {1, {}});
      double worst = 0, worst64 = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        worst = std::max(worst, std::fabs(got[i] - want[i]));
        worst64 = std::max(worst64, std::fabs(got64[i] - want[i]));
      }
      EXPECT_LT(worst, 2e-5) << K::attention_version_name(version) << " fp32";
      EXPECT_LT(worst64, 1e-12) << K::attention_version_name(version) << " fp64";
    }
  }
  std::printf("attention property test: seed %u, %d random shapes, T mod 16 and D mod 24 all reached: %s\n", seed,
              shapes, t_tails.size() == 16 && d_tails.size() == 24 ? "yes" : "no");
  ::testing::Test::RecordProperty("seed", static_cast<int>(seed));
  ::testing::Test::RecordProperty("shapes", shapes);
  EXPECT_EQ(t_tails.size(), 16u);
  EXPECT_EQ(d_tails.size(), 24u);
}

// Attention v3's register tile on every path this CPU can run (kernels/cpu/attention_v3.inc: the AVX2 tile, the
// AVX-512 tile where the CPU has it, and the AVX-512 tile's source emulated on two ymm per register, so that its
// 12-row, 16-lane indexing runs on every AVX2 machine) against the answer key's fp64 attention: shapes with
// partial query groups, key tiles and micro-kernel tails in both dimensions (D not a multiple of 6 or 12, D not a
// multiple of 8), the planted faults seen.
TEST(AttentionV3, EveryPathMatchesFp64) {
  struct Case {
    int T, D;
  };
  const Case cases[] = {{1, 64}, {17, 64}, {77, 64}, {200, 64}, {130, 40}, {50, 13}, {300, 128}};
  int ran = 0;
  for (const char* p : {"portable", "avx2", "avx512", "avx512_emulated"}) {
    if (!K::attention_v3_force_path(p)) continue;
    SCOPED_TRACE(std::string("path ") + p);
    ASSERT_EQ(K::attention_v3_path(), p);
    ++ran;
    for (const Case& c : cases) {
      SCOPED_TRACE("T=" + std::to_string(c.T) + " D=" + std::to_string(c.D));
      const ref::AttnShape rs{1, 2, c.T, c.D};
      const K::AttentionShape ks{1, 2, c.T, c.D};
      const auto q = random_f32(rs.elements(), 1), k = random_f32(rs.elements(), 2), v = random_f32(rs.elements(), 3);
      std::vector<double> want(rs.elements());
      const auto q64 = widen(q.data(), q.size()), k64 = widen(k.data(), k.size()), v64 = widen(v.data(), v.size());
      ref::attention_fp64(q64.data(), k64.data(), v64.data(), want.data(), rs);
      std::vector<float> got(rs.elements());
      K::attention_forward(K::kAttentionRegister, q.data(), k.data(), v.data(), got.data(), ks, {2, {}});
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
      EXPECT_LT(worst, 2e-5);  // fp32 dot products of D unit-variance terms and a softmax: ~1e-6 in practice
      // (no_max_subtraction changes nothing at unit-variance logits: ch02's large-logit cases see it.)
      for (const char* fault : {"mask_off_by_one", "scale_by_d"}) {
        if (c.T < 2) continue;  // one key: its weight is 1 whatever the mask or the scale
        K::AttentionOptions o{2, {}};
        ASSERT_TRUE(K::parse_attention_fault(fault, &o.faults));
        std::vector<float> bad(rs.elements());
        K::attention_forward(K::kAttentionRegister, q.data(), k.data(), v.data(), bad.data(), ks, o);
        double off = 0;
        for (std::size_t i = 0; i < bad.size(); ++i) off = std::max(off, std::fabs(bad[i] - want[i]));
        EXPECT_GT(off, 1e-3) << fault;
      }
    }
  }
  K::attention_v3_force_path("");
  EXPECT_GE(ran, 1);
  EXPECT_FALSE(K::attention_v3_force_path("sse9"));
}

// The lists the claims iterate (ch06.decode_4bit's paths, ch06.prefill_ms's engines) name what this CPU runs: the
// detected path and engine among them, each one forceable.
TEST(Gemv, PathsAndEnginesHereAreTheForceableOnes) {
  const auto paths = K::gemv_paths_here();
  EXPECT_NE(std::find(paths.begin(), paths.end(), K::gemv_detected_path()), paths.end());
  for (const auto& p : paths) EXPECT_TRUE(K::gemv_force_path(p)) << p;
  K::gemv_force_path("");
  const auto engines = K::matmul_bf16_engines_here();
  EXPECT_NE(std::find(engines.begin(), engines.end(), K::matmul_bf16_engine()), engines.end());
  for (const auto& e : engines) EXPECT_TRUE(K::matmul_bf16_force(e)) << e;
  K::matmul_bf16_force("");
}
