#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "report.h"
#include "report_writers.h"

using namespace claimcheck;
namespace fs = std::filesystem;

namespace {
Report sample() {
  Report r;
  r.generated_at = "2026-11-29T00:00:00Z";
  r.records = {{"commit", {{"sha", "abc"}}}, {"seed", 1}};
  ClaimResult a;
  a.id = "ch04.full_finetune_gb";
  a.chapter = "ch04";
  a.title = "t <b>";
  a.source = "全量微调 128.5 GB";
  a.kinds = {"analytic"};
  a.status = Status::pass;
  a.reason = "128.48 GB vs 128.5 GB";
  a.stated = {{"value", 128.5}, {"unit", "GB"}};
  a.measured = {{"value", 128.484}, {"unit", "GB"}};
  Measurement m;
  m.name = "value";
  m.value = 128.484;
  m.unit = "GB";
  m.compared = true;
  m.ok = true;
  m.verdict = "ok";
  m.stated = 128.5;
  m.why = "digits";
  a.measurements.push_back(m);
  a.assumptions = {"16 B/param"};
  a.alternatives.push_back({{"name", "GiB"}, {"value", 119.7}, {"unit", "GiB"}, {"assumptions", "binary"}});
  a.pending_parts = {"later"};
  a.details["extra"] = 1;
  ClaimResult b = a;
  b.id = "ch02.ci95_80";
  b.chapter = "ch02";
  b.status = Status::xfail;
  b.reason = "expected failure: x";
  ClaimResult c = a;
  c.id = "ch01.list_peak_ratio";
  c.chapter = "ch01";
  c.status = Status::skip;
  c.not_implemented = true;
  c.measured = nullptr;
  c.measurements.clear();
  r.claims = {a, b, c};
  return r;
}
std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}
}  // namespace

TEST(Report, JsonRoundTrip) {
  const Report r = sample();
  const nlohmann::json j = report_to_json(r);
  EXPECT_EQ(j["schema"], kReportSchema);
  for (const char* k : {"schema", "records", "summary", "claims"}) EXPECT_TRUE(j.contains(k)) << k;
  for (const char* k : {"id", "chapter", "kind", "status", "reason", "stated", "measured", "details"})
    EXPECT_TRUE(j["claims"][0].contains(k)) << k;
  const Report back = report_from_json(nlohmann::json::parse(j.dump()));
  ASSERT_EQ(back.claims.size(), 3u);
  EXPECT_EQ(report_to_json(back), j);
  EXPECT_EQ(back.claims[0].alternatives, r.claims[0].alternatives);
  EXPECT_EQ(back.claims[0].details["extra"], 1);
  EXPECT_EQ(j["summary"]["not_implemented"], 1);
  EXPECT_THROW(report_from_json({{"schema", "other/9"}}), std::runtime_error);
}

TEST(Report, WritersProduceAllFourFilesAndNothingLooksLikeAPassThatIsNot) {
  const fs::path dir = fs::temp_directory_path() / ("cc_report_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  write_report(dir, sample());
  for (const char* f : {"report.json", "report.md", "report.html", "junit.xml"}) EXPECT_TRUE(fs::exists(dir / f)) << f;
  for (const auto& e : fs::directory_iterator(dir)) EXPECT_NE(e.path().extension(), ".tmp");
  const std::string junit = slurp(dir / "junit.xml");
  EXPECT_NE(junit.find("<skipped message=\"xfail: expected failure: x\"/>"), std::string::npos) << junit;
  EXPECT_NE(junit.find("skipped=\"2\""), std::string::npos);
  const std::string html = slurp(dir / "report.html");
  EXPECT_NE(html.find("全量微调 128.5 GB"), std::string::npos);
  EXPECT_NE(html.find("t &lt;b&gt;"), std::string::npos);  // escaped
  EXPECT_NE(html.find("not implemented"), std::string::npos);
  EXPECT_NE(html.find("<h2>ch04"), std::string::npos);
  const std::string md = slurp(dir / "report.md");
  EXPECT_NE(md.find("| `ch04.full_finetune_gb` |"), std::string::npos);
  EXPECT_NE(md.find("pending: later"), std::string::npos);
  fs::remove_all(dir);
}

namespace {
std::string render_html(const Report& r) {
  for (const auto& w : all_writers())
    if (w->filename() == "report.html") return w->render(r);
  return "";
}
std::vector<std::string> svgs_of(const std::string& html) {
  std::vector<std::string> out;
  for (std::size_t p = html.find("<svg"); p != std::string::npos; p = html.find("<svg", p + 1))
    out.push_back(html.substr(p, html.find("</svg>", p) - p));
  return out;
}
}  // namespace

TEST(Report, StackedBarChartsDrawTitleLegendTotalsAndReference) {
  using nlohmann::json;
  auto part = [](const char* n, double v) { return json{{"name", n}, {"value", v}}; };
  json chart = {{"title", "Bytes per trainable parameter <AdamW & bf16>"},
                {"unit", "B"},
                {"y_label", "bytes / param"},
                {"bars",
                 {{{"name", "series table (stated)"},
                   {"parts",
                    {part("bf16 weights", 2), part("fp32 weights", 0), part("gradients", 2), part("fp32 master", 4),
                     part("Adam m", 4), part("Adam v", 4)}}},
                  {{"name", "autocast (measured)"},
                   {"parts",
                    {part("bf16 weights", 0), part("fp32 weights", 0), part("gradients", 4), part("Adam m", 4),
                     part("Adam v", 4)}}},
                  {{"name", "bf16 + fp32 master (measured)"},
                   {"parts",
                    {part("gradients", 2), part("bf16 weights", 2), part("fp32 master", 4), part("Adam m", 4),
                     part("Adam v", 4)}}}}},
                {"reference", {{"name", "series: 2 + 2 + 4 + 4 + 4"}, {"value", 16}}}};
  // "fp32 weights" is 0 in every bar: it is left out of the legend.
  Report r = sample();
  r.claims[0].details["stacked"] = json::array({chart});
  const std::string html = render_html(r);
  const auto svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 1u) << html;
  const std::string& svg = svgs[0];
  EXPECT_NE(svg.find("Bytes per trainable parameter &lt;AdamW &amp; bf16&gt;"), std::string::npos) << svg;
  for (const char* name : {"bf16 weights", "gradients", "fp32 master", "Adam m", "Adam v"})
    EXPECT_NE(svg.find(std::string(">") + name + "</text>"), std::string::npos) << name;
  EXPECT_EQ(svg.find("fp32 weights"), std::string::npos);
  // legend in first-appearance order
  EXPECT_LT(svg.find(">bf16 weights</text>"), svg.find(">gradients</text>"));
  EXPECT_LT(svg.find(">gradients</text>"), svg.find(">fp32 master</text>"));
  // totals above the bars: 16, 12, 16
  EXPECT_NE(svg.find("font-weight=\"600\">16</text>"), std::string::npos);
  EXPECT_NE(svg.find("font-weight=\"600\">12</text>"), std::string::npos);
  EXPECT_NE(svg.find("stroke-dasharray"), std::string::npos);  // the reference line
  EXPECT_NE(svg.find("series: 2 + 2"), std::string::npos);     // its label (wrapped to the legend)
  // one colour per part name across bars
  std::map<std::string, std::set<std::string>> fills;
  const std::regex seg("fill=\"(#[0-9a-f]{6})\"[^>]*><title>[^<]* · ([^:<]*):");
  for (std::sregex_iterator it(svg.begin(), svg.end(), seg), end; it != end; ++it) fills[(*it)[2]].insert((*it)[1]);
  EXPECT_EQ(fills.size(), 5u);
  std::set<std::string> distinct;
  for (const auto& [name, f] : fills) {
    EXPECT_EQ(f.size(), 1u) << name;
    distinct.insert(*f.begin());
  }
  EXPECT_EQ(distinct.size(), 5u);
}

TEST(Report, ChartsDrawTheStatedFigureAndWhatItsRuleAccepts) {
  using nlohmann::json;
  Report r = sample();
  ClaimResult& a = r.claims[0];
  a.stated = {{"value", 16}, {"unit", "B"}};
  a.measurements[0].unit = "B";
  a.measurements[0].stated = 16;
  a.measurements[0].accept_lo = 15.984;
  a.measurements[0].accept_hi = 16.016;
  Measurement ppl;  // a one-sided statement in ppl, drawn on a loss (nats) axis as its log
  ppl.name = "ppl";
  ppl.value = 7.5;
  ppl.unit = "ppl";
  ppl.compared = true;
  ppl.ok = true;
  ppl.stated = 9.6;
  ppl.accept_lo = -INFINITY;
  ppl.accept_hi = 20;
  a.measurements.push_back(ppl);
  a.details["stacked"] =
      json::array({{{"title", "B per param"},
                    {"unit", "B"},
                    {"statement", "value"},
                    {"bars", {{{"name", "measured"}, {"parts", {{{"name", "weights"}, {"value", 16.0}}}}}}}}});
  a.details["curve"] = {{"title", "loss"},
                        {"statement", "ppl"},
                        {"map", "ln"},
                        {"series", {{{"name", "training"}, {"y", {5.0, 3.0, 2.5}}}}}};
  std::string html = render_html(r);
  auto svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 2u) << html;
  const std::string& curve = svgs[0];
  const std::string& bars = svgs[1];
  for (const std::string* svg : {&curve, &bars}) {
    EXPECT_NE(svg->find("class=\"accepted\""), std::string::npos) << *svg;
    EXPECT_NE(svg->find("class=\"stated\""), std::string::npos) << *svg;
    EXPECT_EQ(svg->find("nan"), std::string::npos) << *svg;
  }
  // Ends that three digits would merge get the digits that part them; the log axis says so in the legend.
  // Each label fits the legend: wrapped at a space, never inside a figure.
  EXPECT_NE(bars.find(">stated 16 B</text>"), std::string::npos) << bars;
  EXPECT_NE(bars.find(">accepted</text>"), std::string::npos) << bars;
  EXPECT_NE(bars.find(">15.98–16.02 B</text>"), std::string::npos) << bars;
  EXPECT_NE(curve.find(">stated 9.6 ppl</text>"), std::string::npos) << curve;
  EXPECT_NE(curve.find(">(ln\u00a02.26)</text>"), std::string::npos) << curve;
  EXPECT_NE(curve.find(">accepted ≤ 20 ppl</text>"), std::string::npos) << curve;
  // The stated line at ln 9.6 sits between the curve's 2.5 and 3.0 (y grows downwards); the strip reaches the
  // plot's bottom (open below) and stops at ln 20 = 3.0.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(curve, m, std::regex("class=\"stated\" x1=\"[0-9.]+\" y1=\"([0-9.]+)\"")));
  const double y_stated = std::stod(m[1]);
  ASSERT_TRUE(std::regex_search(curve, m, std::regex("class=\"accepted\" x=\"[0-9.]+\" y=\"([0-9.]+)\"")));
  EXPECT_LT(std::stod(m[1]), y_stated);
  // A statement that was not compared (or a chart naming none) draws no marks.
  a.measurements[1].compared = false;
  a.details.erase("stacked");
  html = render_html(r);
  svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 1u);
  EXPECT_EQ(svgs[0].find("class=\"stated\""), std::string::npos);
}

// A claim with both parts lists its analytic statements before its measured ones, each tagged, whatever the order
// the check measured them in; report.json keeps the part.
TEST(Report, StatementsAreGroupedByPart) {
  Report r = sample();
  ClaimResult& a = r.claims[0];
  a.kinds = {"analytic", "measured"};
  Measurement timed = a.measurements[0];
  timed.name = "time_ratio_over_byte_ratio";
  timed.part = "measured";
  a.measurements[0].part = "analytic";
  a.measurements.insert(a.measurements.begin(), timed);
  const std::string html = render_html(r);
  const auto analytic = html.find("<span class=\"part analytic\">analytic</span> headline");
  const auto measured = html.find("<span class=\"part measured\">measured</span> time_ratio_over_byte_ratio");
  ASSERT_NE(analytic, std::string::npos) << html;
  ASSERT_NE(measured, std::string::npos) << html;
  EXPECT_LT(analytic, measured);
  const ClaimResult back = claim_from_json(to_json(a));
  ASSERT_EQ(back.measurements.size(), 2u);
  EXPECT_EQ(back.measurements[0].part, "measured");
  EXPECT_EQ(back.measurements[1].part, "analytic");
}

TEST(Report, MalformedStackedChartsDoNotCrashOrDrawNaN) {
  using nlohmann::json;
  const double nan = std::nan(""), inf = HUGE_VAL;
  json bad_parts = json::array({json{{"name", "ok"}, {"value", 3}}, json{{"name", "neg"}, {"value", -1}},
                                json{{"name", "text"}, {"value", "x"}}, json{{"name", "nan"}, {"value", nan}},
                                json{{"name", "inf"}, {"value", inf}}, json{{"value", 2}},
                                json{{"name", 7}, {"value", 2}}, json("not a part"), json(nullptr)});
  json partly = {
      {"title", "Malformed chart"},
      {"bars", json::array({json{{"name", "good"}, {"parts", bad_parts}}, json{{"parts", bad_parts}},
                            json{{"name", "no parts"}}, json{{"name", "parts not array"}, {"parts", 5}}, json(42)})},
      {"reference", {{"name", "nan ref"}, {"value", nan}}}};
  json all_zero = {
      {"title", "All zero chart"},
      {"bars", json::array({json{{"name", "a"}, {"parts", json::array({json{{"name", "p"}, {"value", 0}}})}}})}};
  json empty = {{"title", "Empty chart"}, {"bars", json::array()}};
  json no_bars = {{"title", "No bars at all"}};
  Report r = sample();
  r.claims[0].details["stacked"] = json::array({partly, all_zero, empty, no_bars, json("x"), json(nullptr), json(3.5)});
  r.claims[1].details["stacked"] = "not an array";
  r.claims[2].details["stacked"] = json::array(
      {json{{"title", "Huge"},
            {"bars", json::array({json{{"name", "h"},
                                       {"parts", json::array({json{{"name", "a"}, {"value", 1e308}},
                                                              json{{"name", "b"}, {"value", 1e308}}})}}})}}});
  std::string html;
  ASSERT_NO_THROW(html = render_html(r));
  const auto svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 1u) << html;
  std::string lower = svgs[0];
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  EXPECT_NE(svgs[0].find("Malformed chart"), std::string::npos);
  EXPECT_EQ(lower.find("nan"), std::string::npos) << svgs[0];
  EXPECT_EQ(lower.find("inf"), std::string::npos) << svgs[0];
  EXPECT_NE(svgs[0].find("font-weight=\"600\">3</text>"), std::string::npos) << svgs[0];  // only the valid part counts
  EXPECT_EQ(html.find("All zero chart"), std::string::npos);
  EXPECT_EQ(html.find("Empty chart"), std::string::npos);
}

// Every point in the legend, each in its own colour up to twenty, the chart tall enough to hold them (the legend
// was cut at 14, the colours cycled at 10); a linear curve's ticks at round values, no two labels alike.
TEST(Report, ChartsLegendsFitAndTicksAreRound) {
  using nlohmann::json;
  json pts = json::array();
  for (int i = 0; i < 18; ++i)
    pts.push_back({{"name", "p" + std::to_string(i)}, {"intensity", 0.5 + i}, {"flops", 1e10}});
  const std::string svg = svg_roofline({{"peak_flops", 190e9}, {"bandwidth", 19e9}, {"points", pts}});
  std::set<std::string> fills;
  for (std::size_t at = 0; (at = svg.find("r=\"4\" fill=\"", at)) != std::string::npos; at += 12)
    fills.insert(svg.substr(at + 13, 7));
  EXPECT_EQ(fills.size(), 18u) << svg;
  for (int i = 0; i < 18; ++i)
    EXPECT_NE(svg.find(">" + std::to_string(i + 1) + " p" + std::to_string(i) + "</text>"), std::string::npos);
  const auto h0 = svg.find("height=\"") + 8;
  const double height = std::stod(svg.substr(h0, svg.find('"', h0) - h0));
  EXPECT_GE(height, 30 + 14 * (3 + 18));
  // learning rates 0 .. 0.003 over 100 steps: ticks 0, 0.0005, ... each label once
  json y = json::array();
  for (int i = 0; i < 100; ++i) y.push_back(0.003 * std::sin(3.14159 * i / 100));
  const std::string curve = svg_curve({{"series", json::array({json{{"name", "lr"}, {"y", y}}})}});
  std::vector<std::string> labels;
  for (std::size_t at = 0; (at = curve.find("text-anchor=\"end\">", at)) != std::string::npos; at += 10) {
    const auto b = curve.find('>', at) + 1;
    labels.push_back(curve.substr(b, curve.find('<', b) - b));
  }
  ASSERT_GE(labels.size(), 3u) << curve;
  EXPECT_EQ(std::set<std::string>(labels.begin(), labels.end()).size(), labels.size()) << curve;
  for (const auto& l : labels) EXPECT_TRUE(l == "0" || l.find("0.00") == 0) << l;  // round: 0.0005, 0.0010 ...
}

TEST(Report, RooflineDrawsRoofsRidgeAndPointsOnLogAxes) {
  using nlohmann::json;
  json roof = {{"title", "a decode step <CPU>"},
               {"peak_flops", 190e9},
               {"bandwidth", 19e9},
               {"theoretical_peak_flops", 192e9},
               {"points", json::array({json{{"name", "bf16 GEMV chain"}, {"intensity", 1.0}, {"flops", 17e9}},
                                       json{{"name", "B=512"}, {"intensity", 480.0}, {"flops", 120e9}}})}};
  Report r = sample();
  r.claims[0].details["roofline"] = roof;
  const auto svgs = svgs_of(render_html(r));
  ASSERT_EQ(svgs.size(), 2u);  // the claim's, and the machine's (every claim's points together)
  const std::string& svg = svgs[0];
  EXPECT_NE(svg.find("a decode step &lt;CPU&gt;"), std::string::npos);
  EXPECT_NE(svgs[1].find("every point measured in this run"), std::string::npos);
  EXPECT_NE(svgs[1].find("batch sweep B=512"), std::string::npos);
  EXPECT_NE(svg.find("ridge 10 FLOP/byte"), std::string::npos) << svg;  // 190e9 / 19e9
  EXPECT_NE(svg.find(">1 bf16 GEMV chain</text>"), std::string::npos);  // numbered, as beside its dot
  EXPECT_NE(svg.find(">2 B=512</text>"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);  // the roofs
  EXPECT_NE(svg.find("theoretical peak"), std::string::npos);
  // decades on both axes: 0.1 ... 1000 FLOP/byte
  EXPECT_NE(svg.find(">0.1</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">1000</text>"), std::string::npos) << svg;
}

TEST(Report, RooflineDrawsEveryEnginesRoofAndRidge) {
  using nlohmann::json;
  // Emerald Rapids' figures (../shared/machines): fp32 FMA 350 GFLOP/s, AMX 1.75 TFLOP/s, read 28 GB/s
  json roof = {{"title", "engines"},
               {"peak_flops", 350e9},
               {"bandwidth", 28e9},
               {"roofs", json::array({json{{"name", "AMX bf16 tiles"}, {"flops", 1750e9}},
                                      json{{"name", "bad"}, {"flops", -1}}, json("x")})},
               {"points", json::array({json{{"name", "p"}, {"intensity", 1.0}, {"flops", 20e9}}})}};
  Report r = sample();
  r.claims[0].details["roofline"] = roof;
  const auto svgs = svgs_of(render_html(r));
  ASSERT_EQ(svgs.size(), 2u);
  for (const auto& svg : svgs) {  // the claim's chart and the machine's both carry the extra roof
    EXPECT_NE(svg.find("AMX bf16 tiles ridge 62.5"), std::string::npos) << svg;  // 1750e9 / 28e9
    EXPECT_NE(svg.find("ridge 12.5 FLOP/byte"), std::string::npos) << svg;       // the fp32 one
    EXPECT_EQ(svg.find(">bad"), std::string::npos);
  }
}

TEST(Report, MalformedRooflinesDoNotCrashOrDrawNaN) {
  using nlohmann::json;
  const double nan = std::nan("");
  Report r = sample();
  r.claims[0].details["roofline"] = {{"peak_flops", -1}, {"bandwidth", 1e9}};
  r.claims[1].details["roofline"] = {{"peak_flops", 1e308}, {"bandwidth", 1e-300}, {"points", 3}};
  r.claims[2].details["roofline"] = {
      {"title", 5},
      {"peak_flops", 1e11},
      {"bandwidth", 1e10},
      {"points", json::array({json{{"name", 7}, {"intensity", nan}, {"flops", 1e9}}, json("x"),
                              json{{"name", "denormal"}, {"intensity", 5e-324}, {"flops", 1e9}},
                              json{{"name", "ok"}, {"intensity", 2.0}, {"flops", 1e10}}})}};
  std::string html;
  ASSERT_NO_THROW(html = render_html(r));
  const auto svgs = svgs_of(html);
  ASSERT_EQ(svgs.size(), 2u) << html;  // the valid claim's, and the machine's from the first roof that draws
  for (const auto& svg : svgs) {
    std::string lower = svg;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    EXPECT_EQ(lower.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(lower.find("inf"), std::string::npos) << svg;
    EXPECT_NE(svg.find(" ok</text>"), std::string::npos);
    EXPECT_EQ(svg.find("denormal"), std::string::npos);  // 330 decades below the ridge: left out
  }
}

// A tree without .git records its commit as null: every writer still renders, the commit "unknown".
TEST(Report, RendersWithoutACommit) {
  Report r = sample();
  r.records["commit"] = nullptr;
  std::string html;
  ASSERT_NO_THROW(html = render_html(r));
  EXPECT_NE(html.find("commit unknown"), std::string::npos);
  for (const auto& w : all_writers()) EXPECT_NO_THROW(w->render(r)) << w->filename();
}

// One probe for every table (issue 34): a benchmark row's GFLOP/s against the roof ch06.ridge_measured's probe
// measured in the same run for the engine the row ran on; the benchmark's own probe is a row like the others.
TEST(Report, BenchmarkRowsAreHeldToTheClaimsProbe) {
  Report r = sample();
  ClaimResult ridge = r.claims.front();
  ridge.id = "ch06.ridge_measured";
  ridge.details["roof"] = {{"engines",
                            {{{"engine", "fp32 FMA"}, {"isa", "avx512"}, {"peak_gflops", 200.0}},
                             {{"engine", "bf16 dot products"}, {"isa", "avx512_bf16"}, {"peak_gflops", 400.0}},
                             {{"engine", "AMX bf16 tiles"}, {"isa", "amx_bf16"}, {"peak_gflops", 4000.0}}}}};
  const nlohmann::json attention = {{"name", "attention"}, {"ratio", 1.5}, {"gflops", 150.0}};
  const nlohmann::json dot = {{"name", "matmul"}, {"ratio", 0.8}, {"gflops", 300.0}, {"engine", "avx512_bf16"}};
  const nlohmann::json amx = {{"name", "matmul"}, {"ratio", 0.9}, {"gflops", 1000.0}, {"engine", "amx_bf16"}};
  const nlohmann::json no_flops = {{"name", "decode"}, {"ratio", 1.0}};
  EXPECT_EQ(benchmark_share(r, attention), "");  // no ridge claim in the run: no share
  r.claims.push_back(ridge);
  EXPECT_EQ(benchmark_share(r, attention).rfind("0.75 of fp32 FMA (200 GFLOP/s", 0), 0u)
      << benchmark_share(r, attention);
  EXPECT_EQ(benchmark_share(r, dot).rfind("0.75 of bf16 dot products (400", 0), 0u) << benchmark_share(r, dot);
  EXPECT_EQ(benchmark_share(r, amx).rfind("0.25 of AMX bf16 tiles", 0), 0u) << benchmark_share(r, amx);
  EXPECT_EQ(benchmark_share(r, no_flops), "");
  r.benchmarks = nlohmann::json::array({attention, dot});
  const std::string md = MarkdownWriter().render(r);
  EXPECT_NE(md.find("| share of this run's probe |"), std::string::npos);
  EXPECT_NE(md.find("0.75 of bf16 dot products"), std::string::npos);
  EXPECT_NE(HtmlWriter().render(r).find("0.75 of fp32 FMA"), std::string::npos);
}
