// report.html: one self-contained page (inline CSS, SVG and one small script). In reading order: the summary's
// badges; the machine (a card: CPU and microarchitecture, cores, ISA, each roof the run measured, memory, GPU, PyTorch
// and the BLAS / oneDNN it computes with); what needs attention (failures, errors, unexpected passes, one line of
// cause each, linked to their rows); a filter by status, chapter and kind (also from the address: #status=fail,
// ?chapter=ch06&kind=measured); one table per chapter with a row per claim and a row per statement it was judged
// on (what that statement held the figure to, the figure, its verdict), links to the expected file, the check's
// source line and the catalogue (docs/claims.md), the charts (report_charts.cpp); the machine's roofline; the
// benchmark ratios; the comparison with a previous report when one was given; the seven records, summarised, their
// JSON folded.
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "compare.h"
#include "report_writers.h"
#include "tolerance.h"

namespace claimcheck {
using nlohmann::json;

namespace {

std::string esc(const std::string& s) { return html_escape(s); }

std::string num3(const json& v, const std::string& unit) {
  if (v.is_number()) return sig3(v.get<double>()) + (unit.empty() || unit == "bool" ? "" : " " + unit);
  return value_text(v, unit);
}
std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string o;
  for (const auto& x : v) o += (o.empty() ? "" : sep) + x;
  return o;
}
json get(const json& j, const char* key) { return j.is_object() && j.contains(key) ? j[key] : json(); }
std::string str(const json& j, const char* key) {
  const json v = get(j, key);
  return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump();
}

bool needs_attention(const ClaimResult& c) {
  return c.status == Status::fail || c.status == Status::error || c.status == Status::xpass;
}
std::string status_class(const ClaimResult& c) { return c.not_implemented ? "ni" : to_string(c.status); }

// One line: why a claim needs attention. The first statement that failed (not an expected failure), else the
// claim's reason; a check's own "cause" detail (a determinism check's first divergent step) after it.
std::string cause_of(const ClaimResult& c) {
  std::string out = c.reason;
  if (c.status == Status::fail)
    for (const auto& m : c.measurements)
      if (m.compared && !m.ok && !m.expected_failure) {
        out = (m.name == "value" ? "" : m.name + ": ") + m.verdict;
        break;
      }
  if (c.details.contains("cause") && c.details["cause"].is_string())
    out += " — " + c.details["cause"].get<std::string>();
  return out;
}

// The repository-relative path of a check's source line ("checks/ch06/x.cpp:42"), "" where it is not inside.
std::string source_rel(const std::string& loc, const std::string& root) {
  if (!loc.empty() && loc.front() != '/') return loc;  // relative already (a run strips the checkout)
  if (root.empty() || loc.empty()) return "";
  std::string r = root;
  if (r.back() != '/') r += '/';
  return loc.rfind(r, 0) == 0 ? loc.substr(r.size()) : "";
}

// The card's rows: (label, text).
std::vector<std::pair<std::string, std::string>> hardware_rows(const Report& r) {
  std::vector<std::pair<std::string, std::string>> rows;
  const json hw = get(r.records, "hardware"), env = get(r.records, "environment");
  std::string cpu = str(hw, "cpu_model");
  const std::string ua = str(hw, "microarchitecture");
  if (!ua.empty())
    cpu +=
        " · " + ua + (str(hw, "microarchitecture_by").empty() ? "" : " (by " + str(hw, "microarchitecture_by") + ")");
  if (hw.contains("cpu_family")) cpu += " · family " + str(hw, "cpu_family") + " model " + str(hw, "cpu_model_number");
  rows.emplace_back("CPU", cpu);
  rows.emplace_back("cores", str(hw, "usable_cpus") + " usable of " + str(hw, "logical_cpus") + " logical CPUs");
  if (get(hw, "isa").is_array()) {
    std::vector<std::string> isa;
    for (const auto& x : hw["isa"]) isa.push_back(x.is_string() ? x.get<std::string>() : x.dump());
    rows.emplace_back("ISA", join(isa, " "));
  }
  if (get(hw, "memory_bytes").is_number())
    rows.emplace_back("memory", sig3(hw["memory_bytes"].get<double>() / (1ull << 30)) + " GiB");
  // The roofs: ch06.ridge_measured's, else the first claim that measured some.
  json roof;
  for (const auto& c : r.claims)
    if (c.details.contains("roof") && c.details["roof"].is_object() &&
        (roof.is_null() || c.id == "ch06.ridge_measured"))
      roof = c.details["roof"];
  if (roof.is_object()) {
    std::vector<std::string> engines;
    for (const auto& e : get(roof, "engines").is_array() ? roof["engines"] : json::array()) {
      if (!get(e, "peak_gflops").is_number()) continue;
      std::string t = str(e, "engine") + " " + sig3(e["peak_gflops"].get<double>()) + " GFLOP/s";
      if (get(e, "share_of_theoretical").is_number())
        t += " (" + sig3(e["share_of_theoretical"].get<double>() * 100) + " % of " +
             sig3(get(e, "theoretical_gflops").is_number() ? e["theoretical_gflops"].get<double>() : 0) + ")";
      engines.push_back(t);
    }
    if (engines.empty() && get(roof, "peak_gflops").is_number())
      engines.push_back("peak " + sig3(roof["peak_gflops"].get<double>()) + " GFLOP/s");
    std::string mem;
    if (get(roof, "read_gb_s").is_number()) mem += "read " + sig3(roof["read_gb_s"].get<double>()) + " GB/s";
    if (get(roof, "triad_gb_s").is_number()) mem += ", triad " + sig3(roof["triad_gb_s"].get<double>()) + " GB/s";
    if (get(roof, "ridge_flop_per_byte").is_number())
      mem += "; ridge " + sig3(roof["ridge_flop_per_byte"].get<double>()) + " FLOP/byte";
    std::string clock;
    if (get(roof, "clock_measured_ghz").is_number())
      clock = "clock under load " + sig3(roof["clock_measured_ghz"].get<double>()) + " GHz";
    if (!engines.empty())
      rows.emplace_back("measured compute roofs", join(engines, "; ") + (clock.empty() ? "" : "; " + clock));
    if (!mem.empty())
      rows.emplace_back(
          "measured memory roof",
          mem + (get(roof, "llc_mb").is_number() ? " (LLC " + sig3(roof["llc_mb"].get<double>()) + " MB)" : ""));
    if (get(roof, "device").is_string()) rows.emplace_back("roofs measured on", roof["device"].get<std::string>());
  } else {
    rows.emplace_back("measured roofs", "none in this run (ch06.ridge_measured measures them)");
  }
  const json gpu = get(hw, "gpu");
  rows.emplace_back(
      "GPU", gpu.is_null() ? "none: " + str(hw, "gpu_absent_reason")
                           : (gpu.is_object() ? str(gpu, "name") +
                                                    (get(gpu, "memory_bytes").is_number()
                                                         ? ", " + sig3(gpu["memory_bytes"].get<double>() / 1e9) + " GB"
                                                         : "")
                                              : gpu.dump()));
  const json lt = get(env, "libtorch");
  if (lt.is_object()) {
    std::string t = "LibTorch " + str(lt, "version");
    if (lt.contains("loaded")) t += " (" + str(lt, "loaded") + ")";
    rows.emplace_back("PyTorch", t);
  } else if (lt.is_string()) {
    rows.emplace_back("PyTorch", lt.get<std::string>());
  }
  if (get(env, "cpu_math").is_string())
    rows.emplace_back("CPU math libraries used", env["cpu_math"].get<std::string>());
  const json py = get(env, "python");
  if (py.is_object())
    rows.emplace_back("Python", str(py, "version") + " (" + str(py, "interpreter") + "), torch " + str(py, "torch") +
                                    ", numpy " + str(py, "numpy"));
  rows.emplace_back("built with",
                    str(env, "compiler") + ", " + str(env, "build_type") + ", CUDA " + str(env, "cuda_runtime"));
  return rows;
}

// A statement's row: its name, what it was held to, the figure, the verdict, the why.
void statement_row(std::ostringstream& o, const Measurement& m) {
  const std::string cls = m.ok ? (m.expected_failure ? "xpass" : "pass") : (m.expected_failure ? "xfail" : "fail");
  const std::string label = m.ok ? (m.expected_failure ? "held (expected to fail)" : "holds")
                                 : (m.expected_failure ? "fails as expected" : "fails");
  o << "<tr class=\"stmt\"><td></td><td class=\"sname\">"
    << (m.part.empty() ? "" : "<span class=\"part " + m.part + "\">" + m.part + "</span> ")
    << esc(m.name == "value" ? "headline" : m.name) << "</td><td class=\"num\">"
    << esc(m.against.empty() ? value_text(m.stated, m.unit) : m.against) << "</td><td class=\"num\">"
    << esc(num3(m.value, m.unit)) << "</td><td><span class=\"verdict " << cls << "\">" << esc(label)
    << "</span></td><td><div>" << esc(m.verdict + basis_suffix(m.basis)) << "</div><div class=\"why\">" << esc(m.why)
    << "</div>";
  if (!m.evidence.empty())
    o << "<details><summary>evidence</summary><p class=\"why\">" << esc(m.evidence) << "</p></details>";
  if (m.expected_failure) o << "<div class=\"why\">expected failure: " << esc(m.xfail_reason) << "</div>";
  if (!m.variant.empty())  // which of the statement's variants judged it here, and the property that chose it
    o << "<div class=\"why variant\">variant <code>" << esc(m.variant) << "</code>: " << esc(m.variant_because)
      << "</div>";
  o << "</td></tr>";
}

// "lo–hi" with as many significant digits as it takes for the ends to read apart (3 to 8): 15.98–16.02, not 16–16.
std::string distinct_pair(double lo, double hi) {
  char a[32], b[32];
  for (int digits = 3; digits <= 8; ++digits) {
    std::snprintf(a, sizeof a, "%.*g", digits, lo);
    std::snprintf(b, sizeof b, "%.*g", digits, hi);
    if (std::string(a) != b) break;
  }
  return std::string(a) + "–" + b;
}
// A chart that names the statement its y-axis shows ("statement": "value" or an `also` name; "map": "ln" where the
// axis is the log of the stated unit, a perplexity's loss) gets that statement's stated figure and the values its
// rule accepts (report_charts.cpp draws them); a statement not compared in this run adds nothing.
json with_statement(json chart, const ClaimResult& c) {
  if (!chart.is_object() || !chart.contains("statement") || !chart["statement"].is_string()) return chart;
  const std::string name = chart["statement"].get<std::string>();
  const bool ln = chart.value("map", "") == "ln";
  for (const auto& m : c.measurements) {
    if (m.name != name || !m.compared || !m.stated.is_number() || std::isnan(m.accept_lo) || std::isnan(m.accept_hi))
      continue;
    const std::string unit = name == "value" ? str(c.stated, "unit") : m.unit;
    const std::string u = unit.empty() ? "" : " " + unit;
    const double v = m.stated.get<double>(), lo = m.accept_lo, hi = m.accept_hi;
    std::string range;
    if (std::isfinite(lo) && std::isfinite(hi))
      range = lo == hi ? "= " + sig3(lo) : distinct_pair(lo, hi);
    else if (std::isfinite(hi))
      range = "≤ " + sig3(hi);
    else if (std::isfinite(lo))
      range = "≥ " + sig3(lo);
    else
      range = "any";
    if (ln && !(v > 0 && hi > 0)) break;  // a log axis has no place for a figure (or a range) at or below 0
    const auto axis = [&](double x) { return ln ? std::log(x) : x; };
    json st = {{"value", axis(v)},
               {"label", "stated " + sig3(v) + u + (ln ? " (ln\u00a0" + sig3(std::log(v)) + ")" : "")},
               {"accepted", "accepted " + range + u}};
    if (std::isfinite(lo) && (!ln || lo > 0)) st["lo"] = axis(lo);
    if (std::isfinite(hi)) st["hi"] = axis(hi);
    chart["stated"] = st;
    break;
  }
  return chart;
}

void claim_rows(std::ostringstream& o, const ClaimResult& c, const Report& r) {
  const std::string cls = status_class(c);
  o << "<tbody class=\"claim\" id=\"" << esc(c.id) << "\" data-status=\"" << cls << "\" data-chapter=\""
    << esc(c.chapter) << "\" data-kind=\"" << esc(join(c.kinds, " ")) << "\">";
  o << "<tr class=\"head\"><td class=\"id\"><a href=\"#" << esc(c.id) << "\">" << esc(c.id)
    << "</a></td><td><div class=\"src\">" << esc(c.source) << "</div><div class=\"title\">" << esc(c.title) << "</div>";
  if (!r.root_link.empty()) {
    std::vector<std::string> links;
    const json cfg = get(get(get(get(r.records, "config"), "checks"), c.id.c_str()), "expected_file");
    if (cfg.is_string())
      links.push_back("<a href=\"" + esc(r.root_link + cfg.get<std::string>()) + "\">expected file</a>");
    const std::string loc = source_rel(c.check_location, r.source_root);
    if (!loc.empty()) {
      const auto colon = loc.rfind(':');
      links.push_back("<a href=\"" + esc(r.root_link + loc.substr(0, colon)) + "\" title=\"" + esc(loc) + "\">check (" +
                      esc(loc.substr(loc.find_last_of('/') + 1)) + ")</a>");
    }
    links.push_back("<a href=\"" + esc(r.root_link + "docs/claims.md#" + c.id) + "\">catalogue</a>");
    o << "<div class=\"links\">" << join(links, " · ") << "</div>";
  }
  o << "</td><td class=\"num\" title=\"the series' figure\">"
    << esc(num3(c.stated.value("value", json()), c.stated.value("unit", ""))) << "</td><td class=\"num\">"
    << esc(c.measured.is_object() ? num3(c.measured.value("value", json()), c.measured.value("unit", "")) : "—")
    << "</td><td><span class=\"verdict " << cls << "\">" << esc(verdict_label(c)) << "</span></td><td>"
    << esc(needs_attention(c) ? cause_of(c) : c.reason) << "</td></tr>";
  // The statements, the analytic part's before the measured part's (each in the check's order).
  for (const char* part : {"analytic", "", "measured"})
    for (const auto& m : c.measurements)
      if (m.compared && m.part == part) statement_row(o, m);
  std::vector<const Measurement*> others;
  for (const auto& m : c.measurements)
    if (!m.compared) others.push_back(&m);
  if (!others.empty() || !c.assumptions.empty() || !c.alternatives.empty() || !c.pending_parts.empty()) {
    o << "<tr class=\"more\"><td></td><td colspan=\"5\"><details><summary>other figures, assumptions, "
         "alternatives</summary><ul>";
    for (const auto* m : others) o << "<li>" << esc(m->name) << ": " << esc(num3(m->value, m->unit)) << "</li>";
    for (const auto& a : c.assumptions) o << "<li>assumes: " << esc(a) << "</li>";
    for (const auto& a : c.alternatives)
      o << "<li>under <b>" << esc(a.value("name", "")) << "</b>: " << esc(num3(a.at("value"), a.value("unit", "")))
        << " — " << esc(a.value("assumptions", "")) << "</li>";
    for (const auto& p : c.pending_parts) o << "<li>pending: " << esc(p) << "</li>";
    if (c.seconds > 0) o << "<li>ran in " << sig3(c.seconds) << " s</li>";
    o << "</ul></details></td></tr>";
  }
  auto chart = [&](const std::string& svg) {
    if (!svg.empty()) o << "<tr class=\"chart\"><td></td><td colspan=\"5\">" << svg << "</td></tr>";
  };
  if (c.details.contains("curve")) chart(svg_curve(with_statement(c.details["curve"], c)));
  if (c.details.contains("roofline")) chart(svg_roofline(c.details["roofline"]));
  if (c.details.contains("stacked")) {
    const json& st = c.details["stacked"];
    for (const auto& one : st.is_array() ? st : json::array({st})) chart(svg_stacked(with_statement(one, c)));
  }
  o << "</tbody>";
}

// The machine's roofline: the roofs of ch06.ridge_measured (else the first claim that has some), every point the
// claims measured (the batch sweep thinned to its decades), and benchmark rows that carry an intensity.
std::string machine_roofline(const Report& r) {
  json roof;
  for (const auto& c : r.claims)
    if (c.details.contains("roofline") && !svg_roofline(c.details["roofline"]).empty() &&
        (roof.is_null() || c.id == "ch06.ridge_measured"))
      roof = c.details["roofline"];
  if (!roof.is_object()) return "";
  json all = {{"title", "this machine's roofline: every point measured in this run"},
              {"peak_flops", roof.value("peak_flops", json())},
              {"bandwidth", roof.value("bandwidth", json())},
              {"theoretical_peak_flops", roof.value("theoretical_peak_flops", json())},
              {"roofs", roof.value("roofs", json::array())},
              {"points", json::array()}};
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
                                        : b.contains("name") && b["name"].is_string() ? b["name"]
                                                                                      : json("")},
                               {"intensity", b["intensity"]},
                               {"flops", b["gflops"].get<double>() * 1e9}});
  return svg_roofline(all);
}

const char* kStyle = R"(<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{background:#1d2330;color:#fff;padding:20px 32px}header h1{margin:0 0 6px;font-size:22px}
main{max-width:1280px;margin:0 auto;padding:16px 32px 48px}
.badges a{display:inline-block;margin:4px 8px 0 0;padding:3px 10px;border-radius:12px;font-weight:600;font-size:13px;text-decoration:none}
.pass{background:#dff3e4;color:#1b6e34}.fail,.xpass,.error{background:#fde2e1;color:#a4161a}
.skip{background:#eceff3;color:#4a5565}.xfail{background:#fff1cc;color:#7a5a00}.partial{background:#e3eefc;color:#1d4f91}.ni{background:#e8e4f7;color:#4b3a8c}
section{background:#fff;border:1px solid #e1e4ea;border-radius:8px;margin:20px 0;padding:4px 18px 14px}
h2{font-size:18px;margin:14px 0 10px}table{border-collapse:collapse;width:100%}
section.chapter table{table-layout:fixed}section.chapter td{overflow-wrap:anywhere}
col.c-id{width:15%}col.c-says{width:25%}col.c-held{width:15%}col.c-meas{width:10%}col.c-verdict{width:9%}col.c-why{width:26%}
th,td{text-align:left;vertical-align:top;padding:6px 8px;font-size:14px}
tbody.claim{border-top:2px solid #e1e4ea}tr.stmt td,tr.more td{font-size:12.5px;padding-top:2px;padding-bottom:2px}
th{font-size:12px;text-transform:uppercase;color:#5b6474}
td.id{font-family:ui-monospace,monospace;font-size:12.5px}td.id a{color:inherit}
td.num{font-variant-numeric:tabular-nums}td.sname{font-family:ui-monospace,monospace;color:#3a4150}
span.part{font:10.5px system-ui,sans-serif;padding:0 4px;border-radius:3px;margin-right:2px}
span.part.analytic{background:#e8eefa;color:#234}span.part.measured{background:#fbeedd;color:#5a3510}
.verdict{font-weight:700;padding:2px 8px;border-radius:10px;font-size:12px;display:inline-block}
.src{color:#3a4150}.title,.why{color:#5b6474;font-size:12.5px}.links{font-size:12px;margin-top:2px}.links a{color:#2c5fa8}
details{margin-top:2px}summary{cursor:pointer;color:#2c5fa8;font-size:12.5px}
details ul{margin:4px 0 0 16px;padding:0;font-size:12.5px;color:#3a4150}
table.card td:first-child{color:#5b6474;white-space:nowrap;width:12em}
#attention li{margin:4px 0}#attention a{font-family:ui-monospace,monospace}
form#filter label{margin-right:14px;font-size:13px}#shown{font-size:13px;color:#5b6474}
pre{background:#f3f4f7;padding:10px;border-radius:6px;overflow:auto;font-size:12px}
</style>)";

}  // namespace

// The filter of report.html and matrix.html: status, chapter and kind selects over the rows of class "claim" (their
// data-status, or data-statuses: a space-separated list; "attention" matches a failure, error or unexpected pass,
// "differ" a matrix row whose verdicts differ); its state read from the address (#status=fail or
// ?chapter=ch06&kind=measured) on load and written back on change, so that a filtered view is a link.
const char* const kFilterScript = R"(<script>
(function () {
  var form = document.getElementById('filter');
  function params() {
    var p = new URLSearchParams(location.search);
    var h = location.hash.slice(1);
    if (h.indexOf('=') >= 0) new URLSearchParams(h).forEach(function (v, k) { p.set(k, v); });
    return p;
  }
  function apply() {
    var st = form.status.value, ch = form.chapter.value, kd = form.kind.value, shown = 0, all = 0;
    document.querySelectorAll('.claim').forEach(function (b) {
      var sts = ' ' + (b.dataset.statuses || b.dataset.status) + ' ';
      var ok = (!st || sts.indexOf(' ' + st + ' ') >= 0 || (st === 'attention' && / (fail|error|xpass) /.test(sts)) ||
                (st === 'differ' && b.dataset.differ === 'true')) &&
               (!ch || b.dataset.chapter === ch) && (!kd || (' ' + b.dataset.kind + ' ').indexOf(' ' + kd + ' ') >= 0);
      b.hidden = !ok; all++; if (ok) shown++;
    });
    document.querySelectorAll('section.chapter').forEach(function (s) {
      s.hidden = !s.querySelector('.claim:not([hidden])');
    });
    var out = document.getElementById('shown');
    out.textContent = shown + ' of ' + all + ' claims shown';
    out.dataset.shown = shown;
  }
  var p = params();
  ['status', 'chapter', 'kind'].forEach(function (k) { if (p.get(k)) form[k].value = p.get(k); });
  form.addEventListener('change', function () {
    var q = [];
    ['status', 'chapter', 'kind'].forEach(function (k) { if (form[k].value) q.push(k + '=' + form[k].value); });
    history.replaceState(null, '', q.length ? '#' + q.join('&') : location.pathname);
    apply();
  });
  window.addEventListener('hashchange', function () {
    var p = params();
    if (location.hash.indexOf('=') < 0) return;
    ['status', 'chapter', 'kind'].forEach(function (k) { form[k].value = p.get(k) || ''; });
    apply();
  });
  apply();
})();
</script>)";

std::string HtmlWriter::filename() const { return "report.html"; }

std::string HtmlWriter::render(const Report& r) const {
  const Summary s = summarize(r.claims);
  std::ostringstream o;
  o << "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>claimcheck report</title>\n"
       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
    << kStyle << "</head><body>\n<header><h1>claimcheck — the series' claims, checked on this machine</h1><div>"
    << esc(summary_line(s)) << "</div><div class=\"badges\" id=\"summary\">";
  for (Status v : {Status::pass, Status::partial, Status::fail, Status::xfail, Status::xpass, Status::error}) {
    const char* k = to_string(v);
    o << "<a class=\"" << k << "\" href=\"#status=" << k << "\" data-status=\"" << k << "\" data-count=\"" << s[v]
      << "\">" << s[v] << " " << k << "</a>";
  }
  o << "<a class=\"skip\" href=\"#status=skip\" data-status=\"skip\" data-count=\"" << s.skipped() << "\">"
    << s.skipped() << " skip</a>";
  if (s.not_implemented > 0)
    o << "<a class=\"ni\" href=\"#status=ni\" data-status=\"ni\" data-count=\"" << s.not_implemented << "\">"
      << s.not_implemented << " not implemented yet</a>";
  o << "</div><div style=\"font-size:12.5px;margin-top:6px;opacity:.8\">generated " << esc(r.generated_at)
    << " · commit " << esc(commit_sha(r.records)) << " · seed " << esc(str(r.records, "seed"))
    << "</div></header><main>";

  // The machine.
  o << "<section id=\"hardware\"><h2>This machine</h2><table class=\"card\">";
  for (const auto& [k, v] : hardware_rows(r)) o << "<tr><td>" << esc(k) << "</td><td>" << esc(v) << "</td></tr>";
  o << "</table></section>";

  // What needs attention.
  std::vector<const ClaimResult*> bad;
  for (const auto& c : r.claims)
    if (needs_attention(c)) bad.push_back(&c);
  o << "<section id=\"attention\"><h2>Needs attention: " << bad.size() << "</h2>";
  if (bad.empty()) {
    o << "<p>Nothing failed, errored or passed unexpectedly.</p>";
  } else {
    o << "<ul id=\"failures\">";
    for (const auto* c : bad)
      o << "<li data-id=\"" << esc(c->id) << "\" data-status=\"" << status_class(*c) << "\"><span class=\"verdict "
        << status_class(*c) << "\">" << esc(verdict_label(*c)) << "</span> <a href=\"#" << esc(c->id) << "\">"
        << esc(c->id) << "</a> " << esc(cause_of(*c)) << "</li>";
    o << "</ul>";
  }
  o << "</section>";

  // The filter.
  const auto chapters = by_chapter(r);
  std::set<std::string> kinds;
  for (const auto& c : r.claims) kinds.insert(c.kinds.begin(), c.kinds.end());
  o << "<section id=\"filters\"><h2>Claims</h2><form id=\"filter\"><label>status <select name=\"status\"><option "
       "value=\"\">all</option>"
       "<option value=\"attention\">needs attention</option>";
  for (const char* k : {"pass", "partial", "fail", "xfail", "xpass", "error", "skip", "ni"})
    o << "<option value=\"" << k << "\">" << k << "</option>";
  o << "</select></label><label>chapter <select name=\"chapter\"><option value=\"\">all</option>";
  for (const auto& [ch, cl] : chapters)
    o << "<option value=\"" << esc(ch) << "\">" << esc(chapter_heading(ch, cl)) << "</option>";
  o << "</select></label><label>kind <select name=\"kind\"><option value=\"\">all</option>";
  for (const auto& k : kinds) o << "<option value=\"" << esc(k) << "\">" << esc(k) << "</option>";
  o << "</select></label><span id=\"shown\" data-shown=\"" << r.claims.size() << "\">" << r.claims.size()
    << " claims</span></form></section>";

  for (const auto& [ch, claims] : chapters) {
    o << "<section class=\"chapter\" id=\"chapter-" << esc(ch) << "\"><h2>" << esc(chapter_heading(ch, claims))
      << "</h2><table><colgroup><col class=\"c-id\"><col class=\"c-says\"><col class=\"c-held\"><col class=\"c-meas\">"
         "<col class=\"c-verdict\"><col class=\"c-why\"></colgroup><thead><tr><th>claim</th><th>the series says · "
         "statement</th><th>series' figure · held to</th>"
         "<th>measured</th><th>verdict</th><th>why</th></tr></thead>";
    for (const auto* c : claims) claim_rows(o, *c, r);
    o << "</table></section>";
  }
  if (const std::string svg = machine_roofline(r); !svg.empty())
    o << "<section id=\"roofline\"><h2>Roofline</h2>" << svg << "</section>";
  if (!r.benchmarks.empty()) {
    o << "<section id=\"benchmarks\"><h2>Benchmarks (ratios within one "
         "run)</h2><table><tr><th>benchmark</th><th>ratio</th><th>share of this run's probe</th><th>detail</th></tr>";
    for (const auto& b : r.benchmarks)
      o << "<tr><td class=\"id\">" << esc(b.value("name", "")) << "</td><td class=\"num\">"
        << sig3(b.value("ratio", 0.0)) << "</td><td>" << esc(benchmark_share(r, b)) << "</td><td>"
        << esc(b.value("detail", "")) << "</td></tr>";
    o << "</table></section>";
  }
  if (r.comparison.is_object()) {
    o << "<section id=\"comparison\"><h2>Against the previous report</h2><pre>" << esc(compare_markdown(r.comparison))
      << "</pre></section>";
  }
  // The seven records: one line each, the JSON folded.
  o << "<section id=\"records\"><h2>The seven records</h2><ul>";
  const json env = get(r.records, "environment"), cfg = get(r.records, "config");
  o << "<li>commit " << esc(commit_sha(r.records)) << "</li><li>seed " << esc(str(r.records, "seed")) << "</li>"
    << "<li>config: " << esc(str(cfg, "command")) << ", " << esc(str(cfg, "selected")) << " claims selected</li>"
    << "<li>environment: " << esc(str(env, "compiler")) << ", " << esc(str(env, "build_type"))
    << (get(env, "cpu_math").is_string() ? ", " + esc(env["cpu_math"].get<std::string>()) : "") << "</li>"
    << "<li>hardware: see the card above</li><li>data revision "
    << esc(str(get(r.records, "data_revision"), "sha256").substr(0, 16))
    << "</li><li>logs: " << esc(str(get(r.records, "logs"), "run_log")) << "</li></ul>"
    << "<details><summary>the records as JSON</summary><pre>"
    << esc(r.records.dump(2, ' ', false, json::error_handler_t::replace)) << "</pre></details></section>";
  o << "</main>" << kFilterScript << "</body></html>\n";
  return o.str();
}

}  // namespace claimcheck
