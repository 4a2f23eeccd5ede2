// ch01.pool_rules — 「进程池的规矩：传给 Pool.map 的函数要在模块顶层、全局变量在子进程里是拷贝」
// The measurement is a Python driver's (checks/ch01/pool_rules.py), run in its own interpreter; its result
// protocol (checks/pydriver.py) is forwarded so the report merges it with the C++ checks.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

static void pool_rules(claimcheck::Context& ctx) {
  claimcheck::forward_driver_result(ctx, claimcheck::run_python_driver(ctx, "checks/ch01/pool_rules.py", {}));
}
CLAIMCHECK_REGISTER(pool_rules).claim("ch01.pool_rules");
