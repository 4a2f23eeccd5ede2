// ch04.bytes_per_param_measured — 「每个可训练参数 16 字节」, counted: one AdamW step of a Llama-shaped decoder
// (reference/data/configs/llama-scaled-ch04.json) under the counting allocator, every live byte attributed to
// what holds it, in two modes: PyTorch autocast as people run it, and the series' table (bf16 weights + fp32 master).
#include "claimcheck/check.h"

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include <algorithm>
#include <cmath>
#include <random>

#include "ch04_memory.h"
#include "claimcheck/ref/chat.h"
#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/ref/optim.h"
#include "claimcheck/ref/stats.h"
#endif

static void bytes_per_param_measured(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace train = claimcheck::train;
  namespace ref = claimcheck::ref;
  // Prepare.
  const auto config = ctx.input_path("config");
  const int tokens = ctx.input("tokens").get<int>();

  // Run: one step in each mode.
  const train::StepMemory a = train::measure_training_step(config, "autocast", ctx.seed(), tokens, ctx.planted_fault());
  const train::StepMemory b =
      train::measure_training_step(config, "bf16_master", ctx.seed(), tokens, ctx.planted_fault());

  // Verify: the state the allocator attributes after the step, per trainable parameter.
  auto per_param = [](const train::StepMemory& m) {
    return ch04::sum_of(m.timeline.back(), {"parameters", "gradients", "optimizer_state", "master_weights"}) /
           static_cast<double>(m.trainable);
  };
  ctx.measure(per_param(a), "B");
  ctx.measure("series_table_mode", per_param(b), "B");
  const double n = static_cast<double>(b.trainable);
  auto role = [](const train::StepMemory& m, const std::string& name) {
    for (const auto& [k, v] : m.roles)
      if (k == name) return static_cast<double>(v);
    return 0.0;
  };
  ctx.measure("series_bf16_weights", role(b, "bf16 weights") / n, "B");
  ctx.measure("series_gradients", role(b, "bf16 gradients") / n, "B");
  ctx.measure("series_fp32_master", role(b, "fp32 master") / n, "B");
  ctx.measure("series_adam_m_v", (role(b, "Adam m (fp32)") + role(b, "Adam v (fp32)")) / n, "B");
  // The allocator's attribution after the step, category by category, against the pieces counted from the tensors
  // themselves, in both modes: the totals above add the categories up, so state filed under another of them (Adam's
  // v as gradients, the master as parameters) would not move them. The largest difference, in bytes per parameter.
  double misfiled = 0;
  for (const train::StepMemory* m : {&a, &b}) {
    const bool master = m == &b;
    const double np = static_cast<double>(m->trainable);
    const auto& cat = m->timeline.back().bytes;
    const std::pair<const char*, double> pairs[] = {
        {"parameters", role(*m, master ? "bf16 weights" : "fp32 weights")},
        {"gradients", role(*m, master ? "bf16 gradients" : "fp32 gradients")},
        {"master_weights", master ? role(*m, "fp32 master") : 0.0},
        {"optimizer_state", role(*m, "Adam m (fp32)") + role(*m, "Adam v (fp32)")}};
    for (const auto& [c, bytes] : pairs)
      misfiled = std::max(misfiled, std::fabs(static_cast<double>(cat.at(c)) - bytes) / np);
  }
  ctx.measure("categories_vs_tensors", misfiled, "B");
  // What lives only between a forward and its backward (autocast's bf16 copies, the saved activations) is gone after
  // the step, in both modes, and so is every byte no piece of state owns (temporaries: an optimizer that keeps an
  // fp32 copy of each gradient holds 4 bytes per parameter the roles above do not count): bytes per parameter left.
  double leftover = 0;
  for (const train::StepMemory* m : {&a, &b}) {
    const auto& cat = m->timeline.back().bytes;
    leftover = std::max(
        leftover, static_cast<double>(cat.at("autocast_copies") + cat.at("saved_activations") + cat.at("temporaries")) /
                      static_cast<double>(m->trainable));
  }
  ctx.measure("forward_bytes_after_step", leftover, "B");
  const auto& fwd = a.timeline.at(1);
  ctx.measure("autocast_copies_at_forward", static_cast<double>(fwd.bytes.at("autocast_copies")) / n, "B");
  // Autocast's bf16 copies at the forward against the answer key's count of what it casts: every Linear's weight
  // (and bias), the lm_head's too (the embedding's matrix where tied), not the embedding's lookup nor the norms: 2
  // bytes each. A forward run without autocast, or one casting what it need not, moves the ratio off 1.
  const ref::ParamCount pc = ref::count_params(ref::load_model_config(config));
  const double cast = static_cast<double>(pc.total() - pc.embedding - pc.layers * pc.norms_per_layer - pc.final_norm +
                                          (pc.lm_head == 0 ? pc.embedding : 0));
  ctx.measure("autocast_copies_vs_ledger", static_cast<double>(fwd.bytes.at("autocast_copies")) / (2 * cast), "ratio");
  ctx.measure("trainable", n / 1e6, "M params");
  // The step's loss, in each mode, against the answer key's fp64 mean next-token NLL of the logits it computed.
  double loss_error = 0;
  for (const train::StepMemory* m : {&a, &b}) {
    const auto T = static_cast<std::int64_t>(m->ids.size());
    const bool sized = T >= 2 && m->vocab > 0 && static_cast<std::int64_t>(m->logits.size()) == T * m->vocab;
    loss_error = ref::worse(
        loss_error,
        sized ? std::fabs(m->loss - ref::masked_mean_nll(m->logits, 1, T, m->vocab, {m->ids}).mean) : INFINITY);
  }
  ctx.measure("loss_matches_reference", loss_error, "abs error");

  // The series-table optimizer's arithmetic against LibTorch's torch::optim::AdamW (the answer key) on the same
  // weights and gradients, both bf16-exact (so that the bf16 parameter holds w0 and its gradient holds g exactly):
  // the fp32 master after the steps against AdamW's fp32 weights, as a share of AdamW's whole update; and the bf16
  // weights are the master rounded to nearest (the answer key's rounding).
  const auto& adamw = ctx.input("adamw");
  const ref::AdamWSettings settings{adamw.at("lr").get<double>(), adamw.at("beta1").get<double>(),
                                    adamw.at("beta2").get<double>(), adamw.at("eps").get<double>(),
                                    adamw.at("weight_decay").get<double>()};
  const auto size = adamw.at("size").get<std::size_t>();
  std::mt19937_64 rng(ctx.seed());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto bf16_exact = [&] {
    std::vector<float> v(size);
    for (auto& e : v) e = static_cast<float>(ref::bf16_value(ref::bf16_nearest(normal(rng))));
    return v;
  };
  const std::vector<float> w0 = bf16_exact();
  std::vector<std::vector<float>> grads;
  for (int i = 0; i < adamw.at("steps").get<int>(); ++i) grads.push_back(bf16_exact());
  // Every fourth element's gradient 2^-24 times smaller at every step (still bf16-exact): there sqrt(v) is about
  // 6e-8, near eps, so an eps other than the answer key's moves those elements' update by much of the whole update.
  for (auto& g : grads)
    for (std::size_t i = 3; i < g.size(); i += 4) g[i] = std::ldexp(g[i], -24);
  // The second half of the steps' gradients 8 times the first's (still bf16-exact): v weighs the two halves at
  // beta2's pace, so a beta2 other than the answer key's moves the later, larger updates, not by v's sampling noise.
  for (std::size_t s = grads.size() / 2; s < grads.size(); ++s)
    for (auto& e : grads[s]) e = std::ldexp(e, 3);
  const train::MasterAdamWRun run = train::master_adamw_steps(w0, grads, ctx.planted_fault());
  const std::vector<float> want = ref::torch_adamw_steps(w0, grads, settings);
  double diff = 0, update = 0;
  bool rounded = run.weights_bf16.size() == size;
  for (std::size_t i = 0; i < size; ++i) {
    diff = std::max(diff, std::fabs(static_cast<double>(run.master.at(i)) - want[i]));
    update = std::max(update, std::fabs(static_cast<double>(want[i]) - w0[i]));
    rounded = rounded && run.weights_bf16[i] == ref::bf16_nearest(run.master[i]);
  }
  ctx.measure("master_update_vs_adamw", update > 0 ? diff / update : INFINITY, "ratio");
  ctx.measure_bool("bf16_weights_are_master_rounded", rounded);

  nlohmann::json split_a = nlohmann::json::object(), split_b = nlohmann::json::object();
  nlohmann::json parts_a = nlohmann::json::array(), parts_b = nlohmann::json::array();
  for (const auto& [k, v] : a.roles) {
    split_a[k] = v / static_cast<double>(a.trainable);
    parts_a.push_back({{"name", k}, {"value", v / static_cast<double>(a.trainable)}});
  }
  for (const auto& [k, v] : b.roles) {
    split_b[k] = v / n;
    parts_b.push_back({{"name", k}, {"value", v / n}});
  }
  const nlohmann::json series = nlohmann::json::array({{{"name", "bf16 weights"}, {"value", 2}},
                                                       {{"name", "bf16 gradients"}, {"value", 2}},
                                                       {{"name", "fp32 master"}, {"value", 4}},
                                                       {{"name", "Adam m (fp32)"}, {"value", 4}},
                                                       {{"name", "Adam v (fp32)"}, {"value", 4}}});
  ctx.detail("split_bytes_per_param", {{"autocast", split_a}, {"series_table", split_b}});
  ctx.detail("timeline_autocast", ch04::timeline_json(a.timeline));
  ctx.detail("timeline_series_table", ch04::timeline_json(b.timeline));
  ctx.detail("step_seconds", {{"autocast", a.seconds}, {"series_table", b.seconds}});
  ctx.detail("stacked",
             nlohmann::json::array(
                 {{{"title", "Bytes per trainable parameter after one AdamW step"},
                   {"unit", "B"},
                   {"y_label", "bytes / parameter"},
                   {"bars", nlohmann::json::array({{{"name", "series (stated)"}, {"parts", series}},
                                                   {{"name", "autocast (measured)"}, {"parts", parts_a}},
                                                   {{"name", "bf16 + fp32 master (measured)"}, {"parts", parts_b}}})},
                   {"statement", "value"}},  // the report draws the stated figure and what its rule accepts
                  ch04::timeline_chart("Memory timeline, autocast (fp32 weights, AdamW)", a.timeline),
                  ch04::timeline_chart("Memory timeline, the series' table (bf16 weights, fp32 master)", b.timeline)}));
  ctx.assumption(
      "autocast mode: fp32 parameters, bf16 autocast around the forward (cache cleared on leaving it, as "
      "`with torch.autocast` does), torch::optim::AdamW: the 16 B are 4 + 4 + 4 + 4, and autocast's bf16 "
      "weight copies (2 B) live only between forward and backward");
  ctx.assumption(
      "series-table mode: parameters in bf16 (so gradients in bf16), an optimizer keeping an fp32 master "
      "copy and fp32 m, v: 2 + 2 + 4 + 4 + 4");
  ctx.assumption(
      "every parameter trainable; bytes = the counting allocator's live allocations after optimizer.step(), "
      "attributed by the tensors that own them; " +
      std::to_string(tokens) + " tokens, batch 1");
#endif
}
CLAIMCHECK_REGISTER(bytes_per_param_measured).claim("ch04.bytes_per_param_measured");
