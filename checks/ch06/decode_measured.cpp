// ch06.decode_measured — 「decode 慢是搬字节：时间全在搬权重」, on this machine: one decode step of a Llama-3-8B-
// shaped stack (q, k, v, o, gate, up, down per layer, random bf16 weights) through the project's GEMV kernels,
// against its bytes over the read bandwidth the probe measured; LibTorch's bf16 matmul runs the same chain.
#include "ch06_gpu.h"
#include "ch06_roofline.h"
#include "claimcheck/base/timing.h"

// On a GPU: the Llama-3-8B-shaped chain (inputs.gpu_layers layers and the lm_head) on kernels/cuda's GEMVs in a
// CUDA graph, against its bytes over the GPU's measured read bandwidth; cuBLAS's chain on the same weights.
static void decode_measured_gpu(claimcheck::Context& ctx) {
  namespace G = ch06::gpu;
  const ch06::K::DecodeShape shape = G::shape(ctx, G::chain_layers(ctx));
  const int vocab = G::chain_vocab(ctx);
  const int steps = std::max(20, ch06::positive_int(ctx, "steps", 100));
  const G::Roof roof = G::measure_roof(ctx);  // the peak too: the report's roofline needs its ceiling
  ch06::K::GemvFaults faults;
  ch06::K::parse_gemv_fault(ctx.planted_fault(), &faults);
  G::C::GpuDecodeChain chain(shape, vocab, "bf16", ctx.seed(), claimcheck::usable_cpus(), faults);
  const double t = chain.time_graph(steps), t_eager = chain.time_eager(steps);
  const double t_blas = chain.time_graph(steps, /*cublas=*/true), t_blas_eager = chain.time_eager(steps, true);
  const double bytes = G::shape_bytes(shape, vocab, false);  // from the shape, not from the kernel's count
  ctx.measure_bool("kernel_bytes_match_shape", chain.weight_bytes() == bytes);
  const ch06::Roofs roofs = roof.roofs();
  ctx.derive("bytes_over_bandwidth", roofs.bytes_seconds(bytes) * 1e3, "ms");
  ctx.measure(t * 1e3, "ms");
  ctx.measure("share_of_read_bandwidth", roofs.bytes_seconds(bytes) / t, "ratio");
  ctx.measure("read_gb_s", roof.read / 1e9, "GB/s");
  ctx.measure("weight_mb", bytes / 1e6, "MB");
  ctx.measure("cublas_graph_ms", t_blas * 1e3, "ms");
  ctx.measure("speedup_vs_cublas_graph", t_blas / t, "ratio");
  ctx.detail("eager_ms", {{"ours", t_eager * 1e3}, {"cublas", t_blas_eager * 1e3}});
  ctx.detail("roof", G::roof_json(roof));
  ctx.detail("roofline", ch06::roofline_chart("a decode step on " + roof.device, roofs,
                                              {ch06::roofline_point("bf16 GEMV chain", chain.flops(), bytes, t),
                                               ch06::roofline_point("cuBLAS chain", chain.flops(), bytes, t_blas)}));
  ctx.assumption(std::to_string(shape.layers) + " Llama-3-8B-shaped layers and a " + std::to_string(vocab) + "-row lm_head on " +
                 roof.device + ": " + std::to_string(bytes / 1e9) + " GB of bf16 weights, each read once per token; "
                 "the median of " + std::to_string(steps) + " replays of the step captured in a CUDA graph (CUDA events), against "
                 "the read-only probe's bandwidth over 4 GiB");
  ctx.assumption("q, k, v as one matrix of stacked rows and gate/up interleaved (silu(gate) * up in the same warp): "
                 "the same bytes, fewer launches; cuBLAS's chain (cublasGemmEx, one column) runs on the same weights "
                 "with bf16 activations");
}

static void decode_measured(claimcheck::Context& ctx) {
  if (ch06::gpu::present(ctx)) return decode_measured_gpu(ctx);
  // Prepare.
  const ch06::K::DecodeShape shape = ch06::decode_shape(ctx);
  const int steps = ch06::positive_int(ctx, "steps", 100);
  const ch06::Roof roof = ch06::measure_roof(ctx);
  const auto opts = ch06::gemv_options(ctx);
  const ch06::K::DecodeStack stack(shape, "bf16", ctx.seed(), opts.faults);

  // Run: the project's chain, each step after one read of its own weights, then LibTorch's on the same weights
  // (equal threads).
  const auto x = ch06::random_activations(static_cast<std::size_t>(shape.hidden), ctx.seed());
  std::vector<float> y(x.size());
  const ch06::PairedRead run =
      ch06::paired_with_own_read(stack, roof, steps, [&] { stack.step(x.data(), y.data(), opts); });
  const double t = run.seconds;
  double t_torch = 0;
  std::string torch_why;
  try {
    ch06::ref::torch_set_threads(roof.threads);
    ch06::ref::TorchDecodeChain chain(ch06::stack_mats(stack));
    chain.step(x.data(), y.data());
    std::vector<double> ts;
    for (int i = 0; i < steps; ++i) ts.push_back(ch06::best_seconds(1, [&] { chain.step(x.data(), y.data()); }));
    t_torch = claimcheck::base::median(ts);
  } catch (const std::exception& e) {
    torch_why = e.what();
  }

  // Verify.
  // Bytes from the shape (2 per bf16 weight), not from the kernel's own count; the two must agree.
  const double bytes = 2.0 * shape.layers * ch06::layer_weights(shape);
  ctx.measure_bool("kernel_bytes_match_shape", static_cast<double>(stack.weight_bytes()) == bytes);
  ctx.derive("bytes_over_bandwidth", run.read_seconds() * 1e3, "ms");
  ctx.measure(t * 1e3, "ms");
  ctx.measure("share_of_read_bandwidth", 1 / run.ratio, "ratio");
  ctx.measure("read_gb_s", bytes / run.read_seconds() / 1e9, "GB/s");
  ctx.measure("weight_mb", bytes / 1e6, "MB");
  if (t_torch > 0) {
    ctx.measure("libtorch_ms", t_torch * 1e3, "ms");
    ctx.measure("speedup_vs_libtorch", t_torch / t, "ratio");
  }
  nlohmann::json pts = nlohmann::json::array({ch06::roofline_point("bf16 GEMV chain", stack.flops(), bytes, t)});
  if (t_torch > 0) pts.push_back(ch06::roofline_point("LibTorch bf16 chain", stack.flops(), bytes, t_torch));
  ctx.detail("roof", ch06::roof_json(roof));
  ctx.detail("step_over_read", run.ratios);  // each round's, in order
  ctx.detail("kernel_isa", ch06::K::gemv_simd_path());
  ctx.detail("libtorch", t_torch > 0 ? ch06::ref::torch_gemv_api() : torch_why);
  ctx.detail("roofline", ch06::roofline_chart("a decode step on this CPU", roof.roofs(), pts));
  ctx.assumption(std::to_string(shape.layers) + " Llama-3-8B-shaped layers (hidden " + std::to_string(shape.hidden) +
                 ", KV " + std::to_string(shape.kv_dim) + ", FFN " + std::to_string(shape.ffn) +
                 "): " + std::to_string(bytes / 1e6) + " MB of bf16 weights, each read once per token; " +
                 std::to_string(steps) +
                 " steps, each after one read of the same weights by the bandwidth probe's reader: the median step "
                 "against the median step / read, on " +
                 std::to_string(roof.threads) + " threads (" + ch06::K::gemv_simd_path() + ")");
  ctx.assumption("no norms, no attention over a cache (a one-token context): what remains is what decode time is");
}
CLAIMCHECK_REGISTER(decode_measured).claim("ch06.decode_measured");
