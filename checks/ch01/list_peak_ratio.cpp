// ch01.list_peak_ratio — 「内存：19.4 MB 的 JSONL 读成 list 峰值 102.9 MB（5.3 倍）」
// The measurement is a Python driver's (checks/ch01/list_peak_ratio.py), run in its own interpreter; its result
// protocol (checks/pydriver.py) is forwarded so the report merges it with the C++ checks.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

static void list_peak_ratio(claimcheck::Context& ctx) {
  claimcheck::forward_driver_result(
      ctx, claimcheck::run_python_driver(
               ctx, "checks/ch01/list_peak_ratio.py",
               {std::to_string(ctx.input("file_bytes").get<double>()), std::to_string(ctx.seed())}));
}
CLAIMCHECK_REGISTER(list_peak_ratio).claim("ch01.list_peak_ratio");
