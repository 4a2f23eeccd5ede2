// ch04.oom_attribution — 「OOM 按爆的时机归因：加载后 → 权重；第一步 backward 后 → 梯度 + 状态；加了 LoRA 还 OOM →
// 看激活」 Three runs of the Llama-shaped decoder under a cap on the counting allocator, which then throws PyTorch's
// out-of-memory error. Each cap is a multiple of the model's fp32 weights, counted by the ledger from the config.
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "ch04_memory.h"
#endif

namespace ref = claimcheck::ref;

static void oom_attribution(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  namespace train = claimcheck::train;
  // Prepare: the caps, from the expected file, in units of the weights' bytes.
  const auto config = ctx.input_path("config");
  const double weights = static_cast<double>(ref::count_params(ref::load_model_config(config)).total()) * 4;
  const nlohmann::json& runs = ctx.input("runs");
  if (!runs.is_array() || runs.empty())
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.runs': expected a list of runs");

  // A LoRA run's adapters (inputs.runs[].lora: what the code under test builds, r = 16 on the seven projections),
  // read before any run.
  for (const auto& run : runs)
    if (run.is_object() && run.contains("lora")) {
      const std::string field = "inputs.runs[" + run.value("name", std::string("?")) + "].lora";
      const nlohmann::json& l = run.at("lora");
      if (!l.is_object() || !l.contains("r") || !l.at("r").is_number_integer() || l.at("r").get<long long>() < 1)
        throw std::invalid_argument(ctx.claim_id() + ": field '" + field + ".r': expected an integer >= 1");
      bool names = l.contains("targets") && l.at("targets").is_array() && !l.at("targets").empty();
      for (const auto& t : names ? l.at("targets") : nlohmann::json::array()) names = names && t.is_string();
      if (!names)
        throw std::invalid_argument(ctx.claim_id() + ": field '" + field +
                                    ".targets': expected a non-empty list of module names");
    }

  // Run and verify: where each error lands, and what grew since the model was loaded.
  bool all = true, phases_follow = true, at_cap = true;
  nlohmann::json charts = nlohmann::json::array(), table = nlohmann::json::array();
  for (const auto& run : runs) {
    const std::string name = run.at("name").get<std::string>(), scenario = run.at("scenario").get<std::string>();
    const std::string where = "inputs.runs[" + name + "]";
    const auto& capj = run.at("cap_x_weights");
    if (!capj.is_number() || !std::isfinite(capj.get<double>()) || capj.get<double>() <= 0)
      throw std::invalid_argument(ctx.claim_id() + ": field '" + where +
                                  ".cap_x_weights': must be a positive number, got " + capj.dump());
    const auto cap = static_cast<std::int64_t>(capj.get<double>() * weights);
    const auto r = train::oom_run(config, scenario, cap, ctx.seed(), run.at("tokens").get<int>(), ctx.planted_fault());
    const auto expected_phases = run.at("phases").get<std::vector<std::string>>();
    const auto named = run.at("series_names").get<std::vector<std::string>>();
    // Growth since load (or everything, when the load itself failed), the request included in its phase's owner.
    const auto& at = r.timeline.back();
    std::map<std::string, double> grew;
    const train::MemorySnapshot* load =
        r.timeline.size() > 1 && r.timeline.front().phase == "load" ? &r.timeline.front() : nullptr;
    double total = 0, by_named = 0;
    for (const auto& [cat, b] : at.bytes) {
      grew[cat] = static_cast<double>(b) - (load ? static_cast<double>(load->bytes.at(cat)) : 0.0);
      if (grew[cat] > 0) total += grew[cat];
    }
    for (const auto& n : named) by_named += std::max(0.0, grew[n]);
    const double share = total > 0 ? by_named / total : 0;
    const bool phase_ok =
        r.oom && std::find(expected_phases.begin(), expected_phases.end(), r.phase) != expected_phases.end();
    const bool ok = phase_ok && share > 0.5;
    // The phase the error names is the one after the last completed (the timeline's snapshots, taken apart from the
    // allocator's phase tags): an error tagged with another phase is misnamed, even where the list accepts it.
    static const std::vector<std::string> order = {"load", "forward", "backward", "step"};
    bool follows =
        r.oom && !r.timeline.empty() && r.timeline.size() - 1 < order.size() && r.phase == order[r.timeline.size() - 1];
    for (std::size_t i = 0; follows && i + 1 < r.timeline.size(); ++i) follows = r.timeline[i].phase == order[i];
    phases_follow = phases_follow && follows;
    // The error came at the request that would have crossed the cap: what was live fits under it, and the request
    // would have passed it.
    at_cap = at_cap && (!r.oom || (r.live_at_oom <= cap && cap < r.live_at_oom + r.requested));
    all = all && ok;
    ctx.measure_bool(name + "_oom_in_expected_phase", phase_ok);
    ctx.measure(name + "_share_of_named_categories", 100 * share, "%");
    // What a LoRA run trains against the ledger's count for inputs.runs[].lora (the series' r = 16 on every linear
    // projection): a base left trainable still runs out of memory in the forward, and the saved activations still
    // dominate what grew.
    if (run.contains("lora")) {
      const double want =
          static_cast<double>(ref::lora_trainable(ref::load_model_config(config), run.at("lora").at("r").get<int>(),
                                                  run.at("lora").at("targets").get<std::vector<std::string>>()));
      ctx.measure(name + "_trainable_vs_ledger", static_cast<double>(r.trainable) / want, "ratio");
    }
    table.push_back({{"run", name},
                     {"scenario", scenario},
                     {"cap_bytes", cap},
                     {"oom", r.oom},
                     {"phase", r.phase},
                     {"expected_phases", expected_phases},
                     {"series_names", named},
                     {"message", r.message},
                     {"requested_bytes", r.requested},
                     {"live_at_oom_bytes", r.live_at_oom},
                     {"growth_since_load_bytes", grew},
                     {"timeline", ch04::timeline_json(r.timeline)}});
    nlohmann::json chart = ch04::timeline_chart(
        "OOM run '" + name + "' (cap " + std::to_string(cap / 1000000) + " MB): live bytes by phase, then at the error",
        r.timeline);
    chart["reference"] = {{"name", "the cap"}, {"value", static_cast<double>(cap) / 1e6}};  // drawn as a dashed line
    charts.push_back(chart);
  }
  ctx.measure_bool("value", all);
  ctx.measure_bool("oom_phase_follows_timeline", phases_follow);
  ctx.measure_bool("oom_at_the_cap", at_cap);
  ctx.detail("runs", table);
  ctx.detail("stacked", charts);
  ctx.assumption(
      "a run 'attributes' its OOM to the series' category when the error comes in the named phase and "
      "that category holds more than half of the bytes added since the model was loaded");
  ctx.assumption(
      "the cap is on the counting allocator (every LibTorch CPU tensor): it throws c10::OutOfMemoryError, "
      "PyTorch's own out-of-memory error; caps are multiples of the fp32 weights the ledger counts");
#endif
}
CLAIMCHECK_REGISTER(oom_attribution).claim("ch04.oom_attribution");
