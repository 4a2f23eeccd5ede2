// ch06.ridge — 「ridge = 989 / 3.35 ≈ 295 FLOP/字节」 (H100 SXM)
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/ref/roofline.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace ref = claimcheck::ref;

static void ridge(claimcheck::Context& ctx) {
  // Prepare + Run: peak compute over peak bandwidth from the card's spec file.
  const ref::HardwareSpec hw = ref::load_hardware_spec(ctx.input_path("hardware"));

  // Verify.
  ctx.measure(hw.ridge(), "FLOP/byte");
  ctx.assumption(hw.name + ": dense bf16 peak / HBM peak");
  const ref::HardwareSpec h200 = ref::load_hardware_spec(ctx.input_path("other_hardware"));
  ctx.measure("h200_ridge", h200.ridge(), "FLOP/byte");  // same compute, more bandwidth: the ridge moves left

  // The CPU table the measured roofs rest on (reference/data/hardware/cpu-uarch.json), on every CPU the project has
  // met, whichever this one is: each recorded /proc/cpuinfo (inputs.machines_met) given the FLOP per cycle its
  // inputs state (LLVM's scheduling models, the vendors' guides, the probes measured there). A rule for another
  // CPU than this one is judged here too: its users' machines are.
  int wrong = 0;
  nlohmann::json seen = nlohmann::json::object();
  for (const auto& [name, want] : ctx.input("machines_met").items()) {
    const std::filesystem::path file = ctx.root() / want.at("cpuinfo").get<std::string>();
    std::ifstream in(file);
    if (!in) throw std::invalid_argument(file.string() + ": field '(file)': cannot be read");
    const ref::Microarch m =
        ref::identify_microarch(ref::parse_cpuinfo(in, file.string()), ctx.input_path("cpu_table"));
    nlohmann::json got = {{"microarchitecture", m.name},
                          {"bf16_dot", m.bf16_dot_flop_per_cycle},
                          {"amx_bf16", m.amx_bf16_flop_per_cycle},
                          {"fp32", m.fp32_flop_per_cycle}};
    for (const char* k : {"bf16_dot", "amx_bf16"}) wrong += got[k].get<double>() != want.at(k).get<double>();
    for (const auto& [isa, figs] : want.at("fp32").items())
      wrong += !got["fp32"].contains(isa) || got["fp32"][isa] != figs;
    wrong += got["fp32"].size() != want.at("fp32").size();  // a path the table gives that the machine lacks
    seen[name] = got;
  }
  ctx.measure("cpu_table_on_machines_met", wrong, "count");
  ctx.detail("cpu_table_on_machines_met", seen);
}
CLAIMCHECK_REGISTER(ridge).claim("ch06.ridge");
