// ch06.same_seed_identical — 「同 seed 两次完全一致要 use_deterministic_algorithms」
// Two runs in separate processes with the same seed and deterministic algorithms: bitwise-equal losses and
// weights. A third run with another seed must differ (or the comparison proves nothing).
#include <unistd.h>

#include <filesystem>

#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

namespace {
nlohmann::json run_process(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("cannot start " + cmd);
  std::string out;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, p)) out += buf;
  if (pclose(p) != 0) throw std::runtime_error(cmd + " failed: " + out);
  return nlohmann::json::parse(out.substr(out.rfind('{')));
}
}  // namespace

static void same_seed_identical(claimcheck::Context& ctx) {
  namespace fs = std::filesystem;
  const fs::path exe = fs::read_symlink("/proc/self/exe").parent_path() / "claimcheck_seeded_run";
  if (!fs::exists(exe)) ctx.skip("claimcheck_seeded_run was not built (needs LibTorch)");
  const std::string base = "'" + exe.string() + "' --corpus '" + ctx.input_path("corpus").string() + "' --steps " +
                           std::to_string(ctx.input("steps").get<long>()) + " --seed ";
  const auto seed = std::to_string(ctx.seed());
  const auto a = run_process(base + seed);
  const auto b = run_process(base + seed + (ctx.planted_fault() == "unseeded" ? " --unseeded" : ""));
  const auto c = run_process(base + std::to_string(ctx.seed() + 1));
  ctx.measure_bool("value", a == b);
  ctx.measure_bool("other_seed_differs", a != c);
  ctx.detail("runs", {{"first", a}, {"second", b}, {"other_seed", c}});
  ctx.assumption("at::globalContext().setDeterministicAlgorithms(true); the same thread count; each run its own "
                 "process (nothing shared but the seed)");
}
CLAIMCHECK_REGISTER(same_seed_identical).claim("ch06.same_seed_identical").needs(claimcheck::Requirement::libtorch);
