// ch02.attention_numpy — the series' numpy einsum attention itself:
//   scores = np.einsum("btd,bsd->bts", q, k) / np.sqrt(d); scores = np.where(mask, scores, -np.inf)
//   p = np.exp(scores - scores.max(-1, keepdims=True)); p = p / p.sum(-1, keepdims=True)
//   out = np.einsum("bts,bsd->btd", p, v)
// A Python driver runs it in fp32 and fp64 on the same inputs; the outputs are compared with the fp64 reference.
#include "attention_common.h"
#include "claimcheck/io.h"

static void attention_numpy(claimcheck::Context& ctx) {
  claimcheck::ScratchDir dir("attention_numpy");
  const auto cases = ch02::cases_from(ctx);
  // Prepare: inputs as .npy, one set per shape.
  std::vector<std::vector<double>> refs;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto in = ch02::make_inputs(c, ctx.seed());
    const std::vector<long> shp{c.shape.B, c.shape.H, c.shape.T, c.shape.D};
    const std::string p = "case" + std::to_string(i) + "_";
    claimcheck::write_npy(dir.path() / (p + "q.npy"), in.qf.data(), shp);
    claimcheck::write_npy(dir.path() / (p + "k.npy"), in.kf.data(), shp);
    claimcheck::write_npy(dir.path() / (p + "v.npy"), in.vf.data(), shp);
    refs.emplace_back(c.shape.elements());
    claimcheck::ref::attention_fp64(in.q.data(), in.k.data(), in.v.data(), refs.back().data(), c.shape);
  }
  // Run: the driver writes caseN_out32.npy and caseN_out64.npy.
  const auto result = claimcheck::run_python_driver(
      ctx, "checks/ch02/attention_numpy.py", {dir.path().string(), std::to_string(cases.size()), ctx.planted_fault()});
  claimcheck::forward_driver_result(ctx, {{"details", result.value("details", nlohmann::json::object())},
                                          {"skip", result.value("skip", nlohmann::json())}});
  // Verify.
  double e32 = 0, e64 = 0;
  long nonfinite = 0;
  nlohmann::json rows = nlohmann::json::array();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::string p = "case" + std::to_string(i) + "_";
    const auto o32 = claimcheck::read_npy_f32(dir.path() / (p + "out32.npy"));
    const auto o64 = claimcheck::read_npy_f64(dir.path() / (p + "out64.npy"));
    const auto a = ch02::max_error(o32, refs[i]), b = ch02::max_error(o64, refs[i]);
    if (cases[i].input_scale == 1) e32 = std::max(e32, a.max_abs);  // large logits: finiteness only (see fp32)
    e64 = std::max(e64, b.max_abs);
    nonfinite += a.nonfinite + b.nonfinite;
    rows.push_back({{"shape", cases[i].label()},
                    {"numpy_fp32_vs_fp64_reference", a.max_abs},
                    {"numpy_fp64_vs_fp64_reference", b.max_abs},
                    {"nonfinite", a.nonfinite + b.nonfinite}});
  }
  ctx.measure(e32, "abs error");
  ctx.measure("fp64", e64, "abs error");
  ctx.measure("nonfinite", static_cast<double>(nonfinite), "count");
  ctx.detail("per_shape", rows);
}
CLAIMCHECK_REGISTER(attention_numpy).claim("ch02.attention_numpy");
