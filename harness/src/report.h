// The report: a versioned JSON document and the writers that render it.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outcome.h"

namespace claimcheck {

inline constexpr const char* kReportSchema = "claimcheck.report/1";

struct Report {
  std::string generated_at;  // ISO 8601 UTC
  nlohmann::json records;    // the seven
  std::vector<ClaimResult> claims;
  nlohmann::json benchmarks = nlohmann::json::array();  // ratios from Google Benchmark runs, when any
  // Where the HTML report links to the repository's files (expected files, checks, docs/): the repository's
  // absolute path (stripped from the checks' source paths) and the path from the report's folder to it ("../").
  // Empty: no links (a report re-rendered from report.json elsewhere).
  std::string source_root, root_link;
  nlohmann::json comparison;  // claimcheck compare's result against a previous report, when one was given
};

nlohmann::json report_to_json(const Report& r);
Report report_from_json(const nlohmann::json& j);  // throws on a document of another schema

class ReportWriter {
 public:
  virtual ~ReportWriter() = default;
  virtual std::string filename() const = 0;
  virtual std::string render(const Report& r) const = 0;
};
std::vector<std::unique_ptr<ReportWriter>> all_writers();  // json, md, html, junit

// Renders every writer into memory, writes each to "<name>.tmp" in `dir`, and only when all
// four are written renames them into place: a run that fails part-way leaves the old report whole.
void write_report(const std::filesystem::path& dir, const Report& r);

std::string html_escape(const std::string& s);
// A Markdown table cell: |, * and _ escaped, newlines as spaces; longer than `max` bytes, cut (at a UTF-8
// character boundary) with an ellipsis.
std::string md_cell(const std::string& s, std::size_t max = std::string::npos);

}  // namespace claimcheck
