// The report document (report.json's schema, read and written), the escaping and the texts its writers share
// (report_writers.h), and writing every writer's file at once. The writers are one per file (report_json.cpp,
// report_markdown.cpp, report_html.cpp, report_junit.cpp), the HTML report's charts in report_charts.cpp.
#include "report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "compare.h"
#include "report_writers.h"
#include "tolerance.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

json report_to_json(const Report& r) {
  json claims = json::array();
  for (const auto& c : r.claims) claims.push_back(to_json(c));
  return {{"schema", kReportSchema}, {"generated_at", r.generated_at},
          {"records", r.records},    {"summary", to_json(summarize(r.claims))},
          {"claims", claims},        {"benchmarks", r.benchmarks}};
}

Report report_from_json(const json& j) {
  if (!j.is_object() || j.value("schema", "") != kReportSchema)
    throw std::runtime_error(std::string("not a ") + kReportSchema + " document");
  Report r;
  r.generated_at = j.value("generated_at", "");
  r.records = j.at("records");
  for (const auto& c : j.at("claims")) r.claims.push_back(claim_from_json(c));
  r.benchmarks = j.value("benchmarks", json::array());
  return r;
}

std::string benchmark_share(const Report& r, const json& row) {
  if (!row.is_object() || !row.contains("gflops") || !row["gflops"].is_number()) return "";
  const ClaimResult* ridge = nullptr;
  for (const auto& c : r.claims)
    if (c.id == "ch06.ridge_measured") ridge = &c;
  if (!ridge || !ridge->details.contains("roof") || !ridge->details["roof"].is_object()) return "";
  const json engines = ridge->details["roof"].value("engines", json::array());
  const std::string engine = row.value("engine", std::string());
  const std::string isa = engine == "amx_bf16" || engine == "avx512_bf16" ? engine : "";
  for (const auto& e : engines) {
    if (!e.is_object() || !e.contains("peak_gflops") || !e["peak_gflops"].is_number()) continue;
    const bool fp32 = e.value("engine", std::string()) == "fp32 FMA";
    if (isa.empty() ? !fp32 : e.value("isa", std::string()) != isa) continue;
    const double peak = e["peak_gflops"].get<double>();
    if (!(peak > 0)) return "";
    return sig3(row["gflops"].get<double>() / peak) + " of " + e.value("engine", std::string()) + " (" + sig3(peak) +
           " GFLOP/s, ch06.ridge_measured's probe)";
  }
  return "";
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += "&#39;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string md_cell(const std::string& s, std::size_t max) {
  std::string o;
  for (char c : s) {
    if (c == '|' || c == '*' || c == '_')
      o += std::string("\\") + c;  // table cell, no emphasis
    else
      o += c == '\n' ? ' ' : c;
  }
  if (o.size() <= max) return o;
  while (max > 0 && (static_cast<unsigned char>(o[max]) & 0xC0) == 0x80) --max;  // not inside a UTF-8 character
  return o.substr(0, max) + "…";
}

std::string value_text(const json& v, const std::string& unit) {
  if (v.is_null()) return "—";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return fmt(v.get<double>()) + (unit.empty() || unit == "bool" ? "" : " " + unit);
  return v.dump();
}
std::string sig3(double v) {
  if (!std::isfinite(v)) return fmt(v);
  char b[48];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(b, sizeof b, "%.0f", v);
  else
    std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}
std::string stated_text(const ClaimResult& c) {
  return value_text(c.stated.value("value", json()), c.stated.value("unit", ""));
}
std::string measured_text(const ClaimResult& c) {
  if (!c.measured.is_object()) return "—";
  return value_text(c.measured.value("value", json()), c.measured.value("unit", ""));
}
// A label after a verdict whose statement no bug in a model or kernel can move ("by definition", ...).
std::string basis_suffix(const std::string& basis) {
  std::string l;
  try {
    l = basis_label(basis);
  } catch (const std::invalid_argument&) {
    l = basis;  // a report.json read back from another version: shown as it is
  }
  return l.empty() ? "" : " (" + l + ")";
}

std::string verdict_label(const ClaimResult& c) {
  if (c.status == Status::skip && c.not_implemented) return "not implemented";
  return to_string(c.status) + basis_suffix(headline_basis(c));  // a pass by definition is not a measured pass
}

std::map<std::string, std::vector<const ClaimResult*>> by_chapter(const Report& r) {
  std::map<std::string, std::vector<const ClaimResult*>> m;
  for (const auto& c : r.claims) m[c.chapter].push_back(&c);
  return m;
}

std::string chapter_heading(const std::string& chapter, const std::vector<const ClaimResult*>& claims) {
  const std::string& title = claims.empty() ? std::string() : claims.front()->chapter_title;  // expected/chapters.json
  return title.empty() ? chapter : chapter + " · " + title;
}

std::string summary_line(const Summary& s, bool with_pending) {
  std::ostringstream o;
  o << s.total << " claims: ";
  for (Status v : {Status::pass, Status::partial, Status::fail, Status::xfail, Status::xpass, Status::error})
    o << s[v] << " " << to_string(v) << ", ";
  o << s.skipped() << " skip, " << s.not_implemented << " not implemented yet";
  if (with_pending) o << "; " << s.pending_parts << " parts of claims pending";
  return o.str();
}

// The commit record's sha, "unknown" where there is none (a tree without .git records the commit as null).
std::string commit_sha(const json& records) {
  const json c = records.is_object() ? records.value("commit", json()) : json();
  return c.is_object() && c.contains("sha") && c["sha"].is_string() ? c["sha"].get<std::string>() : "unknown";
}

std::vector<std::unique_ptr<ReportWriter>> all_writers() {
  std::vector<std::unique_ptr<ReportWriter>> w;
  w.push_back(std::make_unique<JsonWriter>());
  w.push_back(std::make_unique<MarkdownWriter>());
  w.push_back(std::make_unique<HtmlWriter>());
  w.push_back(std::make_unique<JunitWriter>());
  return w;
}

void write_report(const fs::path& dir, const Report& r) {
  std::vector<std::pair<fs::path, std::string>> rendered;
  for (const auto& w : all_writers()) rendered.emplace_back(dir / w->filename(), w->render(r));
  write_files_atomically(rendered);
}

}  // namespace claimcheck
