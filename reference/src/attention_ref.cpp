#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "claimcheck/ref/attention.h"

namespace claimcheck::ref {

void attention_fp64(const double* q, const double* k, const double* v, double* out, const AttnShape& s, bool causal) {
  const long stride = static_cast<long>(s.T) * s.D;
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.D));
  std::vector<double> w(s.T);
  for (long bh = 0; bh < static_cast<long>(s.B) * s.H; ++bh) {
    const double *Q = q + bh * stride, *K = k + bh * stride, *V = v + bh * stride;
    double* O = out + bh * stride;
    for (int i = 0; i < s.T; ++i) {
      const int n = causal ? i + 1 : s.T;
      double mx = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < n; ++j) {
        double dot = 0;
        for (int d = 0; d < s.D; ++d) dot += Q[i * s.D + d] * K[j * s.D + d];
        w[j] = dot * scale;
        mx = std::max(mx, w[j]);
      }
      double z = 0;
      for (int j = 0; j < n; ++j) z += (w[j] = std::exp(w[j] - mx));
      for (int d = 0; d < s.D; ++d) {
        double acc = 0;
        for (int j = 0; j < n; ++j) acc += w[j] * V[j * s.D + d];
        O[i * s.D + d] = acc / z;
      }
    }
  }
}

}  // namespace claimcheck::ref
