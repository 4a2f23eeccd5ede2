// ch02.attention_fp32 — 「30 行手写 attention 与 PyTorch 对到 2.65 × 10⁻⁷：float32 约 1e-6 才叫「对了」」
// Every version of the custom causal attention (fp32) against LibTorch's scaled-dot-product attention on
// several shapes, and FlashAttention's rule: error vs an fp64 reference <= 2 x the library's own error.
#include <set>
#include <string>

#include "../dispatch_expect.h"
#include "attention_common.h"
#include "claimcheck/probe.h"

static void attention_fp32(claimcheck::Context& ctx) {
  namespace K = claimcheck::kernels;
  namespace ref = claimcheck::ref;
  const auto opts = ch02::kernel_options(ctx, ctx.hardware().usable_cpus);
  double worst_vs_lib = 0, worst_ratio = 0;
  long nonfinite = 0;
  std::set<std::string> v3_ran;  // the register tiles v3 reported running, unforced
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& c : ch02::cases_from(ctx)) {
    // Prepare: seeded inputs; the fp64 reference and the library on the same fp32 values.
    const auto in = ch02::make_inputs(c, ctx.seed());
    std::vector<double> ref64(c.shape.elements());
    ref::attention_fp64(in.q.data(), in.k.data(), in.v.data(), ref64.data(), c.shape);
    const auto lib = ref::torch_attention(in.qf.data(), in.kf.data(), in.vf.data(), c.shape);
    const double lib_err = ch02::max_error(lib, ref64).max_abs;
    // Every version on the path this CPU runs, then v3 on each other path of its register tile this CPU can run (its
    // code is the same code under test, a CPU with other vector units runs it), forced in turn.
    std::vector<std::pair<int, std::string>> runs;
    for (int version : K::kAttentionVersions) runs.emplace_back(version, "");
    for (const char* path : {"avx512", "avx2", "avx512_emulated", "portable"})
      if (path != K::attention_v3_path(opts.faults)) runs.emplace_back(K::kAttentionRegister, path);
    for (const auto& [version, path] : runs) {
      if (!K::attention_v3_force_path(path)) continue;  // a path this CPU cannot run
      // Run.
      std::vector<float> out(c.shape.elements());
      K::attention_forward(version, in.qf.data(), in.kf.data(), in.vf.data(), out.data(), ch02::kshape(c.shape), opts);
      K::attention_v3_force_path("");
      if (version == K::kAttentionRegister && path.empty()) v3_ran.insert(K::attention_v3_last_tile());
      // Verify: against the library, and against fp64 relative to the library's own error.
      const auto vs_lib = ch02::max_error(out, lib), vs_ref = ch02::max_error(out, ref64);
      const double ratio = lib_err > 0 ? vs_ref.max_abs / lib_err : (vs_ref.max_abs == 0 ? 0 : INFINITY);
      // The claim (2.65e-7, "fp32 level") is about ordinary inputs; large-logit cases are judged by the
      // 2x rule and by finiteness, since their logits carry |s| x eps of rounding in any fp32 code.
      if (c.input_scale == 1) worst_vs_lib = std::max(worst_vs_lib, vs_lib.max_abs);
      worst_ratio = std::max(worst_ratio, std::isfinite(ratio) ? ratio : 1e30);
      nonfinite += vs_lib.nonfinite;
      rows.push_back(
          {{"shape", c.label()},
           {"version", K::attention_version_name(version)},
           {"v3_path",
            version == K::kAttentionRegister ? (path.empty() ? K::attention_v3_path(opts.faults) : path) : ""},
           {"max_abs_vs_libtorch", vs_lib.max_abs},
           {"max_abs_vs_fp64", vs_ref.max_abs},
           {"libtorch_vs_fp64", lib_err},
           {"ratio_to_library_error", ratio},
           {"nonfinite", vs_lib.nonfinite}});
    }
  }
  ctx.measure(worst_vs_lib, "abs error");
  ctx.measure("error_vs_fp64_over_library", worst_ratio, "ratio");
  ctx.measure("nonfinite", static_cast<double>(nonfinite), "count");
  // v3, as every version, runs on the widest register tile this machine has (the harness's hardware record, not the
  // kernels' CPUID): a narrower one computes the same values more slowly, which only the benchmark table would show.
  // Both as the dispatch names it and as the tile that ran reports itself, on every case.
  const std::string v3_path = K::attention_v3_path(opts.faults),
                    v3_widest = claimcheck::checks::expected_attention_v3_path(ctx.hardware());
  bool tiles_widest = !v3_ran.empty();
  for (const auto& t : v3_ran) tiles_widest = tiles_widest && claimcheck::checks::at_least_as_wide(t, v3_widest);
  ctx.measure_bool("v3_path_is_widest", claimcheck::checks::at_least_as_wide(v3_path, v3_widest) && tiles_widest);
  ctx.detail("v3_path", {{"dispatch", v3_path}, {"tiles_ran", v3_ran}, {"widest_here", v3_widest}});
  ctx.detail("per_shape", rows);
  ctx.detail("library", ref::torch_attention_api());
  ctx.detail("simd_path", K::attention_simd_path());
  ctx.assumption(
      "inputs ~ N(0, 1) rounded to fp32 (q, k scaled up in the large-logit cases); the fp64 reference "
      "runs on the same fp32 values; worst case over shapes and versions");
}
CLAIMCHECK_REGISTER(attention_fp32).claim("ch02.attention_fp32");
