// ch06.decode_measured — 「decode 慢是搬字节：时间全在搬权重」, on this machine: one decode step of a Llama-3-8B-
// shaped stack (q, k, v, o, gate, up, down per layer, random bf16 weights) through the project's GEMV kernels,
// against its bytes over the read bandwidth the testbed measured on the device it picked (testbed/). On this
// CPU, LibTorch's bf16 matmul runs the same chain; on a GPU, the chain (inputs.gpu_layers layers and the lm_head)
// runs on kernels/cuda's GEMVs in a CUDA graph, and cuBLAS's chain on the same weights.
#include <memory>
#include <optional>

#include "claimcheck/base/timing.h"
#include "testbed/decode_chain.h"

static void decode_measured(claimcheck::Context& ctx) {
  // Prepare: the inputs of the device's chain, then its roofs (the GPU's peak too: the report's roofline needs it).
  ch06::Testbed tb(ctx);
  const std::unique_ptr<ch06::DecodeChain> chain = tb.decode_chain();
  const int steps = ch06::positive_int(ctx, "steps", 100);
  tb.measure();
  const ch06::Kernel ours = [&] {
    ch06::Kernel k = chain->kernel(steps);
    k.bound = ch06::Bound::memory;
    return k;
  }();
  const double bytes = ours.bytes;  // from the shape (2 per bf16 weight), not from the kernel's own count

  // Run: the project's chain, then the competitor on the same weights (LibTorch at equal threads; cuBLAS).
  const ch06::Timing run = tb.time(ours);
  const double t = run.seconds;
  // What the timed steps computed, against the answer key's fp64 step: before anything else runs.
  const std::optional<double> output_error = chain->output_error();
  std::string other_why;
  const double t_other = chain->library_seconds(steps, &other_why);

  // Verify: the kernel's own counts against the shape's, then the time against the roof.
  ctx.measure_bool("kernel_bytes_match_shape", chain->weight_bytes() == bytes);
  // Its FLOPs (the roofline's point, the intensity) likewise: one multiply-add per bf16 weight, 2 bytes.
  ctx.measure_bool("kernel_flops_match_shape", ours.flops == 2 * (bytes / 2));
  ctx.derive("bytes_over_bandwidth", run.roof_seconds() * 1e3, "ms");
  ctx.measure(t * 1e3, "ms");
  ctx.measure("share_of_read_bandwidth", 1 / run.ratio, "ratio");
  ctx.measure("read_gb_s", run.read / 1e9, "GB/s");
  ctx.measure("weight_mb", bytes / 1e6, "MB");
  if (output_error) ctx.measure("output_matches_reference", ch06::error_figure(*output_error), "ratio");
  if (t_other > 0) {
    ctx.measure(chain->key() + "_ms", t_other * 1e3, "ms");
    ctx.measure("speedup_vs_" + chain->key(), t_other / t, "ratio");
  }
  nlohmann::json pts = nlohmann::json::array({ch06::roofline_point(ours, t)});
  if (t_other > 0) pts.push_back(ch06::roofline_point(chain->library(), ours.flops, bytes, t_other));
  tb.record("a decode step", pts);
  chain->describe(ctx, run, steps, other_why);
}
CLAIMCHECK_REGISTER(decode_measured)
    .claim("ch06.decode_measured")
    .derives("bytes_over_bandwidth", claimcheck::Source::probe);
