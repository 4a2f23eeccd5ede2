// Chapter 6 in LibTorch: a Llama-shaped block's training step timed per phase (backward over forward, MFU), and
// chapter 3's tiny step. The profiled step is in profiler.cpp, the KV cache in kv_cache.cpp, the GPU syncs in
// item_sync.cpp.
#include "claimcheck/train/perf.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include <kineto/ActivityType.h>  // libkineto's activity kinds (shipped in LibTorch's include folder)
#include <torch/csrc/autograd/profiler_kineto.h>

#include <torch/cuda.h>

#include "block.h"
#include "claimcheck/base/timing.h"
#include "decoder.h"

namespace claimcheck::train {
namespace {
using base::Clock;
using base::seconds_since;
using step_detail::LayerStack;
using step_detail::StepData;

// A copy of t, fp32, on the host.
StepTensor host_tensor(const std::string& name, const torch::Tensor& t) {
  const auto h = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return {name, h.sizes().vec(), {h.data_ptr<float>(), h.data_ptr<float>() + h.numel()}};
}

// The block's weights under their Hugging Face names, in the optimizer's order.
std::vector<std::pair<std::string, torch::Tensor>> named_weights(const LayerStack& block) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (std::size_t l = 0; l < block.layers.size(); ++l)
    for (const auto& p : block.layers[l]->named_parameters())
      out.emplace_back(hf_name("layers_" + std::to_string(l) + "." + p.key()), p.value());
  return out;
}

// The AdamW state each of the block's weights holds now, before the update about to run (zeros before the first), the
// step count that update runs as, and the optimizer's settings: the answer key recomputes the update from them.
void capture_adamw_state(torch::optim::AdamW& opt, const LayerStack& block, BlockStepCapture& cap) {
  const auto& o = static_cast<const torch::optim::AdamWOptions&>(opt.param_groups().front().options());
  cap.lr = o.lr();
  cap.beta1 = std::get<0>(o.betas());
  cap.beta2 = std::get<1>(o.betas());
  cap.eps = o.eps();
  cap.weight_decay = o.weight_decay();
  cap.adam_step = 1;
  for (const auto& [name, w] : named_weights(block)) {
    const auto it = opt.state().find(static_cast<void*>(w.unsafeGetTensorImpl()));
    if (it == opt.state().end()) {
      const auto zero = torch::zeros_like(w);
      cap.exp_avg.push_back(host_tensor(name, zero));
      cap.exp_avg_sq.push_back(host_tensor(name, zero));
      continue;
    }
    const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
    cap.exp_avg.push_back(host_tensor(name, st.exp_avg()));
    cap.exp_avg_sq.push_back(host_tensor(name, st.exp_avg_sq()));
    cap.adam_step = st.step() + 1;  // (AdamW counts the step before it updates)
  }
}

// The block's forward FLOPs as the step reports them (a planted fault counts one token per sequence, not the step's).
double counted_flops(const LayerStack& block, int batch, int tokens, const std::string& fault) {
  return block.forward_flops(batch, fault == "flops_per_token_only" ? 1 : tokens);
}
}  // namespace

double block_forward_flops(const std::filesystem::path& config, int batch, int tokens, const std::string& fault) {
  return counted_flops(LayerStack(with_planted_fault(read_decoder_config(config), fault), 0, tokens), batch, tokens,
                       fault);
}

BlockStepTiming time_block_step(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                int repeats, const std::string& fault, const BlockStepOn& on) {
  // A planted fault of the decoder layer's (DecoderConfig::fault) reaches the layers; the step's own are read below.
  DecoderConfig c = with_planted_fault(read_decoder_config(config), fault);
  if (on.layers < 0) throw std::invalid_argument("time_block_step: layers must not be negative");
  if (on.layers > 0) c.layers = std::min<std::int64_t>(c.layers, on.layers);
  std::string why;
  if (on.cuda && !torch_cuda_available(&why)) throw std::runtime_error(why);
  const torch::Device device = on.cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  const torch::Dtype dtype = on.bf16 ? torch::kBFloat16 : torch::kFloat;
  // The queue drained at each timestamp on a GPU (its kernels run asynchronously); nothing to wait for on a CPU,
  // where the process's CPU time may stand in for the wall clock (BlockStepOn::cpu_clock).
  const bool cpu_clock = on.cpu_clock && !on.cuda;
  auto now = [&] {
    if (on.cuda) torch::cuda::synchronize();
    if (cpu_clock) {
      timespec ts{};
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::seconds(ts.tv_sec) +
                                                                           std::chrono::nanoseconds(ts.tv_nsec)));
    }
    return Clock::now();
  };
  // BlockStepOn::threads; a planted fault leaves the step on one thread whatever it was asked.
  const ScopedIntraOpThreads threads_guard(on.cuda ? 0 : fault == "step_one_thread" ? 1 : on.threads);
  install_counting_allocator();
  const std::int64_t base = live_bytes();
  LayerStack block(c, seed, tokens);
  StepData data(c, batch, tokens);
  if (on.cuda || on.bf16) {
    for (auto& l : block.layers) l->to(device, dtype);
    block.cos = block.cos.to(device, dtype);
    block.sin = block.sin.to(device, dtype);
    data.stored = data.stored.to(device);
    data.proj = data.proj.to(device, dtype);
  }
  const bool recompute = fault == "backward_recomputes";
  // (A planted fault, block_step_no_decay, turns the decay off: 1e-6 of a weight of 1 per step, a hundredth of the
  // update, which a per-element bound on the update sees at its edge only.)
  torch::optim::AdamW opt(block.parameters(),
                          torch::optim::AdamWOptions(1e-4).weight_decay(fault == "block_step_no_decay" ? 0.0 : 0.01));
  BlockStepTiming r;
  r.forward_s = r.backward_s = r.step_s = std::numeric_limits<double>::infinity();
  std::vector<double> ratios, busy;
  const int runs = std::max(1, repeats) + 1;
  const auto capture = on.capture ? std::make_shared<BlockStepCapture>() : nullptr;
  torch::Tensor last_x, last_loss;
  for (int i = 0; i < runs; ++i) {  // the first run warms up
    opt.zero_grad();
    // A planted fault hands the input over without requires_grad.
    const auto x = fault == "step_input_no_grad" ? data.input(dtype).detach() : data.input(dtype);
    if (on.capture && i == runs - 1) {  // the weights and moments the last step runs with, before it (not timed)
      for (const auto& [name, w] : named_weights(block)) capture->weights.push_back(host_tensor(name, w));
      capture->input = host_tensor("input", x);
      capture->proj = host_tensor("proj", data.proj);
      capture_adamw_state(opt, block, *capture);  // the moments before its update (the forward and backward keep them)
    }
    const double c0 = process_cpu_seconds();
    const auto w0 = Clock::now();
    const auto t0 = now();
    const auto loss = (block.forward(x, recompute) * data.proj).sum();
    const auto t1 = now();
    loss.backward();
    const auto t2 = now();
    if (fault != "step_skips_update") opt.step();  // (a planted fault: the timed step never updates its weights)
    const auto t3 = now();
    const double wall = std::chrono::duration<double>(Clock::now() - w0).count(), cpu = process_cpu_seconds() - c0;
    last_x = x;
    last_loss = loss;
    if (i == 0) continue;
    if (!on.cuda && wall > 0) busy.push_back(cpu / wall);
    const double fwd = std::chrono::duration<double>(t1 - t0).count(),
                 bwd = std::chrono::duration<double>(t2 - t1).count();
    ratios.push_back(bwd / fwd);
    r.forward_s = std::min(r.forward_s, fwd);
    r.backward_s = std::min(r.backward_s, bwd);
    r.step_s = std::min(r.step_s, std::chrono::duration<double>(t3 - t0).count());
  }
  if (on.capture) {  // the gradients the last timed step's backward left (AdamW does not touch them), the weights after
    capture->loss = last_loss.item<double>();
    for (const auto& [name, w] : named_weights(block)) {
      capture->updated.push_back(host_tensor(name, w));
      if (w.grad().defined()) capture->grads.push_back(host_tensor(name, w.grad()));
    }
    if (last_x.grad().defined()) capture->grads.push_back(host_tensor("input", last_x.grad()));
    r.capture = capture;
  }
  r.backward_over_forward = base::median(ratios);
  if (!busy.empty()) r.step_threads_busy = base::median(busy);
  if (!on.cuda) {  // one more step under the allocator's peak counter (the optimizer state exists by now)
    opt.zero_grad();
    // (A planted fault counts the peak above what was live before the step: no weights nor optimizer state.)
    const std::int64_t before = fault == "step_peak_from_live" ? live_bytes() : base;
    reset_peak();
    (block.forward(data.input(dtype), recompute) * data.proj).sum().backward();
    opt.step();
    r.step_peak_bytes = peak_bytes() - before;
  }
  r.forward_flops = counted_flops(block, batch, tokens, fault);
  r.params = block.linear_params();
  r.batch = batch;
  r.tokens = tokens;
  r.layers = static_cast<int>(c.layers);
  r.hidden = c.hidden;
  r.intermediate = c.intermediate;
  r.threads = at::get_num_threads();
  r.device = on.cuda ? "cuda" : "cpu";
  r.dtype = on.bf16 ? "bfloat16" : "float32";
  return r;
}

TinyStepTiming time_tiny_step(std::uint64_t seed, int batch, int repeats, const std::string& fault,
                              const TinyConfig& c) {
  torch::manual_seed(seed);
  TinyGPT model(c);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-4));
  const auto ids = torch::randint(0, c.vocab, {batch, c.context + 1}, torch::kLong);
  // (A planted fault takes the inputs for the targets: a copy task, whose loss still falls.)
  const auto in = ids.slice(1, 0, c.context), target = fault == "tiny_step_targets_inputs" ? in : ids.slice(1, 1);
  TinyStepTiming r;
  r.step_s = std::numeric_limits<double>::infinity();
  for (int i = 0; i < std::max(1, repeats) + 1; ++i) {
    const bool last = i == std::max(1, repeats);
    const auto t0 = Clock::now();
    if (fault != "tiny_step_no_zero_grad") opt.zero_grad();  // (a planted fault: gradients summed over the steps)
    const auto hidden = model->features(in);
    const auto logits = model->head(hidden);
    const auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, c.vocab}), target.reshape({-1}));
    if (fault != "tiny_step_no_backward") loss.backward();  // (a planted fault: the step timed without it)
    // The last step's head gradient, as its update will read it (a copy: the clock's cost is one small tensor).
    torch::Tensor head_grad;
    if (last && model->head->weight.grad().defined()) head_grad = model->head->weight.grad().clone();
    opt.step();
    if (i > 0) r.step_s = std::min(r.step_s, seconds_since(t0));
    r.losses.push_back(loss.item<double>());  // after the clock: what the step computed, for the check
    if (i == 0) r.first_logits = host_floats(logits.detach().contiguous());
    if (last) {
      r.last_logits = host_floats(logits.detach().contiguous());
      r.last_hidden = host_floats(hidden.detach().contiguous());
      if (head_grad.defined()) r.last_head_grad = host_floats(head_grad.contiguous());
    }
  }
  r.width = c.d_model;
  double linear = 0;
  for (const auto& m : model->modules(/*include_self=*/false))
    if (const auto* lin = m->as<torch::nn::Linear>()) linear += static_cast<double>(lin->weight.numel());
  r.params = 0;
  for (const auto& p : model->parameters()) r.params += p.numel();
  r.batch = batch;
  r.tokens = c.context;
  r.vocab = c.vocab;
  for (int b = 0; b < batch; ++b) {
    const auto row = ids[b].contiguous();
    r.ids.emplace_back(row.data_ptr<std::int64_t>(), row.data_ptr<std::int64_t>() + row.numel());
  }
  const double pairs = c.context * (c.context + 1.0) / 2;
  // A planted fault, as in the block's count: the FLOPs of one token per sequence.
  const double tokens = fault == "flops_per_token_only" ? 1.0 : c.context;
  // (A planted fault counts attention's score and value products once per head, not per layer.)
  const double attention_layers = fault == "tiny_attention_flops_by_heads" ? c.n_head : c.n_layer;
  const double fwd = batch * (2.0 * linear * tokens + 2.0 * 2.0 * c.d_model * pairs * attention_layers);
  r.flops = 3.0 * fwd;
  return r;
}

}  // namespace claimcheck::train
