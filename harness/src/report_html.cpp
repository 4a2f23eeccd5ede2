// report.html: one self-contained page (inline CSS and SVG, no script): the summary's badges, one table of claims per
// chapter with each claim's figures, assumptions and alternatives folded under it and its charts (report_charts.cpp),
// the machine's roofline with every point the run measured, the benchmark ratios, and the seven records.
#include <sstream>

#include "report_writers.h"
#include "tolerance.h"

namespace claimcheck {
using nlohmann::json;

std::string HtmlWriter::filename() const { return "report.html"; }

std::string HtmlWriter::render(const Report& r) const {
  const Summary s = summarize(r.claims);
  std::ostringstream o;
  o << R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>claimcheck report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:20px 32px}header h1{margin:0 0 6px;font-size:22px}
main{max-width:1280px;margin:0 auto;padding:16px 32px 48px}
.badges span{display:inline-block;margin:4px 8px 0 0;padding:3px 10px;border-radius:12px;font-weight:600;font-size:13px}
.pass{background:#dff3e4;color:#1b6e34}.fail,.xpass,.error{background:#fde2e1;color:#a4161a}
.skip{background:#eceff3;color:#4a5565}.xfail{background:#fff1cc;color:#7a5a00}.ni{background:#e8e4f7;color:#4b3a8c}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;margin:20px 0;padding:4px 18px 14px}
h2{font-size:18px;margin:14px 0 10px}table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:7px 8px;border-top:1px solid #eef0f3;font-size:14px}
th{font-size:12px;text-transform:uppercase;color:#5b6474;border-top:0}
td.id{font-family:ui-monospace,monospace;font-size:12.5px;white-space:nowrap}
td.num{white-space:nowrap;font-variant-numeric:tabular-nums}
.verdict{font-weight:700;padding:2px 8px;border-radius:10px;font-size:12px;white-space:nowrap}
.src{color:#3a4150}.title{color:#5b6474;font-size:12.5px}
details{margin-top:4px}summary{cursor:pointer;color:#2c5fa8;font-size:12.5px}
details ul{margin:4px 0 0 16px;padding:0;font-size:12.5px;color:#3a4150}
pre{background:#f3f4f7;padding:10px;border-radius:6px;overflow:auto;font-size:12px}
</style></head><body>
<header><h1>claimcheck — the series' claims, checked on this machine</h1>
<div>)" << html_escape(summary_line(s)) << "</div><div class=\"badges\">";
  for (const char* k : {"pass", "fail", "xfail", "xpass", "error"})
    o << "<span class=\"" << k << "\">" << s.by_status.at(k) << " " << k << "</span>";
  o << "<span class=\"skip\">" << s.by_status.at("skip") - s.not_implemented << " skip</span>"
    << "<span class=\"ni\">" << s.not_implemented << " not implemented yet</span></div>"
    << "<div style=\"font-size:12.5px;margin-top:6px;opacity:.8\">generated " << html_escape(r.generated_at)
    << " · commit " << html_escape(commit_sha(r.records))
    << " · " << html_escape(r.records.value("hardware", json::object()).value("cpu_model", "")) << "</div></header><main>";
  for (const auto& [ch, claims] : by_chapter(r)) {
    o << "<section><h2>" << html_escape(chapter_heading(ch, claims)) << "</h2><table><tr><th>claim</th><th>the series says</th><th>stated</th><th>measured</th><th>verdict</th><th>why</th></tr>";
    for (const auto* c : claims) {
      std::string cls = c->not_implemented ? "ni" : to_string(c->status);
      o << "<tr><td class=\"id\">" << html_escape(c->id) << "</td><td><div class=\"src\">" << html_escape(c->source)
        << "</div><div class=\"title\">" << html_escape(c->title) << "</div></td><td class=\"num\">"
        << html_escape(stated_text(*c)) << "</td><td class=\"num\">" << html_escape(measured_text(*c))
        << "</td><td><span class=\"verdict " << cls << "\">" << html_escape(verdict_label(*c))
        << "</span></td><td>" << html_escape(c->reason);
      const bool more = c->measurements.size() > 1 || !c->assumptions.empty() || !c->alternatives.empty() ||
                        !c->pending_parts.empty();
      if (more) {
        o << "<details><summary>figures, assumptions, alternatives</summary><ul>";
        for (const auto& m : c->measurements)
          o << "<li>" << html_escape(m.name) << ": " << html_escape(value_text(m.value, m.unit))
            << (m.compared ? " — " + html_escape(m.verdict + basis_suffix(m.basis)) + " <i>(" + html_escape(m.why) + ")</i>" : "")
            << (m.compared && !m.evidence.empty() ? " <small>evidence: " + html_escape(m.evidence) + "</small>" : "")
            << "</li>";
        for (const auto& a : c->assumptions) o << "<li>assumes: " << html_escape(a) << "</li>";
        for (const auto& a : c->alternatives)
          o << "<li>under <b>" << html_escape(a.value("name", "")) << "</b>: "
            << html_escape(value_text(a.at("value"), a.value("unit", ""))) << " — "
            << html_escape(a.value("assumptions", "")) << "</li>";
        for (const auto& p : c->pending_parts) o << "<li>pending: " << html_escape(p) << "</li>";
        o << "</ul></details>";
      }
      o << "</td></tr>";
      if (c->details.contains("curve")) o << "<tr><td></td><td colspan=\"5\">" << svg_curve(c->details["curve"]) << "</td></tr>";
      if (c->details.contains("roofline")) {
        const std::string svg = svg_roofline(c->details["roofline"]);
        if (!svg.empty()) o << "<tr><td></td><td colspan=\"5\">" << svg << "</td></tr>";
      }
      if (c->details.contains("stacked")) {
        const json& st = c->details["stacked"];
        for (const auto& chart : st.is_array() ? st : json::array({st})) {
          const std::string svg = svg_stacked(chart);
          if (!svg.empty()) o << "<tr><td></td><td colspan=\"5\">" << svg << "</td></tr>";
        }
      }
    }
    o << "</table></section>";
  }
  // One roofline for the machine: the roofs of ch06.ridge_measured (else the first claim that has some), every
  // point the claims measured (the batch sweep thinned to its decades), and benchmark rows that carry an intensity.
  {
    json roof;
    for (const auto& c : r.claims)  // the first roof that draws, ch06.ridge_measured's before any other
      if (c.details.contains("roofline") && !svg_roofline(c.details["roofline"]).empty() &&
          (roof.is_null() || c.id == "ch06.ridge_measured"))
        roof = c.details["roofline"];
    if (roof.is_object()) {
      json all = {{"title", "this machine's roofline: every point measured in this run"},
                  {"peak_flops", roof.value("peak_flops", json())}, {"bandwidth", roof.value("bandwidth", json())},
                  {"theoretical_peak_flops", roof.value("theoretical_peak_flops", json())},
                  {"roofs", roof.value("roofs", json::array())}, {"points", json::array()}};
      for (const auto& c : r.claims) {
        if (!c.details.contains("roofline") || !c.details["roofline"].is_object() || c.id == "ch06.decode_intensity")
          continue;
        const json pts = c.details["roofline"].value("points", json::array());
        if (!pts.is_array()) continue;
        for (const auto& p : pts) {
          if (!p.is_object() || !p.contains("name") || !p["name"].is_string()) continue;
          const std::string n = p["name"].get<std::string>();
          if (n.rfind("B=", 0) == 0 && n != "B=1" && n != "B=8" && n != "B=64" && n != "B=512") continue;
          json q = p;
          q["name"] = (n.rfind("B=", 0) == 0 ? "batch sweep " : "") + n;
          all["points"].push_back(q);
        }
      }
      for (const auto& b : r.benchmarks)
        if (b.is_object() && b.contains("intensity") && b.contains("gflops") && b["gflops"].is_number())
          all["points"].push_back({{"name", b.contains("short") && b["short"].is_string() ? b["short"]
                                            : b.contains("name") && b["name"].is_string() ? b["name"] : json("")},
                                   {"intensity", b["intensity"]}, {"flops", b["gflops"].get<double>() * 1e9}});
      const std::string svg = svg_roofline(all);
      if (!svg.empty()) o << "<section><h2>Roofline</h2>" << svg << "</section>";
    }
  }
  if (!r.benchmarks.empty()) {
    o << "<section><h2>Benchmarks (ratios within one run)</h2><table><tr><th>benchmark</th><th>ratio</th><th>detail</th></tr>";
    for (const auto& b : r.benchmarks)
      o << "<tr><td class=\"id\">" << html_escape(b.value("name", "")) << "</td><td class=\"num\">"
        << fmt(b.value("ratio", 0.0)) << "</td><td>" << html_escape(b.value("detail", "")) << "</td></tr>";
    o << "</table></section>";
  }
  o << "<section><h2>The seven records</h2><pre>" << html_escape(r.records.dump(2)) << "</pre></section>";
  o << "</main></body></html>\n";
  return o.str();
}

}  // namespace claimcheck
