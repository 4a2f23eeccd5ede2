// The series' seven records of a reproducible run, and what counts as having them (ch06.seven_records
// and the harness share this one definition).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace claimcheck {

inline const std::vector<std::string>& record_names() {
  static const std::vector<std::string> n = {"commit", "data_revision", "config", "environment",
                                             "seed",   "hardware",      "logs"};
  return n;
}

// How many of the seven are present and non-empty (null, "", {} and [] count as missing).
int count_complete_records(const nlohmann::json& records, std::vector<std::string>* missing = nullptr);

}  // namespace claimcheck
