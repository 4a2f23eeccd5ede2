// ch06.same_seed_identical — 「同 seed 两次完全一致要 use_deterministic_algorithms」
// Two runs in separate processes with the same seed and deterministic algorithms: bitwise-equal losses and
// weights. A third run with another seed must differ (or the comparison proves nothing).
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "claimcheck/base/process.h"
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

namespace {
// One seeded run from an argument vector (no shell: the corpus path is passed as it is).
nlohmann::json run_seeded(const std::vector<std::string>& argv) {
  claimcheck::ProcessOptions opt;
  opt.merge_stderr = true;
  const claimcheck::ProcessResult p = claimcheck::run_process(argv, opt);
  if (!p.started) throw std::runtime_error(p.error);
  std::string cmd;
  for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  if (p.exit_code != 0) throw std::runtime_error(cmd + " failed (exit " + std::to_string(p.exit_code) + "): " + p.out);
  const auto brace = p.out.rfind('{');
  if (brace == std::string::npos) throw std::runtime_error(cmd + " printed no JSON object: " + p.out);
  return nlohmann::json::parse(p.out.substr(brace));
}
}  // namespace

static void same_seed_identical(claimcheck::Context& ctx) {
  namespace fs = std::filesystem;
  const fs::path exe = fs::read_symlink("/proc/self/exe").parent_path() / "claimcheck_seeded_run";
  if (!fs::exists(exe)) ctx.skip("claimcheck_seeded_run was not built (needs LibTorch)");
  const std::vector<std::string> base{exe.string(), "--corpus", ctx.input_path("corpus").string(), "--steps",
                                      std::to_string(ctx.input("steps").get<long>()), "--seed"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (ctx.planted_fault() == "seed_ignored") argv.insert(argv.end(), {"--fault", ctx.planted_fault()});
    return argv;
  };
  const auto seed = std::to_string(ctx.seed());
  const auto a = run_seeded(with({seed}));
  const auto b = run_seeded(ctx.planted_fault() == "unseeded" ? with({seed, "--unseeded"}) : with({seed}));
  const auto c = run_seeded(with({std::to_string(ctx.seed() + 1)}));
  ctx.measure_bool("value", a == b);
  ctx.measure_bool("other_seed_differs", a != c);
  ctx.detail("runs", {{"first", a}, {"second", b}, {"other_seed", c}});
  ctx.assumption("at::globalContext().setDeterministicAlgorithms(true); the same thread count; each run its own "
                 "process (nothing shared but the seed)");
}
CLAIMCHECK_REGISTER(same_seed_identical).claim("ch06.same_seed_identical").needs(claimcheck::Requirement::libtorch);
