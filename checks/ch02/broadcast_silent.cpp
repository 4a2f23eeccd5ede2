// ch02.broadcast_silent — 「广播三条规则；(3,) + (3, 1) 悄悄变成 (3, 3)——关键处 assert 形状」
// In LibTorch (and numpy where Python has it): the result is (3, 3), nothing raises, a shape assertion catches it.
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/attention.h"

#include <nlohmann/json.hpp>

static void broadcast_silent(claimcheck::Context& ctx) {
  // Run: LibTorch.
  const auto r = claimcheck::ref::torch_broadcast_demo();
  // A planted fault: forget the assertion (the claim says it is what catches the bug).
  const bool asserted = ctx.planted_fault() == "skip_shape_assertion" ? false : r.assertion_caught;
  const bool silent = r.shape == std::vector<long>{3, 3} && !r.raised;

  // Verify.
  ctx.measure_bool("value", silent && asserted);
  ctx.detail("libtorch", {{"shape", r.shape}, {"raised", r.raised}, {"assertion_caught", r.assertion_caught}});
  // numpy, where the interpreter has it: the same rule.
  try {
    const auto np = claimcheck::run_python_driver(ctx, "checks/ch02/broadcast_numpy.py", {});
    ctx.detail("numpy", np.value("details", nlohmann::json::object()));
  } catch (const std::exception& e) {
    ctx.detail("numpy", std::string("not run: ") + e.what());
  }
  ctx.assumption("the assertion is TORCH_CHECK(result.sizes() == a.sizes()): what 'assert shapes' means in C++");
}
CLAIMCHECK_REGISTER(broadcast_silent).claim("ch02.broadcast_silent").needs(claimcheck::Requirement::libtorch);
