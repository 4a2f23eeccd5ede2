#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "tolerance.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

json report_to_json(const Report& r) {
  json claims = json::array();
  for (const auto& c : r.claims) claims.push_back(to_json(c));
  return {{"schema", kReportSchema},       {"generated_at", r.generated_at},
          {"records", r.records},          {"summary", to_json(summarize(r.claims))},
          {"claims", claims},              {"benchmarks", r.benchmarks}};
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

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string md_cell(const std::string& s, std::size_t max) {
  std::string o;
  for (char c : s) {
    if (c == '|' || c == '*' || c == '_') o += std::string("\\") + c;  // table cell, no emphasis
    else o += c == '\n' ? ' ' : c;
  }
  if (o.size() <= max) return o;
  while (max > 0 && (static_cast<unsigned char>(o[max]) & 0xC0) == 0x80) --max;  // not inside a UTF-8 character
  return o.substr(0, max) + "…";
}

namespace {

std::string value_text(const json& v, const std::string& unit) {
  if (v.is_null()) return "—";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number()) return fmt(v.get<double>()) + (unit.empty() || unit == "bool" ? "" : " " + unit);
  return v.dump();
}
std::string stated_text(const ClaimResult& c) { return value_text(c.stated.value("value", json()), c.stated.value("unit", "")); }
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

const std::map<std::string, std::string>& chapter_titles() {
  static const std::map<std::string, std::string> t = {
      {"ch01", "Python usage layer"},
      {"ch02", "NumPy / Pandas / Matplotlib"},
      {"ch03", "PyTorch (1): five objects, twenty lines"},
      {"ch04", "PyTorch (2): the memory ledger"},
      {"ch05", "Hugging Face: three files, six libraries, LoRA SFT"},
      {"ch06", "GPU intuition and experiment management"}};
  return t;
}

std::string summary_line(const Summary& s) {
  std::ostringstream o;
  o << s.total << " claims: " << s.by_status.at("pass") << " pass, " << s.by_status.at("fail") << " fail, "
    << s.by_status.at("xfail") << " xfail, " << s.by_status.at("xpass") << " xpass, " << s.by_status.at("error")
    << " error, " << (s.by_status.at("skip") - s.not_implemented) << " skip, " << s.not_implemented
    << " not implemented yet; " << s.pending_parts << " parts of claims pending";
  return o.str();
}

// An inline SVG line chart for details.curve: {title, x_label, y_label, log_x, series: [{name, y, x?}],
// band: {lo, hi, x?}} — loss curves on a log x-axis with the seed band shaded, as the series advises.
std::string svg_curve(const json& c) {
  const double W = 660, H = 270, L = 60, R = 150, T = 30, B = 42;
  const bool logx = c.value("log_x", false);
  auto xs_of = [](const json& s, std::size_t n) {
    std::vector<double> x;
    if (s.contains("x"))
      for (const auto& v : s["x"]) x.push_back(v.get<double>());
    else
      for (std::size_t i = 0; i < n; ++i) x.push_back(static_cast<double>(i + 1));  // steps from 1
    return x;
  };
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto grow = [&](const std::vector<double>& x, const json& y) {
    for (std::size_t i = 0; i < y.size() && i < x.size(); ++i) {
      const double v = y[i].get<double>();
      if (!std::isfinite(v)) continue;
      x0 = std::min(x0, x[i]); x1 = std::max(x1, x[i]); y0 = std::min(y0, v); y1 = std::max(y1, v);
    }
  };
  const json series = c.value("series", json::array());
  for (const auto& sr : series) grow(xs_of(sr, sr["y"].size()), sr["y"]);
  const json band = c.value("band", json::object());
  if (band.contains("lo")) {
    grow(xs_of(band, band["lo"].size()), band["lo"]);
    grow(xs_of(band, band["hi"].size()), band["hi"]);
  }
  if (!(x1 > x0) || !(y1 >= y0)) return "";
  if (y1 == y0) y1 = y0 + 1;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad; y1 += pad;
  auto fx = [&](double x) {
    const double a = logx ? std::log10(x0) : x0, b = logx ? std::log10(x1) : x1, v = logx ? std::log10(x) : x;
    return L + (W - L - R) * (b > a ? (v - a) / (b - a) : 0.5);
  };
  auto fy = [&](double y) { return T + (H - T - B) * (1 - (y - y0) / (y1 - y0)); };
  auto num = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%.1f", v); return std::string(b); };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" height=\"" << H << "\" style=\"font:11px system-ui,sans-serif;background:#fff\">";
  o << "<text x=\"" << L << "\" y=\"16\" font-weight=\"600\">" << html_escape(c.value("title", "")) << "</text>";
  // axes and ticks
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>";
  o << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>";
  std::vector<double> xt;
  if (logx) {
    for (double d = std::pow(10, std::floor(std::log10(x0))); d <= x1 * 1.0001; d *= 10)
      if (d >= x0 * 0.9999) xt.push_back(d);
  } else {
    for (int i = 0; i <= 4; ++i) xt.push_back(x0 + (x1 - x0) * i / 4);
  }
  for (double x : xt)
    o << "<line x1=\"" << num(fx(x)) << "\" y1=\"" << H - B << "\" x2=\"" << num(fx(x)) << "\" y2=\"" << H - B + 4
      << "\" stroke=\"#888\"/><text x=\"" << num(fx(x)) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
      << fmt(std::round(x * 100) / 100) << "</text>";
  for (int i = 0; i <= 4; ++i) {
    const double y = y0 + (y1 - y0) * i / 4;
    o << "<line x1=\"" << L - 4 << "\" y1=\"" << num(fy(y)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(y))
      << "\" stroke=\"#eee\"/><text x=\"" << L - 6 << "\" y=\"" << num(fy(y) + 4) << "\" text-anchor=\"end\">"
      << fmt(std::round(y * 1000) / 1000) << "</text>";
  }
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">"
    << html_escape(c.value("x_label", "")) << (logx ? " (log scale)" : "") << "</text>";
  o << "<text transform=\"translate(14," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << html_escape(c.value("y_label", "")) << "</text>";
  if (band.contains("lo")) {
    const auto x = xs_of(band, band["lo"].size());
    o << "<polygon fill=\"#9bbbe8\" fill-opacity=\"0.35\" stroke=\"none\" points=\"";
    for (std::size_t i = 0; i < x.size(); ++i) o << num(fx(x[i])) << "," << num(fy(band["hi"][i].get<double>())) << " ";
    for (std::size_t i = x.size(); i-- > 0;) o << num(fx(x[i])) << "," << num(fy(band["lo"][i].get<double>())) << " ";
    o << "\"/>";
  }
  static const char* colors[] = {"#2c5fa8", "#c0392b", "#27ae60", "#8e44ad", "#d68910", "#16a085", "#7f8c8d"};
  int k = 0;
  for (const auto& sr : series) {
    const auto x = xs_of(sr, sr["y"].size());
    const char* col = colors[k % 7];
    o << "<polyline fill=\"none\" stroke=\"" << col << "\" stroke-width=\"1.5\" points=\"";
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double v = sr["y"][i].get<double>();
      if (std::isfinite(v)) o << num(fx(x[i])) << "," << num(fy(v)) << " ";
    }
    o << "\"/><line x1=\"" << W - R + 10 << "\" y1=\"" << T + 6 + 14 * k << "\" x2=\"" << W - R + 26 << "\" y2=\""
      << T + 6 + 14 * k << "\" stroke=\"" << col << "\" stroke-width=\"2\"/><text x=\"" << W - R + 30 << "\" y=\""
      << T + 10 + 14 * k << "\">" << html_escape(sr.value("name", "")) << "</text>";
    ++k;
  }
  if (band.contains("lo"))
    o << "<rect x=\"" << W - R + 10 << "\" y=\"" << T + 14 * k << "\" width=\"16\" height=\"10\" fill=\"#9bbbe8\" "
      << "fill-opacity=\"0.35\"/><text x=\"" << W - R + 30 << "\" y=\"" << T + 9 + 14 * k << "\">seed band</text>";
  o << "</svg>";
  return o.str();
}

// Display width of a UTF-8 string in "narrow characters": a CJK (three- or four-byte) code point counts two.
std::size_t text_width(const std::string& s) {
  std::size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) w += c >= 0xE0 ? 2 : 1;
  return w;
}

// Greedy word wrap into at most max_lines lines of about max_w narrow characters; a word longer than a
// line is cut at a code-point boundary, and text that does not fit ends its last line with "…".
std::vector<std::string> wrap_text(const std::string& s, std::size_t max_w, std::size_t max_lines) {
  std::vector<std::string> words, lines;
  std::istringstream in(s);
  for (std::string w; in >> w;) {
    while (text_width(w) > max_w) {  // cut an over-long word
      std::size_t i = 0, wd = 0;
      while (i < w.size()) {
        std::size_t j = i + 1;
        while (j < w.size() && (static_cast<unsigned char>(w[j]) & 0xC0) == 0x80) ++j;
        const std::size_t cw = static_cast<unsigned char>(w[i]) >= 0xE0 ? 2 : 1;
        if (wd + cw > max_w && i > 0) break;
        wd += cw;
        i = j;
      }
      words.push_back(w.substr(0, i));
      w = w.substr(i);
    }
    if (!w.empty()) words.push_back(w);
  }
  std::string cur;
  for (const auto& w : words) {
    if (!cur.empty() && text_width(cur) + 1 + text_width(w) <= max_w) cur += " " + w;
    else {
      if (!cur.empty()) lines.push_back(cur);
      cur = w;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  if (lines.size() > max_lines) {
    lines.resize(max_lines);
    lines.back() += "…";
  }
  return lines;
}

// A round tick step (1, 2, 2.5 or 5 × 10^k) at least top/4: 0, step, … up to top is 4–5 ticks.
double round_step(double top) {
  const double raw = top / 4;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}

// The commit record's sha, "unknown" where there is none (a tree without .git records the commit as null).
std::string commit_sha(const json& records) {
  const json c = records.is_object() ? records.value("commit", json()) : json();
  return c.is_object() && c.contains("sha") && c["sha"].is_string() ? c["sha"].get<std::string>() : "unknown";
}

// An inline log-log roofline for details.roofline: {title, peak_flops, bandwidth, theoretical_peak_flops?,
// roofs?: [{name, flops}], points: [{name, intensity, flops}]}: the measured roofs (bandwidth slope, peak ceiling,
// the ridge where they meet), each further engine's roof (bf16 dot products, AMX tiles) as a ceiling of its own with
// its ridge, the theoretical peak dashed, each point a numbered dot with its name in the legend. Malformed input
// (a non-positive roof, no finite point) draws nothing; a malformed extra roof is left out.
std::string svg_roofline(const json& c) {
  if (!c.is_object()) return "";
  auto pos = [](const json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() > 0; };
  if (!c.contains("peak_flops") || !pos(c["peak_flops"]) || !c.contains("bandwidth") || !pos(c["bandwidth"])) return "";
  const double peak = c["peak_flops"].get<double>(), bw = c["bandwidth"].get<double>(), ridge = peak / bw;
  const double theory = c.contains("theoretical_peak_flops") && pos(c["theoretical_peak_flops"])
                            ? c["theoretical_peak_flops"].get<double>() : 0;
  struct Pt { std::string name; double x, y; };
  std::vector<Pt> pts;
  for (const auto& p : c.value("points", json::array()))
    if (p.is_object() && p.contains("intensity") && pos(p["intensity"]) && p.contains("flops") && pos(p["flops"]) &&
        p["intensity"].get<double>() > ridge * 1e-6 && p["intensity"].get<double>() < ridge * 1e6 &&
        p["flops"].get<double>() > peak * 1e-9 && p["flops"].get<double>() < peak * 10)  // on the chart's decades
      pts.push_back({p.contains("name") && p["name"].is_string() ? p["name"].get<std::string>() : std::string(),
                     p["intensity"].get<double>(), p["flops"].get<double>()});
  struct Ceiling { std::string name; double flops; };
  std::vector<Ceiling> more;  // further engines' roofs, within three decades of the fp32 peak
  for (const auto& e : c.value("roofs", json::array()))
    if (e.is_object() && e.contains("flops") && pos(e["flops"]) && e["flops"].get<double>() < peak * 1e3 &&
        e["flops"].get<double>() > peak * 1e-3)
      more.push_back({e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : std::string("roof"),
                      e["flops"].get<double>()});
  double top = std::max(peak, theory);
  for (const auto& m : more) top = std::max(top, m.flops);
  double x0 = ridge / 10, x1 = ridge * 10, y0 = peak / 1000, y1 = top * 2;
  for (const auto& m : more) x1 = std::max(x1, m.flops / bw * 10);
  for (const auto& p : pts) {
    x0 = std::min(x0, p.x / 2); x1 = std::max(x1, p.x * 2); y0 = std::min(y0, p.y / 2);
  }
  x0 = std::pow(10, std::floor(std::log10(x0))); x1 = std::pow(10, std::ceil(std::log10(x1)));
  y0 = std::pow(10, std::floor(std::log10(y0))); y1 = std::pow(10, std::ceil(std::log10(y1)));
  if (!(x0 > 0) || !(y0 > 0) || !(x1 > x0) || !(y1 > y0) || !std::isfinite(x1) || !std::isfinite(y1) ||
      x1 / x0 > 1e12 || y1 / y0 > 1e12)  // at most 12 decades: a denormal point must not make a million ticks
    return "";
  const double W = 660, H = 300, L = 64, R = 200, T = 30, B = 42;
  auto fx = [&](double x) { return L + (W - L - R) * (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0)); };
  auto fy = [&](double y) { return T + (H - T - B) * (1 - (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0))); };
  auto num = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%.1f", v); return std::string(b); };
  auto eng = [](double v, const char* unit) {  // 1.2 G, 350 M ...
    const char* pre[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (v >= 1000 && i < 5) v /= 1000, ++i;
    char b[48]; std::snprintf(b, sizeof b, "%.3g %s%s", v, pre[i], unit); return std::string(b);
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" height=\"" << H << "\" style=\"font:11px system-ui,sans-serif;background:#fff\">";
  o << "<text x=\"" << L << "\" y=\"16\" font-weight=\"600\">"
    << html_escape(c.contains("title") && c["title"].is_string() ? c["title"].get<std::string>() : "roofline")
    << "</text>";
  for (double x = x0; x <= x1 * 1.0001; x *= 10)
    o << "<line x1=\"" << num(fx(x)) << "\" y1=\"" << T << "\" x2=\"" << num(fx(x)) << "\" y2=\"" << H - B
      << "\" stroke=\"#eee\"/><text x=\"" << num(fx(x)) << "\" y=\"" << H - B + 14 << "\" text-anchor=\"middle\">"
      << fmt(x) << "</text>";
  for (double y = y0; y <= y1 * 1.0001; y *= 10)
    o << "<line x1=\"" << L << "\" y1=\"" << num(fy(y)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(y))
      << "\" stroke=\"#eee\"/><text x=\"" << L - 6 << "\" y=\"" << num(fy(y) + 4) << "\" text-anchor=\"end\">"
      << eng(y, "") << "</text>";
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8 << "\" text-anchor=\"middle\">intensity (FLOP/byte)</text>";
  o << "<text transform=\"translate(14," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">FLOP/s</text>";
  // the roofs: bandwidth slope up to the ridge, then the peak
  const double xa = std::max(x0, y0 / bw);
  o << "<polyline fill=\"none\" stroke=\"#2c5fa8\" stroke-width=\"2\" points=\"" << num(fx(xa)) << "," << num(fy(xa * bw))
    << " " << num(fx(ridge)) << "," << num(fy(peak)) << " " << num(fx(x1)) << "," << num(fy(peak)) << "\"/>";
  o << "<line x1=\"" << num(fx(ridge)) << "\" y1=\"" << num(fy(peak)) << "\" x2=\"" << num(fx(ridge)) << "\" y2=\""
    << H - B << "\" stroke=\"#2c5fa8\" stroke-dasharray=\"2,3\"/>";
  if (theory > 0)
    o << "<line x1=\"" << num(fx(ridge)) << "\" y1=\"" << num(fy(theory)) << "\" x2=\"" << num(fx(x1)) << "\" y2=\""
      << num(fy(theory)) << "\" stroke=\"#888\" stroke-dasharray=\"5,4\"><title>theoretical peak "
      << eng(theory, "FLOP/s") << "</title></line>";
  for (const auto& m : more) {  // the bandwidth slope continued to this engine's ridge, then its ceiling
    const double r2 = m.flops / bw;
    o << "<polyline fill=\"none\" stroke=\"#7d3c98\" stroke-width=\"1.5\" points=\"" << num(fx(ridge)) << ","
      << num(fy(peak)) << " " << num(fx(r2)) << "," << num(fy(m.flops)) << " " << num(fx(x1)) << "," << num(fy(m.flops))
      << "\"><title>" << html_escape(m.name + " " + eng(m.flops, "FLOP/s") + ", ridge " + fmt(r2) + " FLOP/byte")
      << "</title></polyline><line x1=\"" << num(fx(r2)) << "\" y1=\"" << num(fy(m.flops)) << "\" x2=\"" << num(fx(r2))
      << "\" y2=\"" << H - B << "\" stroke=\"#7d3c98\" stroke-dasharray=\"2,3\"/><text x=\"" << num(fx(x1) - 4)
      << "\" y=\"" << num(fy(m.flops) - 4) << "\" text-anchor=\"end\" fill=\"#7d3c98\">" << html_escape(m.name) << "</text>";
  }
  static const char* colors[] = {"#c0392b", "#27ae60", "#8e44ad", "#d68910", "#16a085", "#e67e22", "#5dade2",
                                 "#a04000", "#34495e", "#d4ac0d"};
  double ly = T + 6;
  o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\">peak " << html_escape(eng(peak, "FLOP/s")) << "</text>";
  ly += 14;
  o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\">read " << html_escape(eng(bw, "B/s")) << "</text>";
  ly += 14;
  o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\">ridge " << html_escape(fmt(ridge)) << " FLOP/byte</text>";
  ly += 14;
  for (const auto& m : more) {
    o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\" fill=\"#7d3c98\">" << html_escape(m.name) << " ridge "
      << html_escape(fmt(m.flops / bw)) << "</text>";
    ly += 14;
  }
  ly += 4;
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const char* col = colors[i % (sizeof colors / sizeof *colors)];
    o << "<circle cx=\"" << num(fx(p.x)) << "\" cy=\"" << num(fy(p.y)) << "\" r=\"4\" fill=\"" << col << "\"><title>"
      << html_escape(p.name + ": " + fmt(p.x) + " FLOP/byte, " + eng(p.y, "FLOP/s")) << "</title></circle>";
    if (i < 14) {
      o << "<circle cx=\"" << W - R + 16 << "\" cy=\"" << num(ly - 4) << "\" r=\"4\" fill=\"" << col << "\"/><text x=\""
        << W - R + 24 << "\" y=\"" << num(ly) << "\">" << html_escape(p.name) << "</text>";
      ly += 14;
    }
  }
  o << "</svg>";
  return o.str();
}

// Inline SVG stacked bar charts for details.stacked, an array of {title, unit, y_label,
// bars: [{name, parts: [{name, value}]}], reference?: {name, value}}: one colour per part name, the legend
// in first-appearance order (parts that are 0 in every bar left out), each bar's total above it, the
// reference as a dashed line. Malformed entries are skipped; an empty or all-zero chart draws nothing.
std::string svg_stacked(const json& c) {
  if (!c.is_object()) return "";
  auto finite_nonneg = [](const json& v) { return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0; };
  struct Bar {
    std::string name;
    std::map<std::string, double> parts;  // by part name, repeated names summed
    double total = 0;
  };
  std::vector<std::string> names;  // part names, first-appearance order
  std::vector<Bar> bars;
  for (const auto& b : c.value("bars", json::array())) {
    if (!b.is_object() || !b.contains("name") || !b["name"].is_string() || !b.contains("parts") || !b["parts"].is_array())
      continue;
    Bar bar;
    bar.name = b["name"].get<std::string>();
    for (const auto& p : b["parts"]) {
      if (!p.is_object() || !p.contains("name") || !p["name"].is_string() || !p.contains("value") ||
          !finite_nonneg(p["value"]))
        continue;
      const std::string n = p["name"].get<std::string>();
      const double v = p["value"].get<double>();
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
      bar.parts[n] += v;
      bar.total += v;
    }
    bars.push_back(std::move(bar));
  }
  double ymax = 0;
  for (const auto& b : bars) ymax = std::max(ymax, b.total);
  if (bars.empty() || !(ymax > 0) || !std::isfinite(ymax)) return "";
  // the legend: part names that are non-zero in some bar
  std::vector<std::string> legend;
  for (const auto& n : names)
    for (const auto& b : bars)
      if (b.parts.count(n) && b.parts.at(n) > 0) { legend.push_back(n); break; }
  const json ref = c.value("reference", json());
  const bool has_ref = ref.is_object() && ref.contains("value") && finite_nonneg(ref["value"]);
  const double ref_v = has_ref ? ref["value"].get<double>() : 0;
  const std::string ref_name = has_ref && ref.contains("name") && ref["name"].is_string() ? ref["name"].get<std::string>() : "";
  if (has_ref) ymax = std::max(ymax, ref_v);
  const double step = round_step(ymax);
  if (!(step > 0) || !std::isfinite(step)) return "";
  const int nstep = std::max(1, static_cast<int>(std::ceil(ymax / step - 1e-9)));
  const double top = step * nstep;
  if (!std::isfinite(top) || !(top > 0)) return "";

  const double W = 660, H = 270, L = 60, R = 150, T = 36, B = 48;
  const std::string unit = c.contains("unit") && c["unit"].is_string() ? c["unit"].get<std::string>() : "";
  auto str = [&](const char* k) { return c.contains(k) && c[k].is_string() ? c[k].get<std::string>() : std::string(); };
  std::string y_label = str("y_label");
  if (y_label.empty()) y_label = unit;
  auto num = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%.1f", v); return std::string(b); };
  auto fy = [&](double y) { return T + (H - T - B) * (1 - y / top); };
  static const char* colors[] = {"#2c5fa8", "#c0392b", "#27ae60", "#8e44ad", "#d68910", "#16a085", "#7f8c8d",
                                 "#e67e22", "#5dade2", "#a04000", "#d4ac0d", "#34495e"};
  const std::size_t ncol = sizeof colors / sizeof *colors;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" height=\"" << H << "\" style=\"font:11px system-ui,sans-serif;background:#fff\">";
  o << "<text x=\"" << L << "\" y=\"16\" font-weight=\"600\">" << html_escape(str("title")) << "</text>";
  // y axis from 0 with round ticks, the baseline
  for (int i = 0; i <= nstep; ++i) {
    const double y = step * i;
    o << "<line x1=\"" << L - 4 << "\" y1=\"" << num(fy(y)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(y))
      << "\" stroke=\"#eee\"/><text x=\"" << L - 6 << "\" y=\"" << num(fy(y) + 4) << "\" text-anchor=\"end\">"
      << fmt(std::round(y * 1000) / 1000) << "</text>";
  }
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>";
  o << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>";
  o << "<text transform=\"translate(14," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << html_escape(y_label) << "</text>";
  // the bars, parts stacked bottom-up in legend order
  const double slot = (W - L - R) / bars.size();
  const double bw = std::min(70.0, slot * 0.6);
  const std::size_t label_w = std::max<std::size_t>(4, static_cast<std::size_t>(slot / 6));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double cx = L + slot * (i + 0.5);
    double acc = 0;
    for (std::size_t k = 0; k < legend.size(); ++k) {
      auto it = b.parts.find(legend[k]);
      if (it == b.parts.end() || !(it->second > 0)) continue;
      const double y_hi = fy(acc + it->second), y_lo = fy(acc);
      o << "<rect x=\"" << num(cx - bw / 2) << "\" y=\"" << num(y_hi) << "\" width=\"" << num(bw) << "\" height=\""
        << num(y_lo - y_hi) << "\" fill=\"" << colors[k % ncol] << "\" stroke=\"#fff\" stroke-width=\"0.5\"><title>"
        << html_escape(b.name + " · " + legend[k] + ": " + fmt(it->second) + (unit.empty() ? "" : " " + unit))
        << "</title></rect>";
      acc += it->second;
    }
    o << "<text x=\"" << num(cx) << "\" y=\"" << num(fy(b.total) - 4) << "\" text-anchor=\"middle\" font-weight=\"600\">"
      << html_escape(fmt(b.total)) << "</text>";
    const auto lines = wrap_text(b.name, label_w, 3);
    for (std::size_t l = 0; l < lines.size(); ++l)
      o << "<text x=\"" << num(cx) << "\" y=\"" << H - B + 14 + 12 * l << "\" text-anchor=\"middle\">"
        << html_escape(lines[l]) << "</text>";
  }
  // the reference: a dashed line across the plot
  if (has_ref)
    o << "<line x1=\"" << L << "\" y1=\"" << num(fy(ref_v)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(ref_v))
      << "\" stroke=\"#1d2330\" stroke-width=\"1.2\" stroke-dasharray=\"5,3\"/>";
  // the legend, then the reference's label under it
  double ly = T;
  for (std::size_t k = 0; k < legend.size(); ++k, ly += 14) {
    o << "<rect x=\"" << W - R + 10 << "\" y=\"" << ly << "\" width=\"16\" height=\"10\" fill=\"" << colors[k % ncol]
      << "\"/><text x=\"" << W - R + 30 << "\" y=\"" << ly + 9 << "\">";
    const auto lines = wrap_text(legend[k], 19, 1);
    o << html_escape(lines.empty() ? std::string() : lines[0]) << "</text>";
  }
  if (has_ref) {
    ly += 4;
    o << "<line x1=\"" << W - R + 10 << "\" y1=\"" << ly + 5 << "\" x2=\"" << W - R + 26 << "\" y2=\"" << ly + 5
      << "\" stroke=\"#1d2330\" stroke-width=\"1.2\" stroke-dasharray=\"5,3\"/>";
    const auto lines = wrap_text(ref_name.empty() ? fmt(ref_v) : ref_name + " = " + fmt(ref_v), 19, 3);
    for (std::size_t l = 0; l < lines.size(); ++l)
      o << "<text x=\"" << W - R + 30 << "\" y=\"" << ly + 9 + 12 * l << "\">" << html_escape(lines[l]) << "</text>";
  }
  o << "</svg>";
  return o.str();
}

class JsonWriter : public ReportWriter {
 public:
  std::string filename() const override { return "report.json"; }
  std::string render(const Report& r) const override { return report_to_json(r).dump(2) + "\n"; }
};

class MarkdownWriter : public ReportWriter {
 public:
  std::string filename() const override { return "report.md"; }
  std::string render(const Report& r) const override {
    std::ostringstream o;
    o << "# claimcheck report\n\n" << summary_line(summarize(r.claims)) << ".\n\n";
    o << "Generated " << r.generated_at << ". Commit `" << commit_sha(r.records)
      << "`.\n";
    for (const auto& [ch, claims] : by_chapter(r)) {
      auto t = chapter_titles().find(ch);
      o << "\n## " << ch << (t != chapter_titles().end() ? " · " + t->second : "") << "\n\n";
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
      o << "\n## Benchmarks\n\n| benchmark | ratio | detail |\n|---|---|---|\n";
      for (const auto& b : r.benchmarks)
        o << "| " << md_cell(b.value("name", "")) << " | " << fmt(b.value("ratio", 0.0)) << " | "
          << md_cell(b.value("detail", "")) << " |\n";
    }
    o << "\n## Records\n\n```json\n" << r.records.dump(2) << "\n```\n";
    return o.str();
  }
};

class HtmlWriter : public ReportWriter {
 public:
  std::string filename() const override { return "report.html"; }
  std::string render(const Report& r) const override {
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
      auto t = chapter_titles().find(ch);
      o << "<section><h2>" << ch << (t != chapter_titles().end() ? " · " + html_escape(t->second) : "")
        << "</h2><table><tr><th>claim</th><th>the series says</th><th>stated</th><th>measured</th><th>verdict</th><th>why</th></tr>";
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
};

class JunitWriter : public ReportWriter {
 public:
  std::string filename() const override { return "junit.xml"; }
  std::string render(const Report& r) const override {
    const Summary s = summarize(r.claims);
    std::ostringstream o;
    o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o << "<testsuites name=\"claimcheck\" tests=\"" << s.total << "\" failures=\""
      << s.by_status.at("fail") + s.by_status.at("xpass") << "\" errors=\"" << s.by_status.at("error")
      << "\" skipped=\"" << s.by_status.at("skip") + s.by_status.at("xfail") << "\">\n";
    for (const auto& [ch, claims] : by_chapter(r)) {
      int f = 0, e = 0, sk = 0;
      for (const auto* c : claims) {
        f += c->status == Status::fail || c->status == Status::xpass;
        e += c->status == Status::error;
        sk += c->status == Status::skip || c->status == Status::xfail;
      }
      o << "  <testsuite name=\"" << ch << "\" tests=\"" << claims.size() << "\" failures=\"" << f << "\" errors=\""
        << e << "\" skipped=\"" << sk << "\">\n";
      for (const auto* c : claims) {
        o << "    <testcase classname=\"claimcheck." << ch << "\" name=\"" << html_escape(c->id) << "\" time=\""
          << c->seconds << "\">";
        const std::string msg = html_escape(c->reason);
        switch (c->status) {
          case Status::pass: break;
          case Status::fail: o << "<failure message=\"" << msg << "\"/>"; break;
          case Status::xpass: o << "<failure message=\"unexpected pass: " << msg << "\"/>"; break;
          case Status::error: o << "<error message=\"" << msg << "\"/>"; break;
          // JUnit has no expected failure: an xfail is reported as skipped, never as a pass.
          case Status::xfail: o << "<skipped message=\"xfail: " << msg << "\"/>"; break;
          case Status::skip: o << "<skipped message=\"" << msg << "\"/>"; break;
        }
        o << "</testcase>\n";
      }
      o << "  </testsuite>\n";
    }
    o << "</testsuites>\n";
    return o.str();
  }
};

}  // namespace

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
  fs::create_directories(dir);
  for (const auto& [path, text] : rendered) {
    fs::path tmp = path;
    tmp += ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw std::runtime_error(tmp.string() + ": cannot be written");
  }
  for (const auto& [path, text] : rendered) {
    fs::path tmp = path;
    tmp += ".tmp";
    fs::rename(tmp, path);
  }
}

}  // namespace claimcheck
