// What the report's writers share and report.h does not show: the four writers, one per file (report_json.cpp,
// report_markdown.cpp, report_html.cpp, report_junit.cpp; all_writers() in report.cpp lists them), the texts of a
// claim's cells and of the summary (report.cpp), and the inline SVG charts of the HTML report (report_charts.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "outcome.h"
#include "report.h"

namespace claimcheck {

// ---- the writers ----------------------------------------------------------------
class JsonWriter : public ReportWriter {  // report.json: the document itself
 public:
  std::string filename() const override;
  std::string render(const Report& r) const override;
};
class MarkdownWriter : public ReportWriter {  // report.md
 public:
  std::string filename() const override;
  std::string render(const Report& r) const override;
};
class HtmlWriter : public ReportWriter {  // report.html, with its charts
 public:
  std::string filename() const override;
  std::string render(const Report& r) const override;
};
class JunitWriter : public ReportWriter {  // junit.xml
 public:
  std::string filename() const override;
  std::string render(const Report& r) const override;
};

// ---- texts the Markdown and HTML writers share (report.cpp) ---------------------
std::string value_text(const nlohmann::json& v, const std::string& unit);  // "—" for null
std::string stated_text(const ClaimResult& c);
std::string measured_text(const ClaimResult& c);
std::string basis_suffix(const std::string& basis);  // " (by definition)", or "" for a measured figure
std::string verdict_label(const ClaimResult& c);
std::map<std::string, std::vector<const ClaimResult*>> by_chapter(const Report& r);
// "chNN · <title>": the chapter's title from expected/chapters.json, as its claims carry it ("chNN" without one).
std::string chapter_heading(const std::string& chapter, const std::vector<const ClaimResult*>& claims);
std::string summary_line(const Summary& s, bool with_pending = true);
// Three significant digits, integers whole: what a reader compares at a glance (the verdicts keep six).
std::string sig3(double v);
// One probe for every table: a benchmark row's GFLOP/s as a share of the roof that ch06.ridge_measured's probe
// measured in the same run for the engine the row ran on (an "engine" field: amx_bf16, avx512_bf16; else the fp32
// FMA peak), e.g. "0.74 of bf16 dot products (229 GFLOP/s)"; "" where the row has no GFLOP/s or the run no such roof.
std::string benchmark_share(const Report& r, const nlohmann::json& row);
// The filter's script of report.html and matrix.html (report_html.cpp says what it reads).
extern const char* const kFilterScript;
std::string commit_sha(const nlohmann::json& records);  // "unknown" where there is none

// ---- inline SVG charts (report_charts.cpp): "" where the input draws nothing ------
std::string svg_curve(const nlohmann::json& c);     // details.curve
std::string svg_roofline(const nlohmann::json& c);  // details.roofline
std::string svg_stacked(const nlohmann::json& c);   // one chart of details.stacked

}  // namespace claimcheck
