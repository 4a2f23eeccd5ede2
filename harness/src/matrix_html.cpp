// matrix.html: the matrix as one self-contained page in the report's look (inline CSS and one small script): the
// summary, a card per machine (linking to its report), a filter by chapter, status and kind (also from the address:
// #status=xfail&chapter=ch06), one table per chapter with a row per claim and a cell per machine, each cell an
// anchor (#<claim>--<machine>) linking to that machine's report row.
#include <sstream>

#include "matrix.h"
#include "report.h"
#include "report_writers.h"

namespace claimcheck {
using nlohmann::json;

namespace {

std::string mx_esc(const std::string& s) { return html_escape(s); }
std::string mxh_text(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || o[key].is_null()) return "";
  return o[key].is_string() ? o[key].get<std::string>() : o[key].dump();
}

const char* mx_kStyle = R"(<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:20px 32px}header h1{margin:0 0 6px;font-size:22px}
main{margin:0 auto;padding:16px 32px 48px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;margin:20px 0;padding:4px 18px 14px;overflow-x:auto}
h2{font-size:18px;margin:14px 0 10px}table{border-collapse:collapse}
th,td{text-align:left;vertical-align:top;padding:6px 8px;font-size:13.5px;border-top:1px solid #eef0f3}
th{font-size:12px;color:#5b6474}td.id{font-family:ui-monospace,monospace;font-size:12.5px}
.pass{background:#dff3e4;color:#1b6e34}.fail,.xpass,.error{background:#fde2e1;color:#a4161a}
.skip{background:#eceff3;color:#4a5565}.xfail{background:#fff1cc;color:#7a5a00}.partial{background:#e3eefc;color:#1d4f91}
.verdict{font-weight:700;padding:2px 8px;border-radius:10px;font-size:12px;display:inline-block;text-decoration:none}
.src,.why{color:#5b6474;font-size:12.5px}.differ{color:#a4161a;font-size:12.5px}.changed{color:#7a5a00;font-size:12.5px}
td.cell{min-width:11em}td.cell:target{outline:2px solid #2c5fa8}
form#filter label{margin-right:14px;font-size:13px}#shown{font-size:13px;color:#5b6474}
</style>)";

void cell_html(std::ostringstream& o, const json& row, const json& cell, const json& machine) {
  const std::string anchor = mxh_text(row, "id") + "--" + mxh_text(machine, "id");
  o << "<td class=\"cell\" id=\"" << mx_esc(anchor) << "\">";
  if (cell.is_null()) {
    o << "<span class=\"why\">not in this report</span></td>";
    return;
  }
  const std::string st = mxh_text(cell, "status"), link = mxh_text(cell, "link");
  o << "<a class=\"verdict " << mx_esc(st) << "\" href=\"" << mx_esc(link) << "\" title=\""
    << mx_esc(mxh_text(cell, "reason")) << "\">" << mx_esc(cell["not_implemented"].get<bool>() ? "not implemented" : st)
    << "</a>";
  if (cell["value"].is_number() || cell["value"].is_boolean())
    o << "<div>" << mx_esc(matrix_figure_text(cell)) << "</div>";
  for (const auto& [stmt, when] : cell["variant"].items())
    o << "<div class=\"why\">" << mx_esc(stmt) << " when <code>" << mx_esc(when.get<std::string>()) << "</code></div>";
  for (const auto& f : cell["chosen_by"]) o << "<div class=\"why\">" << mx_esc(f.get<std::string>()) << "</div>";
  if (!cell["expected_failures"].empty()) {
    std::string x;
    for (const auto& n : cell["expected_failures"]) x += (x.empty() ? "" : ", ") + n.get<std::string>();
    o << "<div class=\"why\">expected failures: " << mx_esc(x) << "</div>";
  }
  o << "</td>";
}

}  // namespace

std::string matrix_html(const json& m) {
  std::ostringstream o;
  const json& s = m["summary"];
  o << "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>claimcheck — which claims hold where"
       "</title><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
    << mx_kStyle
    << "</head><body>\n<header><h1>claimcheck — which of the series' claims hold on which machines</h1><div>"
    << s["claims"].get<int>() << " claims on " << s["machines"].get<int>()
    << " machine(s): " << s["hold_everywhere_they_ran"].get<int>() << " hold on every machine they ran on, "
    << s["refuted_somewhere"].get<int>() << " refuted on at least one, " << s["verdicts_differ"].get<int>()
    << " with verdicts that differ</div></header><main>\n<section id=\"machines\"><h2>Machines</h2><table>";
  for (const auto& mc : m["machines"])
    o << "<tr><td class=\"id\">" << mx_esc(mxh_text(mc, "id")) << "</td><td><a href=\"" << mx_esc(mxh_text(mc, "link"))
      << "\">" << mx_esc(mxh_text(mc, "label")) << "</a></td><td class=\"src\">" << mx_esc(matrix_card_text(mc))
      << "</td><td class=\"id\">" << mx_esc(mxh_text(mc, "commit").substr(0, 7))
      << (mc["dirty"].get<bool>() ? " (dirty)" : "") << "</td></tr>";
  o << "</table></section>\n<section><form id=\"filter\"><label>status <select name=\"status\"><option value=\"\">any"
       "</option>";
  for (const char* st : {"pass", "xfail", "fail", "error", "xpass", "partial", "skip", "differ"})
    o << "<option>" << st << "</option>";
  o << "</select></label><label>chapter <select name=\"chapter\"><option value=\"\">any</option>";
  for (const auto& ch : m["chapters"]) o << "<option>" << mx_esc(mxh_text(ch, "id")) << "</option>";
  o << "</select></label><label>kind <select name=\"kind\"><option value=\"\">any</option>";
  for (const char* k : {"analytic", "numeric", "measured", "phenomenon"}) o << "<option>" << k << "</option>";
  o << "</select></label><span id=\"shown\"></span></form></section>\n";
  for (const auto& ch : m["chapters"]) {
    o << "<section class=\"chapter\" id=\"" << mx_esc(mxh_text(ch, "id")) << "\"><h2>" << mx_esc(mxh_text(ch, "id"))
      << " — " << mx_esc(mxh_text(ch, "title")) << "</h2><table><tr><th>claim</th><th>the series</th><th>stated</th>";
    for (const auto& mc : m["machines"]) o << "<th>" << mx_esc(mxh_text(mc, "label")) << "</th>";
    o << "<th>holds</th></tr>";
    for (const auto& row : m["claims"]) {
      if (row["chapter"] != ch["id"]) continue;
      std::string statuses, kinds;
      for (const auto& [st, n] : row["statuses"].items()) statuses += (statuses.empty() ? "" : " ") + st;
      for (const auto& k : row["kind"]) kinds += (kinds.empty() ? "" : " ") + k.get<std::string>();
      const json& st = row["stated"];
      o << "<tr class=\"claim\" id=\"" << mx_esc(mxh_text(row, "id")) << "\" data-chapter=\""
        << mx_esc(mxh_text(row, "chapter")) << "\" data-statuses=\"" << mx_esc(statuses) << "\" data-kind=\""
        << mx_esc(kinds) << "\" data-differ=\"" << (row["differ"].get<bool>() ? "true" : "false")
        << "\"><td class=\"id\">" << mx_esc(mxh_text(row, "id")) << "</td><td><div>" << mx_esc(mxh_text(row, "source"))
        << "</div><div class=\"src\">" << mx_esc(mxh_text(row, "title")) << "</div></td><td>"
        << mx_esc(st.is_object() && st.value("value", json()).is_number()
                      ? sig3(st["value"].get<double>()) + " " + mxh_text(st, "unit")
                      : std::string("—"))
        << "</td>";
      for (std::size_t k = 0; k < m["machines"].size(); ++k) cell_html(o, row, row["cells"][k], m["machines"][k]);
      o << "<td>" << mx_esc(matrix_holds_text(row));
      if (!mxh_text(row, "separated_by").empty())
        o << "<div class=\"differ\">separated by: " << mx_esc(mxh_text(row, "separated_by")) << "</div>";
      if (!mxh_text(row, "expected_changed").empty())
        o << "<div class=\"changed\">" << mx_esc(mxh_text(row, "expected_changed")) << "</div>";
      o << "</td></tr>";
    }
    o << "</table></section>\n";
  }
  o << "</main>" << kFilterScript << "</body></html>\n";
  return o.str();
}

}  // namespace claimcheck
