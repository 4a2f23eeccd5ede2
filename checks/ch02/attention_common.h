// Shared by the chapter 2 attention checks: the shapes from the expected file, seeded inputs,
// and the error measures (max |error| over finite outputs; non-finite outputs counted apart).
#pragma once
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "claimcheck/kernels/attention.h"
#include "claimcheck/ref/attention.h"

namespace ch02 {

struct Case {
  claimcheck::ref::AttnShape shape;
  double input_scale = 1;  // std of q and k entries: logits ~ input_scale^2 (large-logit cases)
  std::string label() const {
    return "B" + std::to_string(shape.B) + " H" + std::to_string(shape.H) + " T" + std::to_string(shape.T) + " D" +
           std::to_string(shape.D) + (input_scale != 1 ? " x" + std::to_string(static_cast<int>(input_scale)) : "");
  }
};

inline std::vector<Case> cases_from(const claimcheck::Context& ctx) {
  std::vector<Case> out;
  for (const auto& c : ctx.input("shapes")) {
    Case x;
    x.shape = {c.at("B").get<int>(), c.at("H").get<int>(), c.at("T").get<int>(), c.at("D").get<int>()};
    x.input_scale = c.value("input_scale", 1.0);
    out.push_back(x);
  }
  return out;
}

struct Inputs {
  std::vector<double> q, k, v;
  std::vector<float> qf, kf, vf;  // the same values rounded to fp32; the fp64 reference uses these too
};

inline Inputs make_inputs(const Case& c, std::uint64_t seed) {
  std::mt19937_64 rng(seed ^ (static_cast<std::uint64_t>(c.shape.T) << 20) ^ c.shape.D);
  std::normal_distribution<double> n(0.0, 1.0);
  Inputs in;
  const long e = c.shape.elements();
  for (auto* vec : {&in.qf, &in.kf, &in.vf}) {
    vec->resize(e);
    const double sc = vec == &in.vf ? 1.0 : c.input_scale;
    for (auto& x : *vec) x = static_cast<float>(sc * n(rng));
  }
  in.q.assign(in.qf.begin(), in.qf.end());
  in.k.assign(in.kf.begin(), in.kf.end());
  in.v.assign(in.vf.begin(), in.vf.end());
  return in;
}

struct Err {
  double max_abs = 0;
  long nonfinite = 0;
};
// The largest |got - ref|; an element non-finite on either side is counted, not compared (a reference that overflows
// on large logits must not drop out of the comparison as a NaN would from std::max).
template <typename A, typename B>
Err max_error(const A& got, const B& ref) {
  Err e;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    if (!std::isfinite(g) || !std::isfinite(static_cast<double>(ref[i]))) {
      ++e.nonfinite;
      continue;
    }
    e.max_abs = std::max(e.max_abs, std::fabs(g - static_cast<double>(ref[i])));
  }
  return e;
}

inline claimcheck::kernels::AttentionOptions kernel_options(const claimcheck::Context& ctx, int threads) {
  claimcheck::kernels::AttentionOptions o;
  o.threads = threads;
  if (!claimcheck::kernels::parse_attention_fault(ctx.planted_fault(), &o.faults))
    throw std::invalid_argument("CLAIMCHECK_FAULT: unknown attention fault '" + ctx.planted_fault() + "'");
  return o;
}

inline claimcheck::kernels::AttentionShape kshape(const claimcheck::ref::AttnShape& s) { return {s.B, s.H, s.T, s.D}; }

}  // namespace ch02
