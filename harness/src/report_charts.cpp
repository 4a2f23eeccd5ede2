// The inline SVG charts of the HTML report (report_html.cpp): a line chart for details.curve, a log-log roofline
// for details.roofline (and the report's one roofline of the machine), stacked bars for details.stacked. Each
// returns "" where its input draws nothing; their input formats are at each function. One file past 500 lines: the
// three charts share their axes, ticks, log scales, text widths and the stated marks, which a split would export.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "report_writers.h"
#include "tolerance.h"

namespace claimcheck {
using nlohmann::json;

namespace {
// A round tick step (1, 2, 2.5 or 5 × 10^k) at least top/4: 0, step, … up to top is 4–5 ticks.
double round_step(double top) {
  const double raw = top / 4;
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}
// Round ticks over [lo, hi]: the multiples of round_step(hi - lo) inside it.
std::vector<double> nice_ticks(double lo, double hi) {
  std::vector<double> t;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return t;
  const double step = round_step(hi - lo);
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi * (1 + 1e-12) + step * 1e-9 && t.size() < 12; ++k)
    t.push_back(k * step == 0 ? 0 : k * step);
  return t;
}
// A tick's label with as many decimals as its step needs (0.0025 -> 4), so that no two labels read the same.
std::string tick_label(double v, double step) {
  int decimals = 0;
  for (double s = step; decimals < 9 && std::fabs(s - std::round(s)) > 1e-9 * std::max(1.0, std::fabs(s)); s *= 10)
    ++decimals;
  char b[48];
  if (std::fabs(v) >= 1e6 || (v != 0 && std::fabs(v) < 1e-4))
    std::snprintf(b, sizeof b, "%.3g", v);
  else
    std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}
// Twenty colours that a reader tells apart (Tableau 20's order, the dark of each pair first): no repeats up to 20.
const char* const kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
                                "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
                                "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
constexpr std::size_t kPaletteSize = sizeof kPalette / sizeof *kPalette;

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
    if (!cur.empty() && text_width(cur) + 1 + text_width(w) <= max_w)
      cur += " " + w;
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

// The stated figure and the values its rule accepts, where a chart's input carries them (report_html.cpp fills
// "stated" from the statement a chart names): {value, lo?, hi?, label, accepted}; lo / hi null or absent for an open
// end. Drawn as a shaded strip (the accepted values, clipped to the plot) and a dashed line (the stated figure).
struct StatedMark {
  bool on = false;
  double value = 0, lo = -INFINITY, hi = INFINITY;
  std::string label, accepted;
};
StatedMark stated_mark(const json& c) {
  StatedMark s;
  const json st = c.is_object() ? c.value("stated", json()) : json();
  if (!st.is_object() || !st.contains("value") || !st["value"].is_number()) return s;
  s.value = st["value"].get<double>();
  if (st.contains("lo") && st["lo"].is_number()) s.lo = st["lo"].get<double>();
  if (st.contains("hi") && st["hi"].is_number()) s.hi = st["hi"].get<double>();
  s.label = st.contains("label") && st["label"].is_string() ? st["label"].get<std::string>() : "stated";
  s.accepted = st.contains("accepted") && st["accepted"].is_string() ? st["accepted"].get<std::string>() : "accepted";
  s.on = std::isfinite(s.value) && !std::isnan(s.lo) && !std::isnan(s.hi) && s.lo <= s.hi;
  return s;
}
constexpr const char* kAcceptFill = "#59a14f";
std::string num1(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}
// The strip and the line between x_left and x_right, for a plot showing [y0, y1] through fy.
template <typename F>
std::string stated_marks_svg(const StatedMark& s, double x_left, double x_right, double y0, double y1, F fy) {
  if (!s.on) return "";
  std::string o;
  const double lo = std::max(s.lo, y0), hi = std::min(s.hi, y1);
  if (hi > lo || (hi == lo && s.lo == s.hi)) {
    const double top = fy(hi), bottom = fy(lo);
    o += "<rect class=\"accepted\" x=\"" + num1(x_left) + "\" y=\"" + num1(top) + "\" width=\"" +
         num1(x_right - x_left) + "\" height=\"" + num1(std::max(1.0, bottom - top)) + "\" fill=\"" + kAcceptFill +
         "\" fill-opacity=\"0.18\"/>";
  }
  if (s.value >= y0 && s.value <= y1)
    o += "<line class=\"stated\" x1=\"" + num1(x_left) + "\" y1=\"" + num1(fy(s.value)) + "\" x2=\"" + num1(x_right) +
         "\" y2=\"" + num1(fy(s.value)) + "\" stroke=\"#1d2330\" stroke-width=\"1.4\" " + "stroke-dasharray=\"6,3\"/>";
  return o;
}
// Their legend entries from (x, y): the line and the strip, each label wrapped to the legend's width (two lines at
// most, 12 px apart).
std::vector<std::string> stated_legend_lines(const std::string& s) { return wrap_text(s, 18, 2); }
double stated_legend_height(const StatedMark& s) {
  if (!s.on) return 0;
  return 14.0 * 2 +
         12.0 * static_cast<double>(stated_legend_lines(s.label).size() + stated_legend_lines(s.accepted).size() - 2);
}
std::string stated_legend_svg(const StatedMark& s, double x, double y) {
  if (!s.on) return "";
  std::string o = "<line x1=\"" + num1(x) + "\" y1=\"" + num1(y + 5) + "\" x2=\"" + num1(x + 16) + "\" y2=\"" +
                  num1(y + 5) + "\" stroke=\"#1d2330\" stroke-width=\"1.4\" stroke-dasharray=\"6,3\"/>";
  for (const auto& line : stated_legend_lines(s.label)) {
    o += "<text x=\"" + num1(x + 20) + "\" y=\"" + num1(y + 9) + "\">" + html_escape(line) + "</text>";
    y += 12;
  }
  y += 2;
  o += "<rect x=\"" + num1(x) + "\" y=\"" + num1(y) + "\" width=\"16\" height=\"10\" fill=\"" + kAcceptFill +
       "\" fill-opacity=\"0.35\"/>";
  for (const auto& line : stated_legend_lines(s.accepted)) {
    o += "<text x=\"" + num1(x + 20) + "\" y=\"" + num1(y + 9) + "\">" + html_escape(line) + "</text>";
    y += 12;
  }
  return o;
}
}  // namespace

// An inline SVG line chart for details.curve: {title, x_label, y_label, log_x, series: [{name, y, x?}],
// band: {lo, hi, x?}} — loss curves on a log x-axis with the seed band shaded, as the series advises.
std::string svg_curve(const json& c) {
  const double W = 660, L = 60, R = 150, T = 30, B = 42;
  const StatedMark mark = stated_mark(c);
  const std::size_t entries = c.value("series", json::array()).size() + (c.contains("band") ? 1 : 0);
  const double H =
      std::max(270.0, T + 14.0 * static_cast<double>(entries) + stated_legend_height(mark) + 12);  // the legend fits
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
      x0 = std::min(x0, x[i]);
      x1 = std::max(x1, x[i]);
      y0 = std::min(y0, v);
      y1 = std::max(y1, v);
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
  if (mark.on) {  // the stated figure is on the plot (its accepted range only where the curves reach)
    y0 = std::min(y0, mark.value);
    y1 = std::max(y1, mark.value);
  }
  if (y1 == y0) y1 = y0 + 1;
  const double pad = (y1 - y0) * 0.05;
  y0 -= pad;
  y1 += pad;
  auto fx = [&](double x) {
    const double a = logx ? std::log10(x0) : x0, b = logx ? std::log10(x1) : x1, v = logx ? std::log10(x) : x;
    return L + (W - L - R) * (b > a ? (v - a) / (b - a) : 0.5);
  };
  auto fy = [&](double y) { return T + (H - T - B) * (1 - (y - y0) / (y1 - y0)); };
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return std::string(b);
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" height=\"" << H << "\" style=\"font:11px system-ui,sans-serif;background:#fff\">";
  o << "<text x=\"" << L << "\" y=\"16\" font-weight=\"600\">" << html_escape(c.value("title", "")) << "</text>";
  // axes and ticks
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#888\"/>";
  o << "<line x1=\"" << L << "\" y1=\"" << T << "\" x2=\"" << L << "\" y2=\"" << H - B << "\" stroke=\"#888\"/>";
  // Round ticks: decades on a log axis, multiples of 1, 2, 2.5 or 5 x 10^k on a linear one, each label distinct.
  std::vector<double> xt;
  double xstep = 1;
  if (logx) {
    for (double d = std::pow(10, std::floor(std::log10(x0))); d <= x1 * 1.0001; d *= 10)
      if (d >= x0 * 0.9999) xt.push_back(d);
  } else {
    xt = nice_ticks(x0, x1);
    xstep = round_step(x1 - x0);
  }
  for (double x : xt)
    o << "<line x1=\"" << num(fx(x)) << "\" y1=\"" << H - B << "\" x2=\"" << num(fx(x)) << "\" y2=\"" << H - B + 4
      << "\" stroke=\"#888\"/><text x=\"" << num(fx(x)) << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">"
      << (logx ? fmt(x) : tick_label(x, xstep)) << "</text>";
  const double ystep = round_step(y1 - y0);
  for (double y : nice_ticks(y0, y1))
    o << "<line x1=\"" << L - 4 << "\" y1=\"" << num(fy(y)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(y))
      << "\" stroke=\"#eee\"/><text x=\"" << L - 6 << "\" y=\"" << num(fy(y) + 4) << "\" text-anchor=\"end\">"
      << tick_label(y, ystep) << "</text>";
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
  o << stated_marks_svg(mark, L, W - R, y0, y1, fy);
  int k = 0;
  for (const auto& sr : series) {
    const auto x = xs_of(sr, sr["y"].size());
    const char* col = kPalette[static_cast<std::size_t>(k) % kPaletteSize];
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
  if (band.contains("lo")) ++k;
  o << stated_legend_svg(mark, W - R + 10, T + 14 * k) << "</svg>";
  return o.str();
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
                            ? c["theoretical_peak_flops"].get<double>()
                            : 0;
  struct Pt {
    std::string name;
    double x, y;
  };
  std::vector<Pt> pts;
  for (const auto& p : c.value("points", json::array()))
    if (p.is_object() && p.contains("intensity") && pos(p["intensity"]) && p.contains("flops") && pos(p["flops"]) &&
        p["intensity"].get<double>() > ridge * 1e-6 && p["intensity"].get<double>() < ridge * 1e6 &&
        p["flops"].get<double>() > peak * 1e-9 && p["flops"].get<double>() < peak * 10)  // on the chart's decades
      pts.push_back({p.contains("name") && p["name"].is_string() ? p["name"].get<std::string>() : std::string(),
                     p["intensity"].get<double>(), p["flops"].get<double>()});
  struct Ceiling {
    std::string name;
    double flops;
  };
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
    x0 = std::min(x0, p.x / 2);
    x1 = std::max(x1, p.x * 2);
    y0 = std::min(y0, p.y / 2);
  }
  x0 = std::pow(10, std::floor(std::log10(x0)));
  x1 = std::pow(10, std::ceil(std::log10(x1)));
  y0 = std::pow(10, std::floor(std::log10(y0)));
  y1 = std::pow(10, std::ceil(std::log10(y1)));
  if (!(x0 > 0) || !(y0 > 0) || !(x1 > x0) || !(y1 > y0) || !std::isfinite(x1) || !std::isfinite(y1) ||
      x1 / x0 > 1e12 || y1 / y0 > 1e12)  // at most 12 decades: a denormal point must not make a million ticks
    return "";
  // Tall enough for the legend: the roofs' three lines, each further engine's, and a line per point.
  const double W = 660, L = 64, R = 200, T = 30, B = 42;
  const double H = std::max(300.0, T + 6 + 14.0 * static_cast<double>(3 + more.size() + pts.size()) + 4 + 10);
  auto fx = [&](double x) {
    return L + (W - L - R) * (std::log10(x) - std::log10(x0)) / (std::log10(x1) - std::log10(x0));
  };
  auto fy = [&](double y) {
    return T + (H - T - B) * (1 - (std::log10(y) - std::log10(y0)) / (std::log10(y1) - std::log10(y0)));
  };
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return std::string(b);
  };
  auto eng = [](double v, const char* unit) {  // 1.2 G, 350 M ...
    const char* pre[] = {"", "k", "M", "G", "T", "P"};
    int i = 0;
    while (v >= 1000 && i < 5) v /= 1000, ++i;
    char b[48];
    std::snprintf(b, sizeof b, "%.3g %s%s", v, pre[i], unit);
    return std::string(b);
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
  o << "<text x=\"" << (L + W - R) / 2 << "\" y=\"" << H - 8
    << "\" text-anchor=\"middle\">intensity (FLOP/byte)</text>";
  o << "<text transform=\"translate(14," << (T + H - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">FLOP/s</text>";
  // the roofs: bandwidth slope up to the ridge, then the peak
  const double xa = std::max(x0, y0 / bw);
  o << "<polyline fill=\"none\" stroke=\"#2c5fa8\" stroke-width=\"2\" points=\"" << num(fx(xa)) << ","
    << num(fy(xa * bw)) << " " << num(fx(ridge)) << "," << num(fy(peak)) << " " << num(fx(x1)) << "," << num(fy(peak))
    << "\"/>";
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
      << "\" y=\"" << num(fy(m.flops) - 4) << "\" text-anchor=\"end\" fill=\"#7d3c98\">" << html_escape(m.name)
      << "</text>";
  }
  double ly = T + 6;
  o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\">peak " << html_escape(eng(peak, "FLOP/s"))
    << "</text>";
  ly += 14;
  o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\">read " << html_escape(eng(bw, "B/s")) << "</text>";
  ly += 14;
  o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\">ridge " << html_escape(sig3(ridge))
    << " FLOP/byte</text>";
  ly += 14;
  for (const auto& m : more) {
    o << "<text x=\"" << W - R + 12 << "\" y=\"" << num(ly) << "\" fill=\"#7d3c98\">" << html_escape(m.name)
      << " ridge " << html_escape(sig3(m.flops / bw)) << "</text>";
    ly += 14;
  }
  ly += 4;
  // Each point a dot in a colour of its own (numbered beside the dot and in the legend, so that even past twenty
  // colours no two points are confused), every one in the legend.
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const auto& p = pts[i];
    const char* col = kPalette[i % kPaletteSize];
    o << "<circle cx=\"" << num(fx(p.x)) << "\" cy=\"" << num(fy(p.y)) << "\" r=\"4\" fill=\"" << col << "\"><title>"
      << html_escape(p.name + ": " + fmt(p.x) + " FLOP/byte, " + eng(p.y, "FLOP/s")) << "</title></circle><text x=\""
      << num(fx(p.x) + 5) << "\" y=\"" << num(fy(p.y) - 4) << "\" font-size=\"9\" fill=\"#333\">" << i + 1 << "</text>";
    o << "<circle cx=\"" << W - R + 16 << "\" cy=\"" << num(ly - 4) << "\" r=\"4\" fill=\"" << col << "\"/><text x=\""
      << W - R + 24 << "\" y=\"" << num(ly) << "\">" << i + 1 << " " << html_escape(p.name) << "</text>";
    ly += 14;
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
  auto finite_nonneg = [](const json& v) {
    return v.is_number() && std::isfinite(v.get<double>()) && v.get<double>() >= 0;
  };
  struct Bar {
    std::string name;
    std::map<std::string, double> parts;  // by part name, repeated names summed
    double total = 0;
  };
  std::vector<std::string> names;  // part names, first-appearance order
  std::vector<Bar> bars;
  for (const auto& b : c.value("bars", json::array())) {
    if (!b.is_object() || !b.contains("name") || !b["name"].is_string() || !b.contains("parts") ||
        !b["parts"].is_array())
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
      if (b.parts.count(n) && b.parts.at(n) > 0) {
        legend.push_back(n);
        break;
      }
  const json ref = c.value("reference", json());
  const bool has_ref = ref.is_object() && ref.contains("value") && finite_nonneg(ref["value"]);
  const double ref_v = has_ref ? ref["value"].get<double>() : 0;
  const std::string ref_name =
      has_ref && ref.contains("name") && ref["name"].is_string() ? ref["name"].get<std::string>() : "";
  if (has_ref) ymax = std::max(ymax, ref_v);
  const StatedMark mark = stated_mark(c);
  if (mark.on && mark.value >= 0) ymax = std::max(ymax, mark.value);
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
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return std::string(b);
  };
  auto fy = [&](double y) { return T + (H - T - B) * (1 - y / top); };
  const char* const* colors = kPalette;
  const std::size_t ncol = kPaletteSize;
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << W << " " << H << "\" width=\"" << W
    << "\" height=\"" << H << "\" style=\"font:11px system-ui,sans-serif;background:#fff\">";
  o << "<text x=\"" << L << "\" y=\"16\" font-weight=\"600\">" << html_escape(str("title")) << "</text>";
  // y axis from 0 with round ticks, the baseline
  for (int i = 0; i <= nstep; ++i) {
    const double y = step * i;
    o << "<line x1=\"" << L - 4 << "\" y1=\"" << num(fy(y)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(y))
      << "\" stroke=\"#eee\"/><text x=\"" << L - 6 << "\" y=\"" << num(fy(y) + 4) << "\" text-anchor=\"end\">"
      << tick_label(y, step) << "</text>";
  }
  o << "<line x1=\"" << L << "\" y1=\"" << H - B << "\" x2=\"" << W - R << "\" y2=\"" << H - B
    << "\" stroke=\"#888\"/>";
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
    o << "<text x=\"" << num(cx) << "\" y=\"" << num(fy(b.total) - 4)
      << "\" text-anchor=\"middle\" font-weight=\"600\">" << html_escape(sig3(b.total)) << "</text>";
    const auto lines = wrap_text(b.name, label_w, 3);
    for (std::size_t l = 0; l < lines.size(); ++l)
      o << "<text x=\"" << num(cx) << "\" y=\"" << H - B + 14 + 12 * l << "\" text-anchor=\"middle\">"
        << html_escape(lines[l]) << "</text>";
  }
  // the reference: a dashed line across the plot
  if (has_ref)
    o << "<line x1=\"" << L << "\" y1=\"" << num(fy(ref_v)) << "\" x2=\"" << W - R << "\" y2=\"" << num(fy(ref_v))
      << "\" stroke=\"#1d2330\" stroke-width=\"1.2\" stroke-dasharray=\"5,3\"/>";
  o << stated_marks_svg(mark, L, W - R, 0, top, fy);
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
    const auto lines = wrap_text(ref_name.empty() ? sig3(ref_v) : ref_name + " = " + sig3(ref_v), 19, 3);
    for (std::size_t l = 0; l < lines.size(); ++l)
      o << "<text x=\"" << W - R + 30 << "\" y=\"" << ly + 9 + 12 * l << "\">" << html_escape(lines[l]) << "</text>";
    ly += 12.0 * static_cast<double>(lines.size()) + 4;
  }
  o << stated_legend_svg(mark, W - R + 10, ly) << "</svg>";
  return o.str();
}

}  // namespace claimcheck
