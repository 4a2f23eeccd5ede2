// ch02.attention_fp64 — 「float64 约 1e-12 才叫「对了」」
// Every version of the custom causal attention in fp64 against an independent fp64 reference.
#include "attention_common.h"
#include "claimcheck/probe.h"

static void attention_fp64(claimcheck::Context& ctx) {
  namespace K = claimcheck::kernels;
  const auto opts = ch02::kernel_options(ctx, ctx.hardware().usable_cpus);
  double worst = 0;
  long nonfinite = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : ch02::cases_from(ctx)) {
    // Prepare.
    const auto in = ch02::make_inputs(c, ctx.seed());
    std::vector<double> ref64(c.shape.elements());
    claimcheck::ref::attention_fp64(in.q.data(), in.k.data(), in.v.data(), ref64.data(), c.shape);
    for (int version : K::kAttentionVersions) {
      // Run.
      std::vector<double> out(c.shape.elements());
      K::attention_forward(version, in.q.data(), in.k.data(), in.v.data(), out.data(), ch02::kshape(c.shape), opts);
      // Verify.
      const auto e = ch02::max_error(out, ref64);
      worst = std::max(worst, e.max_abs);
      nonfinite += e.nonfinite;
      rows.push_back({{"shape", c.label()},
                      {"version", K::attention_version_name(version)},
                      {"max_abs_vs_fp64_reference", e.max_abs},
                      {"nonfinite", e.nonfinite}});
    }
  }
  ctx.measure(worst, "abs error");
  ctx.measure("nonfinite", static_cast<double>(nonfinite), "count");
  ctx.detail("per_shape", rows);
  ctx.assumption("the reference is plain fp64 loops (reference/src/attention_ref.cpp), written apart from the kernels");
}
CLAIMCHECK_REGISTER(attention_fp64).claim("ch02.attention_fp64");
