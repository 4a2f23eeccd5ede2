// claimcheck site: the history of every machine's reports as a static site (site.h).
#include "site.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "compare.h"
#include "errors.h"
#include "matrix.h"
#include "report.h"
#include "report_writers.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct SiteRun {
  fs::path file;
  json report;
  std::string sha, at;
};
struct SiteMachine {
  std::string key, label, slug;
  std::vector<SiteRun> runs;  // oldest first
};

std::string site_esc(const std::string& s) { return html_escape(s); }

// A file name from a machine's label: letters and digits, the rest one '-', and the key's hash to tell apart two
// machines of one label.
std::string site_slug(const std::string& label, const std::string& key) {
  std::string s;
  for (char c : label) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (word)
      s += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    else if (!s.empty() && s.back() != '-')
      s += '-';
  }
  while (!s.empty() && s.back() == '-') s.pop_back();
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : key) h = (h ^ c) * 16777619u;
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08x", h);
  return (s.empty() ? "machine" : s.substr(0, 48)) + "-" + std::string(hex).substr(0, 6);
}

std::vector<fs::path> site_find_reports(const fs::path& history) {
  std::error_code ec;
  if (!fs::is_directory(history, ec))
    throw InputError(history.string() + ": field '(folder)': not a folder (the history: one folder per machine)");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(history, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() > 3) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec) && it->path().filename() == "report.json") files.push_back(it->path());
  }
  if (ec) throw InputError(history.string() + ": field '(folder)': cannot be read (" + ec.message() + ")");
  if (files.empty())
    throw InputError(history.string() + ": field '(folder)': no report.json under it (at most four folders deep)");
  std::sort(files.begin(), files.end());
  return files;
}

// What compare finds between two runs of one machine, per claim and per benchmark: the reason to mark the later run.
struct SiteMoves {
  std::map<std::string, std::string> claims, benchmarks;
};
SiteMoves site_moves_between(const SiteRun& a, const SiteRun& b) {
  CompareOptions opt;
  opt.only_common = true;
  const json cmp = compare_reports(a.report, a.file.string(), b.report, b.file.string(), opt);
  SiteMoves m;
  for (const auto& c : cmp.value("claims", json::array())) {
    const std::string change = matrix_text(c, "change");
    if (change == "unchanged" || change == "not compared" || change.empty()) continue;
    m.claims[matrix_text(c, "id")] = change + ": " + matrix_text(c, "old") + " → " + matrix_text(c, "new") +
                                     (matrix_text(c, "reason").empty() ? "" : " (" + matrix_text(c, "reason") + ")");
  }
  for (const auto& f : cmp.value("figures", json::array())) {
    const std::string t = matrix_text(f, "tolerance");
    if (t.find("moved") == std::string::npos) continue;  // "moved out of" / "moved back within" its tolerance
    std::string& r = m.claims[matrix_text(f, "claim")];
    r += (r.empty() ? "" : "; ") + matrix_text(f, "figure") + " " + t;
  }
  for (const auto& e : cmp.value("benchmarks", json::array())) {
    const std::string v = matrix_text(e, "verdict");
    if (v == "slower" || v == "faster")
      m.benchmarks[matrix_text(e, "name")] =
          v + " beyond its noise (U test p = " + sig3(e.value("p_value", 1.0)) + ", median " +
          (e["move"].is_number() ? sig3(100 * e["move"].get<double>()) + " %" : std::string("?")) + ")";
  }
  return m;
}

// One timeline as an inline SVG: a point per run (x: the run's place, y: the figure), coloured by its status, a ring
// where the run moved, each point linking to its run's page.
struct SitePoint {
  json value;  // a number, a bool or null
  std::string status, unit, title, link, moved;
};
std::string site_timeline_svg(const std::vector<SitePoint>& pts) {
  const double w = 300, h = 56, pad = 8;
  double lo = INFINITY, hi = -INFINITY;
  auto y_of = [](const json& v) -> double {
    if (v.is_number()) return v.get<double>();
    if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
    return NAN;
  };
  for (const auto& p : pts) {
    const double y = y_of(p.value);
    if (std::isfinite(y)) lo = std::min(lo, y), hi = std::max(hi, y);
  }
  if (!std::isfinite(lo)) lo = 0, hi = 1;
  if (hi - lo < 1e-12 * std::max(1.0, std::fabs(hi))) {  // one value: a flat line in the middle
    const double d = std::max(0.05 * std::fabs(hi), 1e-9);
    lo -= d, hi += d;
  }
  std::ostringstream o;
  o << "<svg class=\"timeline\" width=\"" << w << "\" height=\"" << h << "\" viewBox=\"0 0 " << w << " " << h
    << "\" role=\"img\">";
  const std::size_t n = pts.size();
  auto x_at = [&](std::size_t i) { return n > 1 ? pad + (w - 2 * pad) * static_cast<double>(i) / (n - 1) : w / 2; };
  auto y_at = [&](double y) { return h - pad - (h - 2 * pad) * (y - lo) / (hi - lo); };
  std::string line;
  for (std::size_t i = 0; i < n; ++i) {
    const double y = y_of(pts[i].value);
    if (!std::isfinite(y)) continue;
    line += (line.empty() ? "" : " ") + sig3(x_at(i)) + "," + sig3(y_at(y));
  }
  if (!line.empty()) o << "<polyline fill=\"none\" stroke=\"#9aa3b2\" stroke-width=\"1.2\" points=\"" << line << "\"/>";
  for (std::size_t i = 0; i < n; ++i) {
    const double y = y_of(pts[i].value);
    const double cy = std::isfinite(y) ? y_at(y) : h - pad;
    o << "<a href=\"" << site_esc(pts[i].link) << "\"><g class=\"point " << site_esc(pts[i].status)
      << (pts[i].moved.empty() ? "" : " moved") << "\" data-run=\"" << i << "\"><title>" << site_esc(pts[i].title)
      << (pts[i].moved.empty() ? "" : " — moved: " + site_esc(pts[i].moved)) << "</title>";
    if (!pts[i].moved.empty())
      o << "<circle cx=\"" << sig3(x_at(i)) << "\" cy=\"" << sig3(cy)
        << "\" r=\"7\" fill=\"none\" stroke=\"#a4161a\" stroke-width=\"1.6\"/>";
    o << "<circle cx=\"" << sig3(x_at(i)) << "\" cy=\"" << sig3(cy) << "\" r=\"4\"/></g></a>";
  }
  o << "</svg>";
  return o.str();
}

const char* kSiteStyle = R"(<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:20px 32px}header h1{margin:0 0 6px;font-size:22px}header a{color:#cfe0ff}
main{margin:0 auto;padding:16px 32px 48px}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;margin:20px 0;padding:4px 18px 14px;overflow-x:auto}
h2{font-size:18px;margin:14px 0 10px}table{border-collapse:collapse}
th,td{text-align:left;vertical-align:middle;padding:5px 8px;font-size:13.5px;border-top:1px solid #eef0f3}
th{font-size:12px;color:#5b6474}td.id{font-family:ui-monospace,monospace;font-size:12.5px}
.src,.why{color:#5b6474;font-size:12.5px}.moved-text{color:#a4161a;font-size:12.5px}
.point circle{fill:#9aa3b2}.point.pass circle{fill:#1b6e34}.point.fail circle,.point.xpass circle,.point.error circle{fill:#a4161a}
.point.xfail circle{fill:#c79a00}.point.partial circle{fill:#1d4f91}.point.skip circle{fill:#b8c0cc}
</style>)";

std::string site_machine_page(const SiteMachine& m, const std::vector<SiteMoves>& moves, const fs::path& page_dir,
                              const std::string& card, json* data) {
  std::ostringstream o;
  o << "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>claimcheck history: " << site_esc(m.label)
    << "</title>" << kSiteStyle << "</head><body><header><h1>claimcheck history · " << site_esc(m.label) << "</h1><div>"
    << m.runs.size() << " run(s), " << site_esc(m.runs.front().at) << " to " << site_esc(m.runs.back().at)
    << " · <a href=\"../index.html\">the matrix of every machine</a></div><div class=\"src\">" << site_esc(card)
    << "</div></header><main>\n";
  // The runs.
  o << "<section id=\"runs\"><h2>Runs</h2><table><tr><th>#</th><th>when</th><th>commit</th><th>summary</th></tr>";
  json runs = json::array();
  for (std::size_t i = 0; i < m.runs.size(); ++i) {
    const SiteRun& r = m.runs[i];
    const json s = r.report.value("summary", json::object());
    std::string sum;
    for (const char* k : {"pass", "partial", "fail", "xfail", "xpass", "error", "skip"})
      if (s.value(k, 0) > 0) sum += (sum.empty() ? "" : ", ") + std::to_string(s.value(k, 0)) + " " + k;
    o << "<tr><td>" << i + 1 << "</td><td>" << site_esc(r.at) << "</td><td class=\"id\"><a href=\""
      << site_esc(report_link(r.file, page_dir)) << "\">" << site_esc(r.sha.substr(0, 7)) << "</a></td><td>"
      << site_esc(sum) << "</td></tr>";
    runs.push_back({{"commit", r.sha}, {"generated_at", r.at}, {"summary", s}});
  }
  o << "</table></section>\n";
  // Claims, by chapter, in the order of the latest run.
  json claims = json::object();
  std::map<std::string, std::vector<const json*>> by_chapter;
  std::set<std::string> seen;
  for (auto it = m.runs.rbegin(); it != m.runs.rend(); ++it)
    for (const auto& c : it->report["claims"])
      if (seen.insert(matrix_text(c, "id")).second) by_chapter[matrix_text(c, "chapter")].push_back(&c);
  for (auto& [ch, list] : by_chapter) {
    std::sort(list.begin(), list.end(),
              [](const json* a, const json* b) { return matrix_text(*a, "id") < matrix_text(*b, "id"); });
    o << "<section class=\"chapter\" id=\"" << site_esc(ch) << "\"><h2>" << site_esc(ch) << " · "
      << site_esc(matrix_text(*list.front(), "chapter_title"))
      << "</h2><table><tr><th>claim</th><th>figure over the runs</th>"
      << "<th>latest</th><th>moves</th></tr>";
    for (const json* c : list) {
      const std::string id = matrix_text(*c, "id");
      std::vector<SitePoint> pts;
      json jp = json::array();
      std::string moved_all;
      for (std::size_t i = 0; i < m.runs.size(); ++i) {
        const SiteRun& r = m.runs[i];
        const json* in = nullptr;
        for (const auto& x : r.report["claims"])
          if (matrix_text(x, "id") == id) in = &x;
        SitePoint p;
        p.status = in ? matrix_text(*in, "status") : "absent";
        const json meas = in ? in->value("measured", json()) : json();
        p.value = meas.is_object() ? meas.value("value", json()) : json();
        p.unit = meas.is_object() ? matrix_text(meas, "unit") : "";
        p.link = report_link(r.file, page_dir) + "#" + id;
        if (i > 0 && moves[i - 1].claims.count(id)) p.moved = moves[i - 1].claims.at(id);
        p.title = r.sha.substr(0, 7) + " · " + r.at + " · " + p.status +
                  (p.value.is_null() ? ""
                                     : " · " + (p.value.is_number() ? sig3(p.value.get<double>()) : p.value.dump()) +
                                           (p.unit.empty() || p.unit == "bool" ? "" : " " + p.unit));
        if (!p.moved.empty()) moved_all += (moved_all.empty() ? "" : " | ") + r.sha.substr(0, 7) + ": " + p.moved;
        jp.push_back({{"status", p.status}, {"value", p.value}, {"unit", p.unit}, {"moved", p.moved}});
        pts.push_back(std::move(p));
      }
      claims[id] = jp;
      const SitePoint& last = pts.back();
      o << "<tr class=\"claim\" id=\"" << site_esc(id) << "\"><td class=\"id\">" << site_esc(id)
        << "<div class=\"src\">" << site_esc(matrix_text(*c, "title")) << "</div></td><td>" << site_timeline_svg(pts)
        << "</td><td>" << site_esc(last.status)
        << (last.value.is_number() ? " · " + sig3(last.value.get<double>()) + " " + site_esc(last.unit) : std::string())
        << "</td><td class=\"moved-text\">" << site_esc(moved_all) << "</td></tr>\n";
    }
    o << "</table></section>\n";
  }
  // Benchmarks.
  std::vector<std::string> names;
  for (const auto& r : m.runs)
    for (const auto& b : r.report.value("benchmarks", json::array()))
      if (std::find(names.begin(), names.end(), matrix_text(b, "name")) == names.end())
        names.push_back(matrix_text(b, "name"));
  json benches = json::object();
  if (!names.empty()) {
    o << "<section id=\"benchmarks\"><h2>Benchmarks (ratio over the competitor; higher is faster)</h2><table><tr>"
      << "<th>benchmark</th><th>ratio over the runs</th><th>latest</th><th>moves</th></tr>";
    for (const auto& name : names) {
      std::vector<SitePoint> pts;
      json jp = json::array();
      std::string moved_all, short_name = name;
      for (std::size_t i = 0; i < m.runs.size(); ++i) {
        const SiteRun& r = m.runs[i];
        SitePoint p;
        p.status = "absent";
        for (const auto& b : r.report.value("benchmarks", json::array()))
          if (matrix_text(b, "name") == name) {
            p.value = b.value("ratio", json());
            p.status = "pass";
            if (!matrix_text(b, "short").empty()) short_name = matrix_text(b, "short");
          }
        p.unit = "x";
        p.link = report_link(r.file, page_dir);
        if (i > 0 && moves[i - 1].benchmarks.count(name)) p.moved = moves[i - 1].benchmarks.at(name);
        p.title =
            r.sha.substr(0, 7) + " · " + r.at + (p.value.is_number() ? " · " + sig3(p.value.get<double>()) + "x" : "");
        if (!p.moved.empty()) moved_all += (moved_all.empty() ? "" : " | ") + r.sha.substr(0, 7) + ": " + p.moved;
        jp.push_back({{"ratio", p.value}, {"moved", p.moved}});
        pts.push_back(std::move(p));
      }
      benches[name] = jp;
      o << "<tr class=\"benchmark\"><td>" << site_esc(short_name) << "<div class=\"src\">" << site_esc(name)
        << "</div></td><td>" << site_timeline_svg(pts) << "</td><td>"
        << (pts.back().value.is_number() ? sig3(pts.back().value.get<double>()) + "x" : std::string("—"))
        << "</td><td class=\"moved-text\">" << site_esc(moved_all) << "</td></tr>\n";
    }
    o << "</table></section>\n";
  }
  o << "</main></body></html>\n";
  *data = {{"slug", m.slug}, {"label", m.label}, {"runs", runs}, {"claims", claims}, {"benchmarks", benches}};
  return o.str();
}

}  // namespace

json write_site(const fs::path& history, const fs::path& out) {
  // Read: every report, grouped by machine, oldest first.
  std::map<std::string, SiteMachine> machines;
  for (const auto& file : site_find_reports(history)) {
    MatrixInput in = load_matrix_input(file, out);
    const json& rec = in.report["records"];
    SiteRun r{file, std::move(in.report), rec["commit"]["sha"].get<std::string>(), ""};
    r.at = matrix_text(r.report, "generated_at");
    const std::string key = matrix_machine_key(rec["hardware"]);
    SiteMachine& m = machines[key];
    m.key = key;
    m.label = machine_label(rec["hardware"]);
    m.runs.push_back(std::move(r));
  }
  // The matrix of each machine's latest run.
  std::vector<MatrixInput> latest;
  for (auto& [key, m] : machines) {
    std::stable_sort(m.runs.begin(), m.runs.end(),
                     [](const SiteRun& a, const SiteRun& b) { return std::tie(a.at, a.sha) < std::tie(b.at, b.sha); });
    m.slug = site_slug(m.label, key);
    latest.push_back(load_matrix_input(m.runs.back().file, out));
  }
  const json matrix = build_matrix(latest);
  // Each machine's timelines.
  std::vector<std::pair<fs::path, std::string>> files;
  json site = {{"schema", kSiteSchema}, {"history", history.generic_string()}, {"machines", json::array()}};
  std::ostringstream nav;
  nav << "<section id=\"history\"><h2>History</h2><p class=\"why\">Each machine's timelines: every claim's figure and "
         "every benchmark's ratio over its runs, with the runs where they moved.</p><ul>";
  for (const auto& [key, m] : machines) {
    std::vector<SiteMoves> moves;
    for (std::size_t i = 1; i < m.runs.size(); ++i) moves.push_back(site_moves_between(m.runs[i - 1], m.runs[i]));
    json data;
    std::string card;
    for (const auto& mc : matrix["machines"])
      if (matrix_text(mc, "commit") == m.runs.back().sha && matrix_text(mc, "label").rfind(m.label, 0) == 0)
        card = matrix_card_text(mc);
    files.emplace_back(out / "machines" / (m.slug + ".html"),
                       site_machine_page(m, moves, out / "machines", card, &data));
    site["machines"].push_back(data);
    nav << "<li><a class=\"timeline-link\" href=\"machines/" << site_esc(m.slug) << ".html\">" << site_esc(m.label)
        << "</a>: " << m.runs.size() << " run(s), the latest " << site_esc(m.runs.back().at) << "</li>";
  }
  nav << "</ul></section>\n";
  std::string index = matrix_html(matrix);
  const std::string anchor = "<main>\n";
  const auto at = index.find(anchor);
  if (at != std::string::npos) index.insert(at + anchor.size(), nav.str());
  std::error_code ec;
  fs::create_directories(out / "machines", ec);
  if (ec) throw InputError(out.string() + ": field '--out': cannot be created (" + ec.message() + ")");
  files.emplace_back(out / "index.html", index);
  files.emplace_back(out / "matrix.json", matrix.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  files.emplace_back(out / "matrix.md", matrix_markdown(matrix));
  files.emplace_back(out / "site.json", site.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
  write_files_atomically(files);
  return site;
}

}  // namespace claimcheck
