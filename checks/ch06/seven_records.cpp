// ch06.seven_records — 「三个月后能复现：七项记录——代码版本（commit）· 数据版本（revision）· 配置 · 环境 · seed · 硬件
// · 日志与 checkpoint」 Every report carries all seven: the check reads the records this run puts in its report.
#include "claimcheck/check.h"
#include "claimcheck/records.h"

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
}
CLAIMCHECK_REGISTER(seven_records).claim("ch06.seven_records");
