// Host-side arithmetic of the CUDA kernels (plan.h): plain C++, compiled everywhere.
#include "claimcheck/kernels/cuda/plan.h"

#include <stdexcept>

namespace claimcheck::kernels::cuda {

std::vector<MatShape> decode_plan(const DecodeShape& s, int vocab) {
  if (s.hidden < 1 || s.kv_dim < 1 || s.ffn < 1 || s.layers < 1 || vocab < 0)
    throw std::invalid_argument("decode_plan: hidden, kv_dim, ffn and layers must be positive, vocab not negative");
  std::vector<MatShape> p;
  for (int l = 0; l < s.layers; ++l) {
    p.push_back({s.hidden, s.hidden, "q"});
    p.push_back({s.kv_dim, s.hidden, "k"});
    p.push_back({s.kv_dim, s.hidden, "v"});
    p.push_back({s.hidden, s.hidden, "o"});
    p.push_back({s.ffn, s.hidden, "gate"});
    p.push_back({s.ffn, s.hidden, "up"});
    p.push_back({s.hidden, s.ffn, "down"});
  }
  if (vocab > 0) p.push_back({vocab, s.hidden, "lm_head"});
  return p;
}

double plan_weight_bytes(const std::vector<MatShape>& plan, const std::string& format) {
  if (format != "bf16" && format != "nf4") throw std::invalid_argument("plan_weight_bytes: format must be bf16 or nf4");
  double b = 0;
  for (const auto& m : plan) {
    const double w = static_cast<double>(m.N) * m.K;
    b += format == "bf16" ? 2.0 * w : w / 2.0 + 4.0 * (w / 64.0);
  }
  return b;
}

double plan_flops(const std::vector<MatShape>& plan) {
  double f = 0;
  for (const auto& m : plan) f += 2.0 * m.N * m.K;
  return f;
}

GemvLaunch gemv_launch(int N, int K, const std::string& format) {
  if (N < 1 || K < 1) throw std::invalid_argument("gemv_launch: N and K must be positive");
  GemvLaunch l;
  if (format == "bf16") {
    if (K % 8 != 0) throw std::invalid_argument("gemv_launch: a bf16 GEMV needs K a multiple of 8 (16-byte loads)");
    l.k_per_step = 32 * 8;
  } else if (format == "nf4") {
    if (K % 64 != 0) throw std::invalid_argument("gemv_launch: an NF4 GEMV needs K a multiple of 64 (its blocks)");
    l.k_per_step = 32 * 32;
  } else {
    throw std::invalid_argument("gemv_launch: format must be bf16 or nf4");
  }
  l.rows_per_block = 8;  // one warp per row
  l.threads = 32 * l.rows_per_block;
  l.blocks = (N + l.rows_per_block - 1) / l.rows_per_block;
  return l;
}

}  // namespace claimcheck::kernels::cuda
