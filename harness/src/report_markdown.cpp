// report.md: the summary, one table of claims per chapter (stated, measured, verdict, why) with each claim's
// assumptions, alternatives and pending parts under it, the benchmark ratios, and the records as JSON.
#include <sstream>

#include "report_writers.h"
#include "tolerance.h"

namespace claimcheck {

std::string MarkdownWriter::filename() const { return "report.md"; }

std::string MarkdownWriter::render(const Report& r) const {
  std::ostringstream o;
  o << "# claimcheck report\n\n" << summary_line(summarize(r.claims)) << ".\n\n";
  o << "Generated " << r.generated_at << ". Commit `" << commit_sha(r.records) << "`.\n";
  for (const auto& [ch, claims] : by_chapter(r)) {
    o << "\n## " << chapter_heading(ch, claims) << "\n\n";
    o << "| claim | source | stated | measured | verdict | why |\n|---|---|---|---|---|---|\n";
    for (const auto* c : claims)
      o << "| `" << c->id << "` | " << md_cell(c->source) << " | " << md_cell(stated_text(*c)) << " | "
        << md_cell(measured_text(*c)) << " | **" << verdict_label(*c) << "** | " << md_cell(c->reason) << " |\n";
    for (const auto* c : claims) {
      if (c->assumptions.empty() && c->alternatives.empty() && c->pending_parts.empty()) continue;
      o << "\n**" << c->id << "**\n";
      for (const auto& a : c->assumptions) o << "- assumes: " << md_cell(a) << "\n";
      for (const auto& a : c->alternatives)
        o << "- under " << md_cell(a.value("name", "")) << ": " << value_text(a.at("value"), a.value("unit", ""))
          << " (" << md_cell(a.value("assumptions", "")) << ")\n";
      for (const auto& p : c->pending_parts) o << "- pending: " << md_cell(p) << "\n";
    }
  }
  if (!r.benchmarks.empty()) {
    o << "\n## Benchmarks\n\n| benchmark | ratio | share of this run's probe | detail |\n|---|---|---|---|\n";
    for (const auto& b : r.benchmarks)
      o << "| " << md_cell(b.value("name", "")) << " | " << fmt(b.value("ratio", 0.0)) << " | "
        << md_cell(benchmark_share(r, b)) << " | " << md_cell(b.value("detail", "")) << " |\n";
  }
  o << "\n## Records\n\n```json\n" << r.records.dump(2) << "\n```\n";
  return o.str();
}

}  // namespace claimcheck
