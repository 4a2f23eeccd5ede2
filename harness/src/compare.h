// claimcheck compare OLD NEW: what changed between two reports (design.md) — status changes per claim, figures
// that moved out of their tolerance, benchmark ratios that moved beyond the measured noise.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace claimcheck {

inline constexpr const char* kCompareSchema = "claimcheck.compare/1";

// A benchmark ratio has moved when |new / old - 1| > kNoiseK x the combined noise of the two rows
// (sqrt(noise_old^2 + noise_new^2)) and more than the margin; with two sigmas a steady ratio reads as
// moved about one night in twenty, and only when its noise was recorded too small.
inline constexpr double kNoiseK = 2.0;

struct CompareOptions {
  double margin = 0.05;  // the smallest relative move of a benchmark ratio that counts as a change
};

// Reads a report.json and checks what compare relies on; throws InputError "<file>: field '<path>': <what>".
nlohmann::json load_report_for_compare(const std::filesystem::path& file);

// The comparison as a claimcheck.compare/1 document; "regression" is true when exit status 1 is due.
nlohmann::json compare_reports(const nlohmann::json& old_report, const std::string& old_name,
                               const nlohmann::json& new_report, const std::string& new_name,
                               const CompareOptions& opt);
std::string compare_markdown(const nlohmann::json& cmp);

// Writes every file to "<name>.tmp" first and renames them into place only when all are written.
void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

}  // namespace claimcheck
