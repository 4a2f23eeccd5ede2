// claimcheck_seeded_run --seed N --steps N --corpus DIR [--unseeded] [--fault NAME]
// One short training run of the tiny model in its own process, printing its losses and weight hash as
// JSON (ch06.same_seed_identical runs it twice and compares).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "claimcheck/train/experiments.h"

int main(int argc, char** argv) {
  std::uint64_t seed = 1;
  long steps = 20;
  std::string corpus = "/usr/share/games/fortunes";
  std::string fault;  // tests only: a planted fault (--fault NAME)
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--seed" && i + 1 < argc)
      seed = std::strtoull(argv[++i], nullptr, 10);
    else if (a == "--steps" && i + 1 < argc)
      steps = std::strtol(argv[++i], nullptr, 10);
    else if (a == "--corpus" && i + 1 < argc)
      corpus = argv[++i];
    else if (a == "--fault" && i + 1 < argc)
      fault = argv[++i];
    else if (a == "--unseeded")
      seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    else {
      std::cerr << "claimcheck_seeded_run: unknown argument '" << a << "'\n";
      return 2;
    }
  }
  try {
    const auto data = claimcheck::train::load_fortunes_corpus(corpus);
    const auto r = claimcheck::train::seeded_run(data, seed, steps, fault);
    std::cout << nlohmann::json{{"losses", r.losses},
                                {"weights_sha256", r.weights_sha256},
                                {"init_weights_sha256", r.init_weights_sha256},
                                {"first_batches_sha256", r.first_batches_sha256},
                                {"deterministic_algorithms", r.deterministic_algorithms}}
                     .dump()
              << "\n";
  } catch (const std::exception& e) {
    std::cerr << "claimcheck_seeded_run: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
