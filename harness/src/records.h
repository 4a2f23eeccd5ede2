// The series' seven records of a reproducible experiment (ch06.seven_records):
// commit, data revision, config, environment, seed, hardware, logs (and checkpoints).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/records.h"
#include "probe.h"

namespace claimcheck {

struct RecordInputs {
  std::filesystem::path root;  // repository root
  std::filesystem::path expected_dir;
  nlohmann::json run_config;  // the effective selection and options
  std::uint64_t seed = 0;
  const HardwareInfo* hardware = nullptr;
  nlohmann::json logs;  // where the run's log and checkpoints are
};

nlohmann::json build_records(const RecordInputs& in);

// Environment pieces, also used by `claimcheck list`.
nlohmann::json environment_record();
std::string torch_version();  // "" when not built with LibTorch (module.cpp; torch_info.cpp once loaded)
std::string torch_config();   // at::show_config(), "" while LibTorch's code is not in the process
bool torch_info_loaded();     // whether it is (the LibTorch checks module loaded, or linked)
// Runs argv (no shell; claimcheck/base/process.h) with stderr discarded: its stdout with trailing newlines and
// spaces trimmed; nullopt when it cannot be started or exits non-zero.
std::optional<std::string> run_command(const std::vector<std::string>& argv);
// sha256 over the sorted relative paths and contents of every file under the given folders.
std::string tree_hash(const std::filesystem::path& root, const std::vector<std::filesystem::path>& dirs);

}  // namespace claimcheck
