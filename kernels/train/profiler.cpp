// Chapter 6 in LibTorch: the block's training step profiled through RecordFunction observers, each operator's
// self time put into the series' five buckets (GEMM, attention, copy_, launch overhead, idle).
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
#include <unordered_set>

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
}  // namespace

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
  std::string fault;  // the bucket map's planted faults (profile_bucket_of)
};
thread_local Recorder* t_recorder = nullptr;
// Which frame an exit closes: events that end out of order (or on another thread) close their own frame, and any
// frame opened inside it and left open is dropped, never matched to the wrong event.
struct FrameRef : at::ObserverContext {
  Recorder* recorder = nullptr;
  std::size_t depth = 0;  // stack size after the push
};

const std::set<std::string>& gemm_ops() {
  static const std::set<std::string> s = {"aten::mm",     "aten::addmm",  "aten::bmm",    "aten::baddbmm",
                                          "aten::addbmm", "aten::matmul", "aten::linear", "aten::addmv",
                                          "aten::mv",     "aten::dot",    "aten::vdot",   "aten::_addmm_activation"};
  return s;
}
const std::set<std::string>& copy_ops() {
  static const std::set<std::string> s = {"aten::copy_", "aten::to", "aten::_to_copy", "aten::contiguous",
                                          "aten::clone"};
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
  if (r->stack.empty())
    r->idle_since = t1;
  else
    r->stack.back().children += dur;
  std::string bucket = profile_bucket_of(f.name, f.in_attention, r->fault);
  std::vector<std::string> frames;
  frames.reserve(r->stack.size() + 1);
  for (const auto& a : r->stack) frames.push_back(a.name);
  frames.push_back(f.name);
  auto& at_path = r->by_path[{std::move(frames), bucket}];
  at_path.first += self;
  ++at_path.second;
}

}  // namespace

std::string profile_bucket_of(const std::string& op, bool in_attention, const std::string& fault) {
  std::string bucket = "other_ops";
  if (in_attention || attention_name(op)) bucket = "attention";
  // A planted fault: a GEMM map written from a forward trace, without backward's aten::mm.
  else if (gemm_ops().count(op) && !(fault == "buckets_gemm_forward_only" && op == "aten::mm"))
    bucket = "gemm";
  // A planted fault: copies filed under the other operators.
  else if (copy_ops().count(op))
    bucket = fault == "buckets_copy_in_other" ? "other_ops" : "copy_";
  if (bucket == "copy_" && fault == "buckets_drop_copy") bucket.clear();  // planted: a bucket map without copy_
  // A planted fault: a GEMM map without the batched products (which chapter 3's step runs only inside attention).
  if (bucket == "gemm" && fault == "buckets_no_bmm" && (op == "aten::bmm" || op == "aten::baddbmm"))
    bucket = "other_ops";
  return bucket;
}

const std::vector<std::string>& profile_bucket_names() {
  static const std::vector<std::string> n = {"gemm", "attention", "copy_", "other_ops", "gaps"};
  return n;
}

ProfileBuckets profile_step(std::uint64_t seed, int batch, const std::string& fault) {
  // Chapter 3's model and step: embedding, 4 pre-LN blocks, head, cross-entropy, AdamW.
  torch::manual_seed(seed);
  const TinyConfig c;
  TinyGPT net(c);
  torch::optim::AdamW opt(net->parameters(), torch::optim::AdamWOptions(3e-4));
  const auto ids = torch::randint(0, c.vocab, {batch, c.context + 1}, torch::kLong);
  const auto in = ids.slice(1, 0, c.context), target = ids.slice(1, 1);
  const auto step = [&] {
    opt.zero_grad();
    const auto logits = net->forward(in);
    torch::nn::functional::cross_entropy(logits.reshape({-1, c.vocab}), target.reshape({-1})).backward();
    if (fault != "profile_step_no_update") opt.step();  // (a planted fault: a step without its update)
  };
  step();  // warm-up: first-call allocations and kernel selection are not the step

  Recorder rec;
  rec.fault = fault;
  // A planted fault: observers without the autograd nodes' scope (their aten calls still seen, their own time not).
  const bool no_backward_scope = fault == "profiler_no_backward_scope";
  double wall = 0;
  {
    struct Observing {  // removed however the step ends
      Observing(Recorder* r, bool backward_nodes) {
        t_recorder = r;
        std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> scopes = {at::RecordScope::FUNCTION,
                                                                                  at::RecordScope::USER_SCOPE};
        if (backward_nodes) scopes.insert(at::RecordScope::BACKWARD_FUNCTION);
        handle = at::addThreadLocalCallback(at::RecordFunctionCallback(on_enter, on_exit).scopes(scopes));
      }
      ~Observing() {
        at::removeCallback(handle);
        t_recorder = nullptr;
      }
      at::CallbackHandle handle = 0;
    } observing(&rec, !no_backward_scope);
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

}  // namespace claimcheck::train
