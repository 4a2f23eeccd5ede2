#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "claimcheck/ref/attention.h"
#include "claimcheck/ref/stats.h"

namespace claimcheck::ref {

namespace {
// Row i of one (batch, head): softmax over keys 0 .. n-1 of q_i k_j / sqrt(D), times V, in fp64 (w: T scratch).
template <class T>
void attention_row(const T* Q, const T* K, const T* V, double* O, int i, int n, int D, std::vector<double>& w) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  double mx = -std::numeric_limits<double>::infinity();
  for (int j = 0; j < n; ++j) {
    double dot = 0;
    for (int d = 0; d < D; ++d) dot += static_cast<double>(Q[i * D + d]) * static_cast<double>(K[j * D + d]);
    w[j] = dot * scale;
    mx = std::max(mx, w[j]);
  }
  double z = 0;
  for (int j = 0; j < n; ++j) z += (w[j] = std::exp(w[j] - mx));
  for (int d = 0; d < D; ++d) {
    double acc = 0;
    for (int j = 0; j < n; ++j) acc += w[j] * static_cast<double>(V[j * D + d]);
    O[d] = acc / z;
  }
}
}  // namespace

void attention_fp64(const double* q, const double* k, const double* v, double* out, const AttnShape& s, bool causal) {
  const long stride = static_cast<long>(s.T) * s.D;
  std::vector<double> w(s.T);
  for (long bh = 0; bh < static_cast<long>(s.B) * s.H; ++bh)
    for (int i = 0; i < s.T; ++i)
      attention_row(q + bh * stride, k + bh * stride, v + bh * stride, out + bh * stride + static_cast<long>(i) * s.D,
                    i, causal ? i + 1 : s.T, s.D, w);
}

double attention_sampled_error(const float* q, const float* k, const float* v, const float* out, const AttnShape& s) {
  const long stride = static_cast<long>(s.T) * s.D, heads = static_cast<long>(s.B) * s.H;
  std::vector<double> w(s.T), o(s.D);
  double worst = 0;
  for (int r = 0; r < 32; ++r) {  // rows spread over the heads and the sequence, the first and the last among them
    const long bh = r % heads;
    const int i = static_cast<int>(static_cast<long>(r) * (s.T - 1) / 31);
    attention_row(q + bh * stride, k + bh * stride, v + bh * stride, o.data(), i, i + 1, s.D, w);
    for (int d = 0; d < s.D; ++d)
      worst = worse(worst, std::fabs(static_cast<double>(out[bh * stride + static_cast<long>(i) * s.D + d]) - o[d]));
  }
  return worst;
}

}  // namespace claimcheck::ref
