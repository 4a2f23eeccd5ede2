// ch06.decode_measured — 「decode 慢是搬字节：时间全在搬权重」, on this machine: one decode step of a Llama-3-8B-
// shaped stack (q, k, v, o, gate, up, down per layer, random bf16 weights) through the project's GEMV kernels,
// against its bytes over the read bandwidth the testbed measured on the device it picked (ch06_testbed.h). On this
// CPU, LibTorch's bf16 matmul runs the same chain; on a GPU, the chain (inputs.gpu_layers layers and the lm_head)
// runs on kernels/cuda's GEMVs in a CUDA graph, and cuBLAS's chain on the same weights.
#include <memory>

#include "ch06_testbed.h"
#include "claimcheck/base/timing.h"

static void decode_measured(claimcheck::Context& ctx) {
  namespace G = ch06::gpu;
  // Prepare: the inputs of the device picked, then its roofs (the GPU's peak too: the report's roofline needs it).
  ch06::Testbed tb(ctx);
  const ch06::K::DecodeShape shape = tb.gpu() ? G::shape(ctx, G::chain_layers(ctx)) : ch06::decode_shape(ctx);
  const int vocab = tb.gpu() ? G::chain_vocab(ctx) : 0;
  const int steps =
      tb.gpu() ? std::max(20, ch06::positive_int(ctx, "steps", 100)) : ch06::positive_int(ctx, "steps", 100);
  tb.measure();
  // Bytes from the shape (2 per bf16 weight), not from the kernel's own count; the two must agree.
  const double bytes = G::shape_bytes(shape, vocab, false);
  const auto opts = ch06::gemv_options(ctx);
  const auto x = ch06::random_activations(static_cast<std::size_t>(shape.hidden), ctx.seed());
  std::vector<float> y(x.size());
  std::unique_ptr<ch06::K::DecodeStack> stack;
  std::unique_ptr<G::C::GpuDecodeChain> chain;
  ch06::Kernel ours{"bf16 GEMV chain", 0, bytes};
  if (tb.gpu()) {
    chain = std::make_unique<G::C::GpuDecodeChain>(shape, vocab, "bf16", ctx.seed(), claimcheck::usable_cpus(),
                                                   opts.faults);
    ours.flops = chain->flops();
    ours.sample = [&] { return chain->time_graph(steps); };
  } else {
    // Each step after one read of its own weights by the probe's reader: the median step against the median ratio.
    stack = std::make_unique<ch06::K::DecodeStack>(shape, "bf16", ctx.seed(), opts.faults);
    ours.flops = stack->flops();
    ours.rounds = steps;
    ours.warm_ups = 1;
    ours.reads = ch06::stack_reads(*stack);
    ours.sample = [&] { return ch06::best_seconds(1, [&] { stack->step(x.data(), y.data(), opts); }); };
  }
  ours.bound = ch06::Bound::memory;

  // Run: the project's chain, then the competitor on the same weights (LibTorch at equal threads; cuBLAS).
  const ch06::Timing run = tb.time(ours);
  const double t = run.seconds;
  // What the timed steps computed (y, the last sample's), against the answer key's fp64 step: before anything else
  // writes y.
  const double output_error = tb.gpu() ? NAN : ch06::stack_output_error(*stack, x.data(), y.data(), opts);
  double t_other = 0;
  std::string other_why;
  nlohmann::json eager;
  if (tb.gpu()) {
    t_other = chain->time_graph(steps, /*cublas=*/true);
    eager = {{"ours", chain->time_eager(steps) * 1e3}, {"cublas", chain->time_eager(steps, true) * 1e3}};
  } else {
    try {
      ch06::ref::torch_set_threads(tb.cpu_roof().threads);
      ch06::ref::TorchDecodeChain lib(ch06::stack_mats(*stack));
      std::vector<float> y_lib(y.size());  // its own output: the project's y is the one judged
      lib.step(x.data(), y_lib.data());
      std::vector<double> ts;
      for (int i = 0; i < steps; ++i) ts.push_back(ch06::best_seconds(1, [&] { lib.step(x.data(), y_lib.data()); }));
      t_other = claimcheck::base::median(ts);
    } catch (const std::exception& e) {
      other_why = e.what();
    }
  }

  // Verify.
  const double kernel_bytes = tb.gpu() ? chain->weight_bytes() : static_cast<double>(stack->weight_bytes());
  ctx.measure_bool("kernel_bytes_match_shape", kernel_bytes == bytes);
  // Its FLOPs (the roofline's point, the intensity) likewise: one multiply-add per bf16 weight, 2 bytes.
  ctx.measure_bool("kernel_flops_match_shape", ours.flops == 2 * (bytes / 2));
  ctx.derive("bytes_over_bandwidth", run.roof_seconds() * 1e3, "ms");
  ctx.measure(t * 1e3, "ms");
  ctx.measure("share_of_read_bandwidth", 1 / run.ratio, "ratio");
  ctx.measure("read_gb_s", run.read / 1e9, "GB/s");
  ctx.measure("weight_mb", bytes / 1e6, "MB");
  if (!tb.gpu()) ctx.measure("output_matches_reference", ch06::error_figure(output_error), "ratio");
  const std::string other = tb.gpu() ? "cuBLAS chain" : "LibTorch bf16 chain";
  if (t_other > 0) {
    ctx.measure(tb.gpu() ? "cublas_graph_ms" : "libtorch_ms", t_other * 1e3, "ms");
    ctx.measure(tb.gpu() ? "speedup_vs_cublas_graph" : "speedup_vs_libtorch", t_other / t, "ratio");
  }
  nlohmann::json pts = nlohmann::json::array({ch06::roofline_point(ours, t)});
  if (t_other > 0) pts.push_back(ch06::roofline_point(other, ours.flops, bytes, t_other));
  tb.record("a decode step", pts);
  if (tb.gpu()) {
    ctx.detail("eager_ms", eager);
    ctx.assumption(std::to_string(shape.layers) + " Llama-3-8B-shaped layers and a " + std::to_string(vocab) +
                   "-row lm_head on " + tb.device() + ": " + std::to_string(bytes / 1e9) +
                   " GB of bf16 weights, each read once per token; the median of " + std::to_string(steps) +
                   " replays of the step captured in a CUDA graph (CUDA events), against the read-only probe's "
                   "bandwidth over 4 GiB");
    ctx.assumption(
        "q, k, v as one matrix of stacked rows and gate/up interleaved (silu(gate) * up in the same warp): "
        "the same bytes, fewer launches; cuBLAS's chain (cublasGemmEx, one column) runs on the same weights "
        "with bf16 activations");
    return;
  }
  ctx.detail("step_over_read", run.ratios);  // each round's, in order
  ctx.detail("kernel_isa", ch06::K::gemv_simd_path());
  ctx.detail("libtorch", t_other > 0 ? ch06::ref::torch_gemv_api() : other_why);
  ctx.assumption(std::to_string(shape.layers) + " Llama-3-8B-shaped layers (hidden " + std::to_string(shape.hidden) +
                 ", KV " + std::to_string(shape.kv_dim) + ", FFN " + std::to_string(shape.ffn) +
                 "): " + std::to_string(bytes / 1e6) + " MB of bf16 weights, each read once per token; " +
                 std::to_string(steps) +
                 " steps, each after one read of the same weights by the bandwidth probe's reader: the median step "
                 "against the median step / read, on " +
                 std::to_string(tb.cpu_roof().threads) + " threads (" + ch06::K::gemv_simd_path() + ")");
  ctx.assumption("no norms, no attention over a cache (a one-token context): what remains is what decode time is");
}
CLAIMCHECK_REGISTER(decode_measured)
    .claim("ch06.decode_measured")
    .derives("bytes_over_bandwidth", claimcheck::Source::probe);
