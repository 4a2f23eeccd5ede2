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

// A benchmark ratio is judged as google/benchmark's compare.py judges a time: a two-sided Mann-Whitney U test of the
// two rows' per-repetition ratios ("samples"), at alpha kAlpha, and only with at least kMinRepetitions on each side
// (below that: inconclusive, as compare.py warns). It has moved when the test says so and the medians differ by more
// than the margin.
inline constexpr double kAlpha = 0.05;
inline constexpr int kMinRepetitions = 9;

struct CompareOptions {
  double margin = 0.05;  // the smallest relative move of a benchmark ratio that counts as a change
  // Judge only what both reports judged (the default): a claim in one report only, or one whose statements differ
  // between the two (a partial run: an analytic-only report against a full one), is listed and not judged.
  bool only_common = true;
};

// The two-sided p-value of the Mann-Whitney U test of samples a and b (the normal approximation with the tie and
// continuity corrections); 1 where either is empty.
double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b);

// Reads a report.json and checks what compare relies on; throws InputError "<file>: field '<path>': <what>".
nlohmann::json load_report_for_compare(const std::filesystem::path& file);

// The comparison as a claimcheck.compare/1 document; "regression" is true when exit status 1 is due.
nlohmann::json compare_reports(const nlohmann::json& old_report, const std::string& old_name,
                               const nlohmann::json& new_report, const std::string& new_name,
                               const CompareOptions& opt);
std::string compare_markdown(const nlohmann::json& cmp);

// The rows of a benchmarks list (ci/bench_ratios.py's output; a report's `benchmarks`): an InputError naming
// file and field for a row that is not one (a name twice, a ratio that is not a number, ...).
void check_benchmark_rows(const nlohmann::json& rows, const std::string& file, const std::string& field);
// Writes every file to "<name>.tmp" first and renames them into place only when all are written: refused before
// writing where a path is a folder or named twice, the .tmp files removed where a write fails; an InputError naming
// the file.
void write_files_atomically(const std::vector<std::pair<std::filesystem::path, std::string>>& files);

}  // namespace claimcheck
