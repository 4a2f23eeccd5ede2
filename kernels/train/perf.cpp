// Chapter 6 in LibTorch: a Llama-shaped block's training step timed per phase, the same step profiled through
// RecordFunction observers and bucketed, a KV cache allocated for a config.
#include "claimcheck/train/perf.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <limits>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>

#include <kineto/ActivityType.h>  // libkineto's activity kinds (shipped in LibTorch's include folder)
#include <torch/csrc/autograd/profiler_kineto.h>

#include <torch/cuda.h>

#include "claimcheck/base/timing.h"
#include "decoder.h"

namespace claimcheck::train {
namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The layers of a decoder config, fp32, with RoPE tables for `tokens` positions.
struct LayerStack {
  LayerStack(const DecoderConfig& c, std::uint64_t seed, int tokens) : c(c) {
    torch::manual_seed(seed);
    for (int i = 0; i < c.layers; ++i) {
      layers.push_back(DecoderLayer(c));
      torch::NoGradGuard ng;
      for (auto& p : layers.back()->parameters())
        if (p.dim() == 2) p.normal_(0.0, 0.02);
    }
    auto inv = torch::pow(c.rope_theta, -torch::arange(0, c.head_dim, 2, torch::kFloat) / static_cast<double>(c.head_dim));
    auto ang = torch::outer(torch::arange(tokens, torch::kFloat), inv);
    cos = torch::cat({ang.cos(), ang.cos()}, -1);
    sin = torch::cat({ang.sin(), ang.sin()}, -1);
  }
  std::vector<torch::Tensor> parameters() const {
    std::vector<torch::Tensor> ps;
    for (const auto& l : layers)
      for (const auto& p : l->parameters()) ps.push_back(p);
    return ps;
  }
  torch::Tensor forward(torch::Tensor x, bool recompute) {
    DecoderRun run;
    for (auto& l : layers) x = recompute ? checkpointed_layer(*l, x, cos, sin, run) : l->forward(x, cos, sin, run);
    return x;
  }
  // 2 FLOP per weight per token in every Linear, plus causal QK^T and PV.
  double forward_flops(int batch, int tokens) const {
    double linear = 0;
    for (const auto& l : layers)
      for (const auto& [name, p] : l->projs) linear += static_cast<double>(p->base->weight.numel());
    const double pairs = tokens * (tokens + 1.0) / 2;
    const double attn = 2.0 * 2.0 * static_cast<double>(c.heads * c.head_dim) * pairs * static_cast<double>(layers.size());
    return batch * (2.0 * linear * tokens + attn);
  }
  std::int64_t linear_params() const {
    std::int64_t n = 0;
    for (const auto& l : layers)
      for (const auto& [name, p] : l->projs) n += p->base->weight.numel();
    return n;
  }
  DecoderConfig c;
  std::vector<DecoderLayer> layers;
  torch::Tensor cos, sin;
};

// The batch as a data pipeline hands it over (bf16 storage), and the fixed projection the loss reads.
struct StepData {
  StepData(const DecoderConfig& c, int batch, int tokens) {
    stored = torch::randn({batch, tokens, c.hidden}).to(torch::kBFloat16);
    proj = torch::randn({batch, tokens, c.hidden}) / std::sqrt(static_cast<double>(c.hidden));
  }
  // A copy whatever the dtype (a bf16 `stored` would otherwise be returned itself, its .grad kept across steps).
  torch::Tensor input(torch::Dtype dtype = torch::kFloat) const {
    return stored.to(dtype, /*non_blocking=*/false, /*copy=*/true).requires_grad_(true);
  }
  torch::Tensor stored, proj;
};

}  // namespace

BlockStepTiming time_block_step(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                int repeats, const std::string& fault, const BlockStepOn& on) {
  DecoderConfig c = read_decoder_config(config);
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
  const ScopedIntraOpThreads threads_guard(on.cuda ? 0 : on.threads);  // BlockStepOn::threads
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
  torch::optim::AdamW opt(block.parameters(), torch::optim::AdamWOptions(1e-4));
  BlockStepTiming r;
  r.forward_s = r.backward_s = r.step_s = std::numeric_limits<double>::infinity();
  std::vector<double> ratios;
  for (int i = 0; i < std::max(1, repeats) + 1; ++i) {  // the first run warms up
    opt.zero_grad();
    const auto x = data.input(dtype);
    const auto t0 = now();
    const auto loss = (block.forward(x, recompute) * data.proj).sum();
    const auto t1 = now();
    loss.backward();
    const auto t2 = now();
    opt.step();
    const auto t3 = now();
    if (i == 0) continue;
    const double fwd = std::chrono::duration<double>(t1 - t0).count(), bwd = std::chrono::duration<double>(t2 - t1).count();
    ratios.push_back(bwd / fwd);
    r.forward_s = std::min(r.forward_s, fwd);
    r.backward_s = std::min(r.backward_s, bwd);
    r.step_s = std::min(r.step_s, std::chrono::duration<double>(t3 - t0).count());
  }
  r.backward_over_forward = base::median(ratios);
  if (!on.cuda) {  // one more step under the allocator's peak counter (the optimizer state exists by now)
    opt.zero_grad();
    reset_peak();
    (block.forward(data.input(dtype), recompute) * data.proj).sum().backward();
    opt.step();
    r.step_peak_bytes = peak_bytes() - base;
  }
  if (!on.cuda) {  // the library's GEMM at the step's largest shape, best of the same number of runs
    torch::NoGradGuard ng;
    const auto a = torch::randn({static_cast<std::int64_t>(batch) * tokens, c.hidden}, torch::dtype(dtype));
    const auto w = torch::randn({c.hidden, c.intermediate}, torch::dtype(dtype));
    r.library_gemm_s = std::numeric_limits<double>::infinity();
    for (int i = 0; i < std::max(1, repeats) + 1; ++i) {
      const auto t0 = now();
      const auto out = torch::mm(a, w);
      const double s = since(t0);
      if (i > 0) r.library_gemm_s = std::min(r.library_gemm_s, s);
    }
    r.library_gemm_flops = 2.0 * static_cast<double>(batch) * tokens * static_cast<double>(c.hidden) *
                           static_cast<double>(c.intermediate);
  }
  // A planted fault: the FLOPs of one token for those of the step.
  r.forward_flops = block.forward_flops(batch, fault == "flops_per_token_only" ? 1 : tokens);
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

TinyStepTiming time_tiny_step(std::uint64_t seed, int batch, int repeats) {
  torch::manual_seed(seed);
  const TinyConfig c;
  TinyGPT model(c);
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-4));
  const auto ids = torch::randint(0, c.vocab, {batch, c.context + 1}, torch::kLong);
  const auto in = ids.slice(1, 0, c.context), target = ids.slice(1, 1);
  TinyStepTiming r;
  r.step_s = std::numeric_limits<double>::infinity();
  for (int i = 0; i < std::max(1, repeats) + 1; ++i) {
    const auto t0 = Clock::now();
    opt.zero_grad();
    const auto logits = model->forward(in);
    const auto loss = torch::nn::functional::cross_entropy(logits.reshape({-1, c.vocab}), target.reshape({-1}));
    loss.backward();
    opt.step();
    if (i > 0) r.step_s = std::min(r.step_s, since(t0));
  }
  double linear = 0;
  for (const auto& m : model->modules(/*include_self=*/false))
    if (const auto* lin = m->as<torch::nn::Linear>()) linear += static_cast<double>(lin->weight.numel());
  r.params = 0;
  for (const auto& p : model->parameters()) r.params += p.numel();
  r.batch = batch;
  r.tokens = c.context;
  const double pairs = c.context * (c.context + 1.0) / 2;
  const double fwd = batch * (2.0 * linear * c.context + 2.0 * 2.0 * c.d_model * pairs * c.n_layer);
  r.flops = 3.0 * fwd;
  return r;
}

// ---- the profiler ------------------------------------------------------------------------------------------
namespace {

struct Frame {
  std::string name;
  Clock::time_point t0;
  double children = 0;
  bool in_attention = false;
};
struct Recorder {
  std::vector<Frame> stack;
  // Every event's self time (and calls) by its frames (outermost first) and the bucket it went to ("" where none
  // took it): the buckets' and the operators' totals are sums over it.
  std::map<std::pair<std::vector<std::string>, std::string>, std::pair<double, int>> by_path;
  // The time outside any top-level operator, timed as intervals: from the step's start (or the last top-level
  // exit) to the next top-level entry, and from the last exit to the step's end.
  double gaps = 0;
  Clock::time_point idle_since;
  int events = 0;
  bool drop_copy = false;
  bool gemm_forward_only = false;
  bool copy_in_other = false;
};
thread_local Recorder* t_recorder = nullptr;
// Which frame an exit closes: events that end out of order (or on another thread) close their own frame, and any
// frame opened inside it and left open is dropped, never matched to the wrong event.
struct FrameRef : at::ObserverContext {
  Recorder* recorder = nullptr;
  std::size_t depth = 0;  // stack size after the push
};

const std::set<std::string>& gemm_ops() {
  static const std::set<std::string> s = {"aten::mm",   "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul",
                                          "aten::linear", "aten::addmv", "aten::mv", "aten::dot"};
  return s;
}
const std::set<std::string>& copy_ops() {
  static const std::set<std::string> s = {"aten::copy_", "aten::to", "aten::_to_copy", "aten::contiguous", "aten::clone"};
  return s;
}
bool attention_name(const std::string& n) {
  return n.find("scaled_dot_product") != std::string::npos || n.find("ScaledDotProduct") != std::string::npos ||
         n.find("flash_attention") != std::string::npos;
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  Recorder* r = t_recorder;
  if (!r) return nullptr;
  Frame f;
  f.name = fn.name();
  f.in_attention = attention_name(f.name) || (!r->stack.empty() && r->stack.back().in_attention);
  f.t0 = Clock::now();
  if (r->stack.empty()) r->gaps += std::chrono::duration<double>(f.t0 - r->idle_since).count();
  r->stack.push_back(std::move(f));
  auto ref = std::make_unique<FrameRef>();
  ref->recorder = r;
  ref->depth = r->stack.size();
  return ref;
}

void on_exit(const at::RecordFunction&, at::ObserverContext* ctx) {
  const auto* ref = dynamic_cast<const FrameRef*>(ctx);
  Recorder* r = ref ? ref->recorder : nullptr;
  if (!r || r != t_recorder || ref->depth == 0 || ref->depth > r->stack.size()) return;
  const auto t1 = Clock::now();
  const Frame f = std::move(r->stack[ref->depth - 1]);
  r->stack.resize(ref->depth - 1);
  const double dur = std::chrono::duration<double>(t1 - f.t0).count(), self = std::max(0.0, dur - f.children);
  ++r->events;
  if (r->stack.empty()) r->idle_since = t1;
  else r->stack.back().children += dur;
  std::string bucket = "other_ops";
  if (f.in_attention) bucket = "attention";
  // A planted fault: a GEMM map written from a forward trace, without backward's aten::mm.
  else if (gemm_ops().count(f.name) && !(r->gemm_forward_only && f.name == "aten::mm")) bucket = "gemm";
  // A planted fault: copies filed under the other operators.
  else if (copy_ops().count(f.name)) bucket = r->copy_in_other ? "other_ops" : "copy_";
  if (bucket == "copy_" && r->drop_copy) bucket.clear();  // the planted fault: a bucket map without copy_
  std::vector<std::string> frames;
  frames.reserve(r->stack.size() + 1);
  for (const auto& a : r->stack) frames.push_back(a.name);
  frames.push_back(f.name);
  auto& at_path = r->by_path[{std::move(frames), bucket}];
  at_path.first += self;
  ++at_path.second;
}

}  // namespace

const std::vector<std::string>& profile_bucket_names() {
  static const std::vector<std::string> n = {"gemm", "attention", "copy_", "other_ops", "gaps"};
  return n;
}

ProfileBuckets profile_step(const std::string& model, const std::filesystem::path& config, std::uint64_t seed,
                            int batch, int tokens, const std::string& fault) {
  std::function<void()> step;
  std::shared_ptr<void> keep;  // what the step closes over
  if (model == "tiny") {  // chapter 3's model and step: embedding, 4 pre-LN blocks, head, cross-entropy, AdamW
    torch::manual_seed(seed);
    const TinyConfig c;
    struct Tiny {
      explicit Tiny(const TinyConfig& c) : net(c), opt(net->parameters(), torch::optim::AdamWOptions(3e-4)) {}
      TinyGPT net;
      torch::optim::AdamW opt;
      torch::Tensor in, target;
    };
    auto t = std::make_shared<Tiny>(c);
    const auto ids = torch::randint(0, c.vocab, {batch, c.context + 1}, torch::kLong);
    t->in = ids.slice(1, 0, c.context);
    t->target = ids.slice(1, 1);
    step = [t, c] {
      t->opt.zero_grad();
      const auto logits = t->net->forward(t->in);
      torch::nn::functional::cross_entropy(logits.reshape({-1, c.vocab}), t->target.reshape({-1})).backward();
      t->opt.step();
    };
    keep = t;
  } else if (model == "block") {
    const DecoderConfig c = read_decoder_config(config);
    struct Blk {
      Blk(const DecoderConfig& c, std::uint64_t seed, int batch, int tokens)
          : block(c, seed, tokens), data(c, batch, tokens), opt(block.parameters(), torch::optim::AdamWOptions(1e-4)) {}
      LayerStack block;
      StepData data;
      torch::optim::AdamW opt;
    };
    auto b = std::make_shared<Blk>(c, seed, batch, tokens);
    step = [b] {
      b->opt.zero_grad();
      (b->block.forward(b->data.input(), false) * b->data.proj).sum().backward();
      b->opt.step();
    };
    keep = b;
  } else {
    throw std::invalid_argument("profile_step: model '" + model + "' is neither 'tiny' nor 'block'");
  }
  step();  // warm-up: first-call allocations and kernel selection are not the step

  Recorder rec;
  rec.drop_copy = fault == "buckets_drop_copy";
  rec.gemm_forward_only = fault == "buckets_gemm_forward_only";
  rec.copy_in_other = fault == "buckets_copy_in_other";
  double wall = 0;
  {
    struct Observing {  // removed however the step ends
      explicit Observing(Recorder* r) {
        t_recorder = r;
        handle = at::addThreadLocalCallback(
            at::RecordFunctionCallback(on_enter, on_exit)
                .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
      }
      ~Observing() {
        at::removeCallback(handle);
        t_recorder = nullptr;
      }
      at::CallbackHandle handle = 0;
    } observing(&rec);
    const auto t0 = Clock::now();
    rec.idle_since = t0;
    step();
    const auto t1 = Clock::now();
    wall = std::chrono::duration<double>(t1 - t0).count();
    if (rec.stack.empty()) rec.gaps += std::chrono::duration<double>(t1 - rec.idle_since).count();
  }

  ProfileBuckets out;
  out.api = "at::addThreadLocalCallback (RecordFunction observers: FUNCTION, BACKWARD_FUNCTION, USER_SCOPE)";
  out.wall_s = wall;
  out.operators = rec.events;
  for (const auto& b : profile_bucket_names()) out.seconds[b] = 0;
  out.seconds["gaps"] = rec.gaps;
  std::map<std::string, double> self_by_op;
  for (const auto& [key, v] : rec.by_path) {
    out.ops.push_back({key.first, key.second, v.first, v.second});
    if (!key.second.empty()) out.seconds[key.second] += v.first;  // "": the time no bucket took is lost
    self_by_op[key.first.back()] += v.first;
  }
  std::vector<std::pair<std::string, double>> ops(self_by_op.begin(), self_by_op.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (ops.size() > 8) ops.resize(8);
  out.top_ops = ops;
  return out;
}

KvCacheMeasure allocate_kv_cache(const std::filesystem::path& config, int tokens, const std::string& fault) {
  if (tokens < 1) throw std::invalid_argument("allocate_kv_cache: tokens must be >= 1");
  const DecoderConfig c = read_decoder_config(config);
  install_counting_allocator();
  KvCacheMeasure m;
  m.tokens = tokens;
  m.layers = c.layers;
  m.kv_heads = fault == "kv_full_heads" ? c.heads : c.kv_heads;
  m.head_dim = c.head_dim;
  const std::int64_t before = live_bytes();
  std::vector<torch::Tensor> cache;
  for (std::int64_t l = 0; l < c.layers; ++l)
    for (int kv = 0; kv < 2; ++kv)
      cache.push_back(torch::empty({1, m.kv_heads, tokens, c.head_dim}, torch::kBFloat16));
  m.bytes = live_bytes() - before;
  m.tensors = static_cast<std::int64_t>(cache.size());
  return m;
}

bool torch_cuda_available(std::string* why) {
  if (torch::cuda::is_available()) return true;
  if (why)
    *why = std::string("LibTorch ") + TORCH_VERSION + " sees no CUDA device (no GPU, or a build that links only "
           "libtorch_cpu: the cuda preset links LibTorch's CUDA libraries)";
  return false;
}

ItemSyncTiming item_sync_timing(std::uint64_t seed, int steps, int rare, int rounds, const std::string& fault) {
  if (fault != "" && fault != "item_every_step") throw std::invalid_argument("item_sync_timing: unknown fault '" + fault + "'");
  if (steps < 1 || rare < 1 || rounds < 1) throw std::invalid_argument("item_sync_timing: steps, rare and rounds must be positive");
  std::string why;
  if (!torch_cuda_available(&why)) throw std::runtime_error(why);
  ItemSyncTiming r;
  r.steps = steps, r.rare = rare, r.rounds = rounds, r.width = 1024, r.layers = 4, r.batch = 128;
  const torch::Device dev(torch::kCUDA);
  torch::manual_seed(seed);
  torch::nn::Sequential net;
  for (int i = 0; i < r.layers; ++i) {
    net->push_back(torch::nn::Linear(r.width, r.width));
    net->push_back(torch::nn::ReLU());
  }
  net->push_back(torch::nn::Linear(r.width, 16));
  net->to(dev);
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(1e-4));
  const torch::Tensor x = torch::randn({r.batch, r.width}, torch::TensorOptions().device(dev));
  const torch::Tensor y = torch::randint(0, 16, {r.batch}, torch::TensorOptions().dtype(torch::kLong).device(dev));
  auto step = [&] {
    opt.zero_grad();
    torch::Tensor loss = torch::nn::functional::cross_entropy(net->forward(x), y);
    loss.backward();
    opt.step();
    return loss;
  };
  float sink = 0;
  auto run = [&](int every) {
    torch::cuda::synchronize();
    const auto t0 = Clock::now();
    for (int i = 0; i < steps; ++i) {
      torch::Tensor loss = step();
      if ((i + 1) % every == 0) sink += loss.item<float>();  // waits for every kernel queued so far
    }
    torch::cuda::synchronize();
    return since(t0) / steps;
  };
  run(rare);  // warm-up: kernels loaded, the allocator's cache filled
  const int rare_every = fault == "item_every_step" ? 1 : rare;
  std::vector<double> every, rarely;
  for (int k = 0; k < rounds; ++k) {
    every.push_back(run(1));
    rarely.push_back(run(rare_every));
  }
  r.every_step_s = base::median(every);
  r.rare_step_s = base::median(rarely);
  // The profiler: `rounds` more interleaved rounds of each, CUDA activity only (less of the profiler's own overhead),
  // the GPU's busy intervals merged: kernels, copies and memsets (libkineto's CONCURRENT_KERNEL, GPU_MEMCPY,
  // GPU_MEMSET), not the annotation or sync ranges that also carry the CUDA device type.
  auto idle_share = [&](int every_n) {
    namespace prof = torch::autograd::profiler;
    namespace impl = torch::profiler::impl;
    const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO);
    const std::set<impl::ActivityType> acts{impl::ActivityType::CUDA};
    prof::prepareProfiler(cfg, acts);
    prof::enableProfiler(cfg, acts);
    run(every_n);
    const auto result = prof::disableProfiler();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> busy;
    for (const auto& e : result->events()) {
      const auto kind = static_cast<libkineto::ActivityType>(e.activityType());
      const bool work = kind == libkineto::ActivityType::CONCURRENT_KERNEL ||
                        kind == libkineto::ActivityType::GPU_MEMCPY || kind == libkineto::ActivityType::GPU_MEMSET;
      if (work && e.deviceType() == c10::DeviceType::CUDA && e.durationNs() > 0)
        busy.emplace_back(e.startNs(), e.startNs() + e.durationNs());
    }
    r.profiled_gpu_events += static_cast<long>(busy.size());
    if (busy.size() < 2) return -1.0;
    std::sort(busy.begin(), busy.end());
    std::uint64_t covered = 0, end = busy.front().first;
    for (const auto& [b, e] : busy) {
      if (e <= end) continue;
      covered += e - std::max(b, end);
      end = e;
    }
    const double span = static_cast<double>(end - busy.front().first);
    return span > 0 ? 1.0 - static_cast<double>(covered) / span : -1.0;
  };
  std::vector<double> idle_every, idle_rare;
  for (int k = 0; k < rounds; ++k) {
    idle_every.push_back(idle_share(1));
    idle_rare.push_back(idle_share(rare_every));
  }
  auto median_or_none = [](std::vector<double> v) {  // -1 when any round saw no GPU activity
    if (std::find(v.begin(), v.end(), -1.0) != v.end()) return -1.0;
    return base::median(std::move(v));
  };
  r.idle_every = median_or_none(idle_every);
  r.idle_rare = median_or_none(idle_rare);
  (void)sink;
  r.device = "CUDA device 0 of " + std::to_string(torch::cuda::device_count());
  return r;
}

}  // namespace claimcheck::train
