// Chapter 6's measured checks: their inputs (expected/ch06/*.json inputs.*, each an error naming the field when
// it is out of range), the decode stack's shape and the GEMV options a run uses.
#pragma once
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/base/threads.h"
#include "claimcheck/check.h"
#include "claimcheck/kernels/gemv.h"

namespace ch06 {

// An output's error against the answer key as a figure: a NaN (an element the code under test left NaN, or unwritten
// where the check poisoned it) reads 1e30, so the statement fails (a figure must be finite: a NaN measured is the
// check's own error), as ch02.attention_fp32 reads a non-finite ratio.
inline double error_figure(double e) { return e == e ? e : 1e30; }
namespace K = claimcheck::kernels;

// inputs.<name> as a positive integer (at most `max`), or an error naming the claim's field.
inline int positive_int(claimcheck::Context& ctx, const std::string& name, int max = 1 << 20) {
  const nlohmann::json& v = ctx.input(name);
  if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > max)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + name + "': expected an integer from 1 to " +
                                std::to_string(max) + ", got " + v.dump());
  return v.get<int>();
}
// inputs.<name> as a batch list: at least two ascending positive integers starting at 1, containing `must`.
inline std::vector<int> batch_list(claimcheck::Context& ctx, const std::string& name, int must = 1) {
  const nlohmann::json& v = ctx.input(name);
  std::vector<int> b;
  bool ok = v.is_array() && v.size() >= 2;
  for (const auto& x : ok ? v : nlohmann::json::array()) {
    ok = ok && x.is_number_integer() && x.get<long long>() >= 1 && x.get<long long>() <= 4096 &&
         (b.empty() || x.get<long long>() > b.back());
    if (ok) b.push_back(x.get<int>());
  }
  ok = ok && b.front() == 1 && std::find(b.begin(), b.end(), must) != b.end();
  if (!ok)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs." + name +
                                "': expected ascending batch sizes from 1 "
                                "(at most 4096, at least two, " +
                                std::to_string(must) + " among them), got " + v.dump());
  return b;
}

// The weights of one Llama-shaped decoder layer: q and o (hidden^2 each), k and v (kv_dim x hidden each), gate, up
// and down (ffn x hidden each). The one place this formula is written on the checks' side.
inline double layer_weights(const K::DecodeShape& d) {
  return 2.0 * d.hidden * d.hidden + 2.0 * d.kv_dim * d.hidden + 3.0 * d.ffn * d.hidden;
}

// inputs.head_dim: the model's head size (Llama-3-8B's 128), stated with the shape rather than left to the stack's
// default, and handed to both the stack and the answer key's step; it divides hidden and kv_dim.
inline int head_dim_of(claimcheck::Context& ctx, const K::DecodeShape& d) {
  const int h = positive_int(ctx, "head_dim", 4096);
  if (d.hidden % h != 0 || d.kv_dim % h != 0)
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.head_dim': " + std::to_string(h) +
                                " does not divide hidden " + std::to_string(d.hidden) + " and kv_dim " +
                                std::to_string(d.kv_dim));
  return h;
}

inline K::DecodeShape decode_shape(claimcheck::Context& ctx) {
  K::DecodeShape d;
  d.hidden = positive_int(ctx, "hidden", 65536);
  d.kv_dim = positive_int(ctx, "kv_dim", 65536);
  d.ffn = positive_int(ctx, "ffn", 262144);
  d.head_dim = head_dim_of(ctx, d);
  d.layers = positive_int(ctx, "layers", 64);
  if (static_cast<double>(d.layers) * layer_weights(d) * 2 > 8e9)
    throw std::invalid_argument(ctx.claim_id() +
                                ": field 'inputs.layers': the stack would hold more than 8 GB of bf16 "
                                "weights");
  return d;
}

inline K::GemvOptions gemv_options(claimcheck::Context& ctx) {
  K::GemvOptions o;
  o.threads = claimcheck::usable_cpus();
  K::parse_gemv_fault(ctx.planted_fault(), &o.faults);
  return o;
}

}  // namespace ch06
