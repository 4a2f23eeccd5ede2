// ch01.generator_peak_flat — 「生成器流水线 11.5 MB——与文件多大无关」
// The measurement is a Python driver's (checks/ch01/generator_peak_flat.py), run in its own interpreter; its result
// protocol (checks/pydriver.py) is forwarded so the report merges it with the C++ checks.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

static void generator_peak_flat(claimcheck::Context& ctx) {
  claimcheck::forward_driver_result(
      ctx, claimcheck::run_python_driver(
               ctx, "checks/ch01/generator_peak_flat.py",
               {std::to_string(ctx.input("file_bytes").get<double>()), std::to_string(ctx.seed())}));
}
CLAIMCHECK_REGISTER(generator_peak_flat).claim("ch01.generator_peak_flat");
