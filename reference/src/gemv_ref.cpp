// Reference decode arithmetic in fp64: plain loops, no SIMD, nothing shared with kernels/.
#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

namespace claimcheck::ref {

namespace {
double bf16_by_definition(std::uint16_t bits) {
  // sign, 8-bit exponent, 7-bit fraction, decoded by the definition (not by reinterpreting memory).
  const int sign = bits >> 15, exp = (bits >> 7) & 0xff, frac = bits & 0x7f;
  double v;
  if (exp == 0xff)
    v = frac ? std::nan("") : INFINITY;
  else if (exp == 0)
    v = std::ldexp(static_cast<double>(frac), -126 - 7);  // subnormal
  else
    v = std::ldexp(static_cast<double>(128 + frac), exp - 127 - 7);  // 1.frac * 2^(exp-127)
  return sign ? -v : v;
}
}  // namespace

// Every one of the 65,536 patterns decoded once by the definition, then looked up: the fp64 references read each
// weight through here, and ldexp per weight was a quarter of a decode claim's time.
double bf16_value(std::uint16_t bits) {
  static const std::vector<double> table = [] {
    std::vector<double> t(1U << 16);
    for (std::uint32_t b = 0; b < t.size(); ++b) t[b] = bf16_by_definition(static_cast<std::uint16_t>(b));
    return t;
  }();
  return table[bits];
}

std::uint16_t bf16_nearest(float x) {
  if (!std::isfinite(x)) throw std::invalid_argument("bf16_nearest: not a finite number");
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const auto below = static_cast<std::uint16_t>(u >> 16);  // the pattern toward zero (same sign)
  const auto above = static_cast<std::uint16_t>(below + 1);
  const double dx = x, d0 = std::fabs(bf16_value(below) - dx), d1 = std::fabs(bf16_value(above) - dx);
  if (d0 != d1) return d0 < d1 ? below : above;
  return (below & 1) ? above : below;
}

void gemv_bf16_fp64(const std::uint16_t* W, int N, int K, const double* x, double* y, double* absdot) {
  for (int n = 0; n < N; ++n) {
    double s = 0, a = 0;
    for (int k = 0; k < K; ++k) {
      const double p = bf16_value(W[static_cast<long>(n) * K + k]) * x[k];
      s += p;
      a += std::fabs(p);
    }
    y[n] = s;
    if (absdot) absdot[n] = a;
  }
}

double gemm_bf16_sampled_error(const std::uint16_t* W, int N, int K, const float* X, int B, const float* Y,
                               int samples) {
  double worst = 0;
  std::vector<double> xd(static_cast<std::size_t>(K));
  const int s = std::max(samples, 2);
  const auto spread = [s](int i, int n) {
    return n <= s ? i : static_cast<int>(static_cast<long>(i) * (n - 1) / (s - 1));
  };
  for (int bi = 0; bi < std::min(B, s); ++bi) {
    const int b = spread(bi, B);
    for (int k = 0; k < K; ++k) xd[static_cast<std::size_t>(k)] = X[static_cast<std::size_t>(b) * K + k];
    for (int ni = 0; ni < std::min(N, s); ++ni) {
      const int n = spread(ni, N);
      double y = 0, absdot = 0;
      gemv_bf16_fp64(W + static_cast<std::size_t>(n) * K, 1, K, xd.data(), &y, &absdot);
      worst = worse(worst, std::fabs(Y[static_cast<std::size_t>(b) * N + n] - y) / std::max(absdot, 1e-30));
    }
  }
  return worst;
}

double matmul_sampled_error(const float* A, const float* B, int n, const float* C, bool bf16_inputs) {
  const auto in = [&](float v) { return bf16_inputs ? bf16_value(bf16_nearest(v)) : static_cast<double>(v); };
  const auto spread = [](int i, int m) { return m <= 8 ? i : static_cast<int>(static_cast<long>(i) * (m - 1) / 7); };
  double worst = 0;
  for (int ri = 0; ri < std::min(n, 8); ++ri)
    for (int ci = 0; ci < std::min(n, 8); ++ci) {
      const std::size_t r = static_cast<std::size_t>(spread(ri, n)), c = static_cast<std::size_t>(spread(ci, n));
      double ref = 0, absdot = 0;
      for (std::size_t k = 0; k < static_cast<std::size_t>(n); ++k) {
        const double p = in(A[r * n + k]) * in(B[k * n + c]);
        ref += p, absdot += std::fabs(p);
      }
      worst = worse(worst, std::fabs(C[r * n + c] - ref) / std::max(absdot, 1e-30));
    }
  return worst;
}

double gemv_nf4_sampled_error(const std::uint8_t* packed, const float* scales, int N, int K,
                              const std::vector<double>& levels, const float* x, const float* y, Nf4Products products) {
  const std::vector<double> xd(x, x + K);
  double worst = 0;
  for (int r = 0; r < std::min(N, 64); ++r) {
    const int n = N <= 64 ? r : static_cast<int>(static_cast<long>(r) * (N - 1) / 63);
    const std::size_t at = static_cast<std::size_t>(n) * K;  // K a multiple of 64: whole bytes, whole blocks
    double ref = 0, absdot = 0;
    gemv_nf4_fp64(packed + at / 2, scales + at / 64, 1, K, levels, xd.data(), &ref, &absdot, products);
    worst = worse(worst, std::fabs(y[n] - ref) / std::max(absdot, 1e-30));
  }
  return worst;
}

std::vector<double> load_nf4_levels(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const std::exception& e) {
    throw std::runtime_error(file.string() + ": not JSON: " + e.what());
  }
  const auto bad = [&](const std::string& what) {
    return std::runtime_error(file.string() + ": field 'levels': " + what);
  };
  if (!j.is_object() || !j.contains("levels")) throw bad("missing");
  const auto& l = j.at("levels");
  if (!l.is_array() || l.size() != 16) throw bad("expected 16 numbers");
  std::vector<double> out;
  for (const auto& v : l) {
    if (!v.is_number()) throw bad("expected 16 numbers");
    out.push_back(v.get<double>());
  }
  for (int i = 1; i < 16; ++i)
    if (!(out[i] > out[i - 1])) throw bad("not strictly increasing");
  if (out.front() != -1.0 || out.back() != 1.0) throw bad("must run from -1 to 1");
  bool zero = false;
  for (double v : out) zero = zero || v == 0.0;
  if (!zero) throw bad("0 must be a level");
  return out;
}

namespace {
int nibble(const std::uint8_t* packed, long i) { return (i % 2) ? packed[i / 2] >> 4 : packed[i / 2] & 0x0f; }
}  // namespace

const char* nf4_products_name(Nf4Products p) { return p == Nf4Products::bf16 ? "bf16" : "fp32"; }

long nf4_dequant_mismatches(const std::uint8_t* packed, const float* scales, int K, const std::vector<double>& levels,
                            const std::uint16_t* out, long row0, long rows) {
  if (K % 64 != 0 || levels.size() != 16) throw std::invalid_argument("nf4_dequant_mismatches: K % 64 or levels");
  long bad = 0;
  for (long i = row0 * K; i < (row0 + rows) * K; ++i) {
    const float want = static_cast<float>(levels[static_cast<std::size_t>(nibble(packed, i))]) * scales[i / 64];
    bad += out[i - row0 * K] != bf16_nearest(want);
  }
  return bad;
}

void gemv_nf4_fp64(const std::uint8_t* packed, const float* scales, int N, int K, const std::vector<double>& levels,
                   const double* x, double* y, double* absdot, Nf4Products products) {
  if (K % 64 != 0 || levels.size() != 16) throw std::invalid_argument("gemv_nf4_fp64: K % 64 or levels");
  // The factors as the products take them: each rounded to bf16 (through fp32, as a kernel's fp32 activations are)
  // where the products are bf16's.
  const bool bf = products == Nf4Products::bf16;
  const auto as_bf16 = [](double v) { return bf16_value(bf16_nearest(static_cast<float>(v))); };
  std::vector<double> level(levels), xk(x, x + K);
  if (bf) {
    for (auto& v : level) v = as_bf16(v);
    for (auto& v : xk) v = as_bf16(v);
  }
  for (int n = 0; n < N; ++n) {
    double s = 0, a = 0;
    for (int k = 0; k < K; ++k) {
      const long i = static_cast<long>(n) * K + k;
      const double p = level[static_cast<std::size_t>(nibble(packed, i))] * xk[static_cast<std::size_t>(k)] *
                       static_cast<double>(scales[i / 64]);
      s += p;
      a += std::fabs(p);
    }
    y[n] = s;
    if (absdot) absdot[n] = a;
  }
}

Nf4QuantCheck check_nf4_quantization(const std::uint16_t* W, int N, int K, const std::uint8_t* packed,
                                     const float* scales, const std::vector<double>& levels, double tie_tol) {
  Nf4QuantCheck c;
  const long blocks = static_cast<long>(N) * K / 64;
  for (long b = 0; b < blocks; ++b) {
    double amax = 0;
    for (int i = 0; i < 64; ++i) amax = std::fmax(amax, std::fabs(bf16_value(W[b * 64 + i])));
    if (static_cast<double>(scales[b]) != amax) {
      if (c.first_bad < 0) {
        c.first_bad = b;
        c.first_detail = "block " + std::to_string(b) + ": scale " + std::to_string(scales[b]) + " != absmax " +
                         std::to_string(amax);
      }
      ++c.bad_scales;
      continue;
    }
    for (int i = 0; i < 64; ++i) {
      const long e = b * 64 + i;
      const double u = amax > 0 ? bf16_value(W[e]) / amax : 0.0;
      double best = INFINITY;
      for (double l : levels) best = std::fmin(best, std::fabs(u - l));
      const int code = nibble(packed, e);
      if (std::fabs(u - levels[code]) > best + tie_tol) {
        if (c.first_bad < 0) {
          c.first_bad = e;
          c.first_detail = "element " + std::to_string(e) + ": w/absmax " + std::to_string(u) + " coded " +
                           std::to_string(code) + " (" + std::to_string(levels[code]) + "), nearest is " +
                           std::to_string(best) + " away";
        }
        ++c.bad_codes;
      }
    }
  }
  return c;
}

void decode_step_fp64(const RefDecodeShape& s, const RefMatvec& mv, const double* x, double* out) {
  const int H = s.hidden, KV = s.kv_dim, F = s.ffn;
  const int hd = s.head_dim < KV ? s.head_dim : KV;
  if (H <= 0 || KV <= 0 || F <= 0 || hd <= 0 || H % KV || KV % hd)
    throw std::invalid_argument("decode_step_fp64: shape");
  const int group = H / KV;
  std::vector<double> h(x, x + H), q(H), k(KV), v(KV), a(H), t(H), g(F), u(F);
  for (int l = 0; l < s.layers; ++l) {
    mv(l, 0, h.data(), q.data());
    mv(l, 1, h.data(), k.data());
    mv(l, 2, h.data(), v.data());
    for (int i = 0; i < H; ++i) {
      const int head = i / hd, d = i % hd;  // query head `head` reads kv head head / group
      a[i] = v[(head / group) * hd + d];
    }
    mv(l, 3, a.data(), t.data());
    for (int i = 0; i < H; ++i) h[i] += t[i];
    mv(l, 4, h.data(), g.data());
    mv(l, 5, h.data(), u.data());
    for (int i = 0; i < F; ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    mv(l, 6, g.data(), t.data());
    for (int i = 0; i < H; ++i) h[i] += t[i];
  }
  for (int i = 0; i < H; ++i) out[i] = h[i];
}

double decode_step_error_by_layer(const RefDecodeShape& s, const RefMatvec& mv, const float* x, const float* inputs,
                                  const float* out, const float* y, const float* qk) {
  const std::size_t H = static_cast<std::size_t>(s.hidden), KV = static_cast<std::size_t>(s.kv_dim);
  // The worst element's error over the largest magnitude of r (n elements; H by default).
  const auto error = [&](const float* got, const double* r, std::size_t n = 0) {
    n = n ? n : H;
    double err = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
      err = worse(err, std::fabs(static_cast<double>(got[i]) - r[i]));
      scale = std::max(scale, std::fabs(r[i]));
    }
    return scale > 0 ? err / scale : INFINITY;
  };
  const std::vector<double> whole(out, out + H), given(x, x + H);
  double worst = worse(error(y, whole.data()), error(inputs, given.data()));
  RefDecodeShape one = s;
  one.layers = 1;
  std::vector<double> r(H);
  for (int l = 0; l < s.layers; ++l) {
    const float* in = inputs + static_cast<std::size_t>(l) * H;
    const std::vector<double> xd(in, in + H);
    decode_step_fp64(
        one, [&](int, int m, const double* a, double* b) { mv(l, m, a, b); }, xd.data(), r.data());
    worst = worse(worst, error(l + 1 < s.layers ? in + H : out, r.data()));
    if (qk) {
      std::vector<double> q(H), k(KV);
      mv(l, 0, xd.data(), q.data());
      mv(l, 1, xd.data(), k.data());
      const float* got = qk + static_cast<std::size_t>(l) * (H + KV);
      worst = worse(worst, worse(error(got, q.data(), H), error(got + H, k.data(), KV)));
    }
  }
  return worst;
}

}  // namespace claimcheck::ref
