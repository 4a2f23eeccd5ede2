// A decode step's chain of GEMVs on the testbed's device, and the library's chain on the same weights: what a check
// times, what it verifies, and how it describes them, one interface whichever device the testbed picked.
//  - On this CPU: a Llama-3-8B-shaped stack (inputs.layers layers of q, k, v, o, gate, up, down; random bf16 weights)
//    through kernels/cpu's GEMVs, each step after one read of its own weights by the probe's reader; its output
//    against the answer key's fp64 step; the library's chain is LibTorch's bf16 matmul at the probe's threads.
//  - On a GPU: inputs.gpu_layers layers and an inputs.gpu_vocab-row lm_head on kernels/cuda's GEMVs, each step a
//    replay of a CUDA graph; the library's chain is cuBLAS's (cublasGemmEx) on the same weights. Its output is not
//    read back (the device's chain keeps its buffers): no output statement is measured there.
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "testbed.h"

namespace ch06 {

class DecodeChain {
 public:
  virtual ~DecodeChain() = default;
  // Builds the weights (after the testbed measured its roofs: the probe's arrays and the weights are not held at once
  // on a small machine) and gives the kernel to time: its FLOPs, its bytes from the shape (2 per bf16 weight), its
  // samples of `steps` steps (rounds on the CPU, graph replays on a GPU).
  virtual Kernel kernel(int steps) = 0;
  virtual double weight_bytes() const = 0;  // the kernel's own count, to hold against the shape's
  // What the timed steps computed, against the answer key (the largest error over the reference's scale), read
  // before anything else runs; none where the device's form cannot read it back.
  virtual std::optional<double> output_error() = 0;
  // Seconds per step of the library's chain on the same weights; 0 with *why where it could not run.
  virtual double library_seconds(int steps, std::string* why) = 0;
  virtual std::string library() const = 0;  // its name ("LibTorch bf16 chain", "cuBLAS chain")
  virtual std::string key() const = 0;      // its measurements' stem: libtorch_ms, speedup_vs_libtorch
  // The row's assumptions and details: the shape, the timing's method, the ISA or the device.
  virtual void describe(claimcheck::Context& ctx, const Timing& run, int steps, const std::string& why) = 0;
};

namespace detail {

class CpuDecodeChain final : public DecodeChain {
 public:
  CpuDecodeChain(claimcheck::Context& ctx, const Testbed& tb)
      : ctx_(ctx),
        tb_(tb),
        shape_(decode_shape(ctx)),
        bytes_(gpu::shape_bytes(shape_, 0, false)),
        opts_(gemv_options(ctx)) {}
  Kernel kernel(int steps) override {
    x_ = random_activations(static_cast<std::size_t>(shape_.hidden), ctx_.seed());
    y_.assign(x_.size(), 0);
    stack_ = std::make_unique<K::DecodeStack>(shape_, "bf16", ctx_.seed(), opts_.faults);
    Kernel k{"bf16 GEMV chain", stack_->flops(), bytes_};
    // Each step after one read of its own weights by the probe's reader: the median step against the median ratio.
    k.rounds = steps;
    k.warm_ups = 1;
    k.reads = stack_reads(*stack_);
    k.sample = [this] { return best_seconds(1, [this] { stack_->step(x_.data(), y_.data(), opts_); }); };
    return k;
  }
  double weight_bytes() const override { return static_cast<double>(stack_->weight_bytes()); }
  std::optional<double> output_error() override { return stack_output_error(*stack_, x_.data(), y_.data(), opts_); }
  double library_seconds(int steps, std::string* why) override {
    try {
      ref::torch_set_threads(tb_.cpu_roof().threads);
      ref::TorchDecodeChain lib(stack_mats(*stack_));
      std::vector<float> y_lib(y_.size());  // its own output: the project's y is the one judged
      lib.step(x_.data(), y_lib.data());
      std::vector<double> ts;
      for (int i = 0; i < steps; ++i) ts.push_back(best_seconds(1, [&] { lib.step(x_.data(), y_lib.data()); }));
      return claimcheck::base::median(std::move(ts));
    } catch (const std::exception& e) {
      *why = e.what();
      return 0;
    }
  }
  std::string library() const override { return "LibTorch bf16 chain"; }
  std::string key() const override { return "libtorch"; }
  void describe(claimcheck::Context& ctx, const Timing& run, int steps, const std::string& why) override {
    ctx.detail("step_over_read", run.ratios);  // each round's, in order
    ctx.detail("kernel_isa", K::gemv_simd_path(opts_.faults));
    ctx.detail("libtorch", why.empty() ? ref::torch_gemv_api() : why);
    ctx.assumption(std::to_string(shape_.layers) + " Llama-3-8B-shaped layers (hidden " +
                   std::to_string(shape_.hidden) + ", KV " + std::to_string(shape_.kv_dim) + ", FFN " +
                   std::to_string(shape_.ffn) + "): " + std::to_string(bytes_ / 1e6) +
                   " MB of bf16 weights, each read once per token; " + std::to_string(steps) +
                   " steps, each after one read of the same weights by the bandwidth probe's reader: the median step "
                   "against the median step / read, on " +
                   std::to_string(tb_.cpu_roof().threads) + " threads (" + K::gemv_simd_path(opts_.faults) + ")");
    ctx.assumption("no norms, no attention over a cache (a one-token context): what remains is what decode time is");
  }

 private:
  claimcheck::Context& ctx_;
  const Testbed& tb_;
  K::DecodeShape shape_;
  double bytes_;  // from the shape
  K::GemvOptions opts_;
  std::vector<float> x_, y_;
  std::unique_ptr<K::DecodeStack> stack_;
};

class GpuDecodeChain final : public DecodeChain {
 public:
  GpuDecodeChain(claimcheck::Context& ctx, const Testbed& tb)
      : ctx_(ctx),
        tb_(tb),
        shape_(gpu::shape(ctx, gpu::chain_layers(ctx))),
        vocab_(gpu::chain_vocab(ctx)),
        faults_(gemv_options(ctx).faults) {}
  Kernel kernel(int steps) override {
    steps_ = std::max(20, steps);  // a graph's replays: at least 20 for a median of events
    chain_ = std::make_unique<gpu::C::GpuDecodeChain>(shape_, vocab_, "bf16", ctx_.seed(), claimcheck::usable_cpus(),
                                                      faults_);
    Kernel k{"bf16 GEMV chain", chain_->flops(), gpu::shape_bytes(shape_, vocab_, false)};
    k.sample = [this] { return chain_->time_graph(steps_); };
    return k;
  }
  double weight_bytes() const override { return chain_->weight_bytes(); }
  std::optional<double> output_error() override { return std::nullopt; }
  double library_seconds(int, std::string*) override {
    eager_ = {{"ours", chain_->time_eager(steps_) * 1e3}, {"cublas", chain_->time_eager(steps_, true) * 1e3}};
    return chain_->time_graph(steps_, /*cublas=*/true);
  }
  std::string library() const override { return "cuBLAS chain"; }
  std::string key() const override { return "cublas_graph"; }
  void describe(claimcheck::Context& ctx, const Timing&, int, const std::string&) override {
    ctx.detail("eager_ms", eager_);
    ctx.assumption(std::to_string(shape_.layers) + " Llama-3-8B-shaped layers and a " + std::to_string(vocab_) +
                   "-row lm_head on " + tb_.device() + ": " + std::to_string(chain_->weight_bytes() / 1e9) +
                   " GB of bf16 weights, each read once per token; the median of " + std::to_string(steps_) +
                   " replays of the step captured in a CUDA graph (CUDA events), against the read-only probe's "
                   "bandwidth over 4 GiB");
    ctx.assumption(
        "q, k, v as one matrix of stacked rows and gate/up interleaved (silu(gate) * up in the same warp): "
        "the same bytes, fewer launches; cuBLAS's chain (cublasGemmEx, one column) runs on the same weights "
        "with bf16 activations");
  }

 private:
  claimcheck::Context& ctx_;
  const Testbed& tb_;
  K::DecodeShape shape_;
  int vocab_ = 0, steps_ = 20;
  K::GemvFaults faults_;
  std::unique_ptr<gpu::C::GpuDecodeChain> chain_;
  nlohmann::json eager_;
};

}  // namespace detail

// The chain of the testbed's device, its inputs read (a bad one costs no probe time: call before measure()).
inline std::unique_ptr<DecodeChain> Testbed::decode_chain() const {
  if (gpu_form_) return std::make_unique<detail::GpuDecodeChain>(ctx_, *this);
  return std::make_unique<detail::CpuDecodeChain>(ctx_, *this);
}

}  // namespace ch06
