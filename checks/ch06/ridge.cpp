// ch06.ridge — 「ridge = 989 / 3.35 ≈ 295 FLOP/字节」 (H100 SXM)
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"

namespace ref = claimcheck::ref;

static void ridge(claimcheck::Context& ctx) {
  // Prepare + Run: peak compute over peak bandwidth from the card's spec file.
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));

  // Verify.
  ctx.measure(hw.ridge(), "FLOP/byte");
  ctx.assumption(hw.name + ": dense bf16 peak / HBM peak");
  const ref::HardwareSpec h200 = ref::load_hardware_spec(ctx.input_path("other_hardware"));
  ctx.measure("h200_ridge", h200.ridge(), "FLOP/byte");  // same compute, more bandwidth: the ridge moves left
}
CLAIMCHECK_REGISTER(ridge).claim("ch06.ridge");
