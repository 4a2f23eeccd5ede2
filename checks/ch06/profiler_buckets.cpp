// ch06.profiler_buckets — 「profiler 表怎么读：慢先归到 GEMM、attention、copy_、launch 开销或 GPU 空转之一」
// Chapter 3's training step (the tiny character Transformer, AdamW) profiled through PyTorch's RecordFunction
// observers: each operator's self time in one bucket (GEMM, attention, copy_, other operators) and the time between
// top-level operators (launch overhead / idle, timed as the intervals between them). The step's wall time is measured
// apart; the buckets must account for it. Each event's bucket is held against the answer key's
// (reference/data/profiler/buckets.json, applied to the event's place in the call tree): a misfiled operator fails,
// whatever its share.
#include "claimcheck/check.h"
#include "claimcheck/ref/profiler.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/perf.h"
#endif

static void profiler_buckets(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace train = claimcheck::train;
  // Prepare.
  const int batch = ctx.input("batch").get<int>();
  const claimcheck::ref::BucketTable key = claimcheck::ref::load_bucket_table(ctx.input_path("answer_key"));

  // Run.
  const auto p = train::profile_step(ctx.seed(), batch, ctx.planted_fault());

  // Verify.
  double total = 0;
  nlohmann::json shares = nlohmann::json::object();
  for (const auto& b : train::profile_bucket_names()) {
    const double s = p.seconds.count(b) ? p.seconds.at(b) : 0.0;
    total += s;
    shares[b] = 100 * s / p.wall_s;
  }
  ctx.measure(100 * total / p.wall_s, "%");
  ctx.measure("operator_events", p.operators, "count");
  bool gemm_largest = true;
  for (const auto& b : train::profile_bucket_names())
    gemm_largest = gemm_largest && shares["gemm"].get<double>() >= shares[b].get<double>();
  ctx.measure_bool("gemm_largest", gemm_largest);
  // Event by event against the answer key: the places in the call tree whose bucket differs, and the time they carry.
  int misfiled = 0;
  double misfiled_s = 0;
  nlohmann::json misfiled_ops = nlohmann::json::array();
  std::map<std::string, double> key_seconds;
  for (const auto& op : p.ops) {
    const std::string want = claimcheck::ref::bucket_of(key, op.frames);
    key_seconds[want] += op.self_s;
    if (op.bucket == want) continue;
    ++misfiled;
    misfiled_s += op.self_s;
    if (misfiled_ops.size() < 8) {
      std::string path;
      for (const auto& f : op.frames) path += (path.empty() ? "" : " > ") + f;
      misfiled_ops.push_back({{"op", path},
                              {"bucket", op.bucket.empty() ? "(none)" : op.bucket},
                              {"answer_key", want},
                              {"self_ms", op.self_s * 1e3},
                              {"calls", op.calls}});
    }
  }
  ctx.measure("misfiled_operators", misfiled, "count");
  // The map itself, operator by operator of the answer key's lists (outside attention): one the step never ran outside
  // attention (chapter 3's step has no batched product there) is misfiled the day another model runs it.
  nlohmann::json map_misfiled = nlohmann::json::array();
  for (const auto& rule : key.rules)
    for (const auto& op : rule.operators) {
      const std::string want = claimcheck::ref::bucket_of(key, {op}),
                        got = train::profile_bucket_of(op, false, ctx.planted_fault());
      if (got != want)
        map_misfiled.push_back({{"op", op}, {"bucket", got.empty() ? "(none)" : got}, {"answer_key", want}});
    }
  ctx.measure("map_misfiles_key_operators", static_cast<double>(map_misfiled.size()), "count");
  ctx.detail("map_misfiled", map_misfiled);
  // The backward runs as autograd nodes (MmBackward0, ...), each a frame of its own inside the engine's
  // "autograd::engine::evaluate_function: MmBackward0" and around the aten calls it makes: an observer blind to the
  // nodes' scope files their own time under the engine's frame, and no operator is misfiled.
  std::set<std::string> frames, evaluated, nodes;
  const std::string engine = "autograd::engine::evaluate_function: ";
  for (const auto& op : p.ops)
    for (const auto& f : op.frames) {
      frames.insert(f);
      if (f.rfind(engine, 0) == 0) evaluated.insert(f.substr(engine.size()));
    }
  for (const auto& n : evaluated)
    if (frames.count(n)) nodes.insert(n);
  // The step's update: LibTorch's AdamW applies each parameter's step with one addcdiv_, so the calls the observers
  // saw over the tensors the answer key counts in chapter 3's model (inputs.model) is 1 for a whole training step.
  int updates = 0;
  for (const auto& op : p.ops)
    if (!op.frames.empty() && op.frames.back() == "aten::addcdiv_") updates += op.calls;
  const auto tensors = claimcheck::ref::gpt_parameter_tensors(
      claimcheck::ref::parse_gpt_shape(ctx.input("model").dump(), ctx.claim_id() + ": inputs.model"));
  ctx.measure("updates_per_parameter_tensor", updates / static_cast<double>(tensors), "ratio");
  ctx.measure("autograd_nodes_observed", static_cast<double>(nodes.size()), "count");
  ctx.measure("autograd_nodes_unobserved", static_cast<double>(evaluated.size() - nodes.size()), "count");
  ctx.detail("autograd_nodes", std::vector<std::string>(nodes.begin(), nodes.end()));
  nlohmann::json key_shares = nlohmann::json::object();
  for (const auto& [b, s] : key_seconds) key_shares[b] = 100 * s / p.wall_s;
  ctx.detail("answer_key", {{"shares_percent", key_shares},
                            {"misfiled_ms", misfiled_s * 1e3},
                            {"misfiled", misfiled_ops},
                            {"places_in_call_tree", p.ops.size()}});
  nlohmann::json parts = nlohmann::json::array(), top = nlohmann::json::array();
  for (const auto& b : train::profile_bucket_names()) parts.push_back({{"name", b}, {"value", p.seconds.at(b) * 1e3}});
  for (const auto& [name, s] : p.top_ops) top.push_back({{"op", name}, {"self_ms", s * 1e3}});
  ctx.detail("shares_percent", shares);
  ctx.detail("top_ops", top);
  ctx.detail("stacked", nlohmann::json::array({{{"title", "a profiled training step"},
                                                {"unit", "ms"},
                                                {"y_label", "ms"},
                                                {"bars", {{{"name", "step"}, {"parts", parts}}}}}}));
  ctx.assumption("observers: " + p.api + "; " + std::to_string(p.operators) + " operator events; wall " +
                 std::to_string(p.wall_s * 1e3) + " ms around chapter 3's step (batch " + std::to_string(batch) +
                 " x 128 characters: forward, "
                 "cross-entropy, backward, AdamW), after a warm-up step");
  ctx.assumption(
      "on a CPU there is no device to idle: the gaps bucket is the C++ between top-level operators "
      "(dispatch, the optimizer's loop), the CPU counterpart of launch overhead");
#endif
}
CLAIMCHECK_REGISTER(profiler_buckets).claim("ch06.profiler_buckets");
