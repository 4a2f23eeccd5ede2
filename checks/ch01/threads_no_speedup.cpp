// ch01.threads_no_speedup — 「并行：CPU 密集的预处理，串行 0.46 s、8 线程 0.46 s（GIL）」
// The measurement is a Python driver's (checks/ch01/threads_no_speedup.py), run in its own interpreter; its result
// protocol (checks/pydriver.py) is forwarded so the report merges it with the C++ checks.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

static void threads_no_speedup(claimcheck::Context& ctx) {
  claimcheck::forward_driver_result(ctx, claimcheck::run_python_driver(ctx, "checks/ch01/threads_no_speedup.py", {}));
}
CLAIMCHECK_REGISTER(threads_no_speedup)
    .claim("ch01.threads_no_speedup")
    .derives("expected_speedup", claimcheck::Source::probe);
