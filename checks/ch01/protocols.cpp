// ch01.protocols — 「语法各是一个 Python 协议，PyTorch
// 建在上面：__getitem__/__len__、yield、__call__、@torch.no_grad()、**kwargs、@dataclass」 The measurement is a Python
// driver's (checks/ch01/protocols.py), run in its own interpreter; its result protocol (checks/pydriver.py) is
// forwarded so the report merges it with the C++ checks.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <nlohmann/json.hpp>

static void protocols(claimcheck::Context& ctx) {
  claimcheck::forward_driver_result(ctx, claimcheck::run_python_driver(ctx, "checks/ch01/protocols.py", {}));
}
CLAIMCHECK_REGISTER(protocols).claim("ch01.protocols");
