#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "report.h"

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
