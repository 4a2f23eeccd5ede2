// ch02.broadcast_silent — 「广播三条规则；(3,) + (3, 1) 悄悄变成 (3, 3)——关键处 assert 形状」
// In LibTorch (and numpy where Python has it): the result is (3, 3), nothing raises (the reference's raw add); the
// project's own residual add (kernels/train, what TinyGPT's blocks use) asserts shapes and stops the same input.
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/attention.h"
#include "claimcheck/train/experiments.h"

#include <nlohmann/json.hpp>

static void broadcast_silent(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // Run: LibTorch's own broadcasting (reference), then the project's guarded add (code under test).
  const auto r = claimcheck::ref::torch_broadcast_demo();
  const auto guard = claimcheck::train::shape_guard_demo(ctx.planted_fault());
  const bool silent = r.shape == std::vector<long>{3, 3} && !r.raised;

  // Verify.
  ctx.measure_bool("value", silent && guard.caught);
  ctx.detail("libtorch", {{"shape", r.shape}, {"raised", r.raised}, {"assertion_caught", r.assertion_caught}});
  ctx.detail("project_add", {{"caught", guard.caught}, {"shape_when_not", guard.shape}});
  // The guard on more pairs (inputs.guard_pairs): it must stop exactly the pairs whose shapes differ (each of which
  // LibTorch would broadcast, or refuse) and let equal shapes through. A guard on ranks or on the last size alone
  // stops (3,) + (3, 1) and lets (2, 3) + (1, 3) through.
  const auto pairs = ctx.input("guard_pairs").get<std::vector<std::pair<std::vector<long>, std::vector<long>>>>();
  const auto stopped = claimcheck::train::shape_guard_cases(pairs, ctx.planted_fault());
  int wrong = 0;
  nlohmann::json cases = nlohmann::json::array();
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const bool differ = pairs[i].first != pairs[i].second;
    wrong += i >= stopped.size() || stopped[i] != differ;
    cases.push_back({{"a", pairs[i].first}, {"b", pairs[i].second}, {"stopped", i < stopped.size() && stopped[i]}});
  }
  ctx.measure("guard_misjudged_pairs", wrong, "count");
  ctx.detail("guard_pairs", cases);
  // numpy, where the interpreter has it: the same rule.
  try {
    const auto np = claimcheck::run_python_driver(ctx, "checks/ch02/broadcast_numpy.py", {});
    ctx.detail("numpy", np.value("details", nlohmann::json::object()));
  } catch (const std::exception& e) {
    ctx.detail("numpy", std::string("not run: ") + e.what());
  }
  ctx.assumption(
      "the assertion is TORCH_CHECK(a.sizes() == b.sizes()) in the project's residual add: what "
      "'assert shapes' means in C++");
#endif
}
CLAIMCHECK_REGISTER(broadcast_silent).claim("ch02.broadcast_silent");
