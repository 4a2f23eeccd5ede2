// The device-neutral roofline view (checks/ch06/ch06_roofs.h) and the two probes' ways into it: one chart, one
// floor, whichever device measured the roofs.
#include <gtest/gtest.h>

#include "../../checks/ch06/ch06_gpu.h"
#include "../../checks/ch06/ch06_roofs.h"

TEST(Roofs, FloorIsTheSlowerRoof) {
  const ch06::Roofs r{"test", 100e9, 2e12, 3e12, {}};
  EXPECT_DOUBLE_EQ(r.ridge(), 20);
  EXPECT_DOUBLE_EQ(r.bytes_seconds(1e9), 0.01);
  EXPECT_DOUBLE_EQ(r.flops_seconds(1e9), 0.0005);
  EXPECT_DOUBLE_EQ(r.floor_seconds(1e9, 1e9), 0.01);   // intensity 1: memory-bound
  EXPECT_DOUBLE_EQ(r.floor_seconds(1e11, 1e9), 0.05);  // intensity 100: compute-bound
  EXPECT_TRUE(r.memory_bound(19e9, 1e9));
  EXPECT_FALSE(r.memory_bound(21e9, 1e9));
  const auto p = ch06::roofline_point("k", 4e9, 2e9, 0.5);
  EXPECT_DOUBLE_EQ(p.at("intensity").get<double>(), 2);
  EXPECT_DOUBLE_EQ(p.at("flops").get<double>(), 8e9);
}

TEST(Roofs, BothProbesDrawTheSameChart) {
  ch06::Roof cpu;  // the CPU probe: the fp32 FMA roof first, then the other engines
  cpu.peak.flops_per_s = 2e11;
  cpu.bw.read_bytes_per_s = 5e10;
  cpu.theory_system = 2.2e11;
  cpu.engines = {{"fp32 FMA"}, {"bf16 dot products"}, {"AMX bf16 tiles"}};
  cpu.engines[1].peak = 4e11;
  cpu.engines[2].peak = 0;  // absent: not drawn
  const auto c = ch06::roofline_chart("cpu", cpu.roofs(), nlohmann::json::array());
  EXPECT_DOUBLE_EQ(c.at("peak_flops").get<double>(), 2e11);
  EXPECT_DOUBLE_EQ(c.at("bandwidth").get<double>(), 5e10);
  EXPECT_DOUBLE_EQ(c.at("theoretical_peak_flops").get<double>(), 2.2e11);
  ASSERT_EQ(c.at("roofs").size(), 1u);
  EXPECT_EQ(c.at("roofs")[0].at("name"), "bf16 dot products");
  EXPECT_DOUBLE_EQ(cpu.roofs().ridge(), cpu.ridge());

  ch06::gpu::Roof gpu;  // the CUDA probes: one engine, the datasheet's peak where the check has one
  gpu.read = 4e12;
  gpu.peak = 8e14;
  gpu.device = "H200";
  const auto g = ch06::roofline_chart("gpu", gpu.roofs(), nlohmann::json::array());
  EXPECT_FALSE(g.contains("theoretical_peak_flops"));
  EXPECT_FALSE(g.contains("roofs"));
  EXPECT_DOUBLE_EQ(ch06::roofline_chart("gpu", gpu.roofs(9.9e14), {}).at("theoretical_peak_flops").get<double>(),
                   9.9e14);
  EXPECT_DOUBLE_EQ(gpu.roofs().ridge(), gpu.ridge());
  EXPECT_EQ(gpu.roofs().device, "H200");
}
