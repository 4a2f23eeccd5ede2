// ch01.processes_speedup — 「8 进程 0.15 s（3.1×）」
// The measurement is a Python driver's (checks/ch01/processes_speedup.py), run in its own interpreter; its result
// protocol (checks/pydriver.py) is forwarded so the report merges it with the C++ checks.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

static void processes_speedup(claimcheck::Context& ctx) {
  claimcheck::forward_driver_result(ctx, claimcheck::run_python_driver(ctx, "checks/ch01/processes_speedup.py", {}));
}
CLAIMCHECK_REGISTER(processes_speedup)
    .claim("ch01.processes_speedup")
    .derives("ideal_speedup", claimcheck::Source::probe);
