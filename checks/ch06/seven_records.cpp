// ch06.seven_records — 「三个月后能复现：七项记录——代码版本（commit）· 数据版本（revision）· 配置 · 环境 · seed · 硬件
// · 日志与 checkpoint」 Every report carries all seven: the check reads the records this run puts in its report.
#include "claimcheck/check.h"
#include "claimcheck/records.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

static void seven_records(claimcheck::Context& ctx) {
  // Prepare: the records exactly as the report carries them.
  const nlohmann::json records = ctx.records();

  // Run: count the present, non-empty ones.
  std::vector<std::string> missing;
  const int present = claimcheck::count_complete_records(records, &missing);

  // Verify.
  ctx.measure(present, "records");
  ctx.detail("missing", missing);
  if (records.is_object() && records.contains("commit") && records["commit"].is_object())
    ctx.detail("commit", records["commit"]);
  ctx.assumption("a record counts when it is present and not empty; the commit is read from git at run time");

  // And two of them against what they name, read here apart from the harness: the seed is this run's, and the
  // commit is the checkout's HEAD as git prints it.
  ctx.measure_bool("seed_is_the_runs", records.is_object() && records.contains("seed") &&
                                           records["seed"].is_number_integer() &&
                                           records["seed"] == nlohmann::json(ctx.seed()));
  std::string head;
  const std::string cmd = "git -C '" + ctx.root().string() + "' rev-parse HEAD 2>/dev/null";
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[128];
    while (std::fgets(buf, sizeof buf, p)) head += buf;
    if (pclose(p) != 0) head.clear();
  }
  while (!head.empty() && (head.back() == '\n' || head.back() == '\r')) head.pop_back();
  // (Outside a git checkout there is no HEAD: the commit record is missing too, and the claim fails on its count.)
  const bool sha = records.is_object() && records.contains("commit") && records["commit"].is_object() &&
                   records["commit"].contains("sha") && records["commit"]["sha"].is_string();
  ctx.measure_bool("commit_is_head", sha && !head.empty() && records["commit"]["sha"].get<std::string>() == head);
}
CLAIMCHECK_REGISTER(seven_records).claim("ch06.seven_records");
