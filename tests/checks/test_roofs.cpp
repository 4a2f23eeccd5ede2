// The device-neutral roofline view (checks/ch06/testbed/roofs.h) and the two probes' ways into it: one chart, one
// floor, whichever device measured the roofs; the testbed that times a kernel against them on either device.
#include <gtest/gtest.h>

#include "../../checks/ch06/testbed/roofs.h"
#include "../../checks/ch06/testbed/testbed.h"

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

// ---- the testbed (checks/ch06/testbed/testbed.h) over roofs given, with a context that records
// ------------------------
namespace {
class Recording final : public claimcheck::Context {
 public:
  nlohmann::json details = nlohmann::json::object();
  const std::string& claim_id() const override { return id_; }
  std::filesystem::path input_path(const std::string&) const override { return {}; }
  const nlohmann::json& input(const std::string&) const override { return details; }
  void measure(double, const std::string&) override {}
  void measure(const std::string&, double, const std::string&) override {}
  void measure_bool(const std::string&, bool) override {}
  void derive(const std::string&, double, const std::string&) override {}
  void assumption(const std::string&) override {}
  void alternative(const std::string&, double, const std::string&, const std::string&) override {}
  void detail(const std::string& key, const nlohmann::json& value) override { details[key] = value; }
  void pending(const std::string&) override {}
  [[noreturn]] void skip(const std::string& reason) override { throw std::runtime_error("skip: " + reason); }
  std::uint64_t seed() const override { return 1; }
  const claimcheck::HardwareInfo& hardware() const override { throw std::logic_error("no hardware in this test"); }
  const std::filesystem::path& root() const override { return root_; }
  bool part_selected(const std::string&) const override { return true; }
  bool wants(const std::string&) const override { return true; }
  bool timing_judged() const override { return true; }
  const std::string& planted_fault() const override { return id_; }
  std::filesystem::path keep_file(const std::string& name) override { return name; }
  nlohmann::json records() const override { return nlohmann::json::object(); }

 private:
  std::string id_;
  std::filesystem::path root_;
};

ch06::gpu::Roof h200() {
  ch06::gpu::Roof g;
  g.read = 4e12;
  g.peak = 8e14;
  g.device = "H200";
  return g;
}
}  // namespace

// On a GPU: the median sample against the roof the check names, or the floor of the two where it names none.
TEST(Testbed, OnAGpuTheMedianSampleAgainstItsRoof) {
  Recording ctx;
  const ch06::Testbed tb(ctx, h200(), 9.9e14);
  EXPECT_NO_THROW(tb.gpu_roof());
  EXPECT_EQ(tb.device(), "H200");
  int calls = 0;
  const double samples[] = {9e-3, 2e-3, 3e-3, 3.5e-3};  // the first a warm-up, not kept
  ch06::Kernel decode{"chain", 1e10, 1e10};             // intensity 1: under the memory roof (ridge 200)
  decode.sample = [&] { return samples[calls++]; };
  decode.rounds = 3;
  decode.warm_ups = 1;
  const ch06::Timing t = tb.time(decode);
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(t.bound, ch06::Bound::memory);
  EXPECT_DOUBLE_EQ(t.seconds, 3e-3);
  EXPECT_DOUBLE_EQ(t.roof_seconds(), 1e10 / 4e12);
  EXPECT_DOUBLE_EQ(t.ratio, 3e-3 / 2.5e-3);
  ASSERT_EQ(t.ratios.size(), 3u);
  EXPECT_DOUBLE_EQ(t.ratios[0], 2e-3 / 2.5e-3);
  EXPECT_DOUBLE_EQ(t.read, 4e12);
  ch06::Kernel gemm{"gemm", 8e14, 1e9, [] { return 2.0; }};  // intensity 8e5: under the compute roof
  const ch06::Timing c = tb.time(gemm);
  EXPECT_EQ(c.bound, ch06::Bound::compute);
  EXPECT_DOUBLE_EQ(c.roof_seconds(), 1.0);
  gemm.bound = ch06::Bound::memory;  // a check that names the roof is held to that one
  EXPECT_DOUBLE_EQ(tb.time(gemm).roof_seconds(), 1e9 / 4e12);

  tb.record("a decode step", nlohmann::json::array({ch06::roofline_point(decode, t.seconds)}));
  EXPECT_EQ(ctx.details.at("roofline").at("title"), "a decode step on H200");
  EXPECT_DOUBLE_EQ(ctx.details.at("roofline").at("theoretical_peak_flops").get<double>(), 9.9e14);
  EXPECT_EQ(ctx.details.at("roof").at("device"), "H200");
  EXPECT_DOUBLE_EQ(ctx.details.at("roofline").at("points")[0].at("intensity").get<double>(), 1);
}

// On this CPU: each sample paired with its roof's probe of the moment (the FMA peak; a read of the kernel's own
// buffers; the probe's bandwidth, its first round the roof's own).
TEST(Testbed, OnTheCpuEachSampleAgainstItsMomentsProbe) {
  Recording ctx;
  ch06::Roof cpu;
  cpu.threads = 1;
  cpu.peak.flops_per_s = 1e11;
  cpu.bw.read_bytes_per_s = 5e10;
  cpu.bw.array_bytes = std::size_t{1} << 20;
  cpu.cpu.model_name = "a CPU";
  const ch06::Testbed tb(ctx, cpu);
  EXPECT_THROW(tb.gpu_roof(), std::logic_error);
  EXPECT_EQ(tb.device(), "a CPU");

  ch06::Kernel gemm{"gemm", 1e9, 1e6, [] { return 0.02; }};
  gemm.rounds = 3;
  const ch06::Timing c = tb.time(gemm);
  EXPECT_EQ(c.bound, ch06::Bound::compute);
  EXPECT_GT(c.peak, 0);  // measured by the probe beside each sample, not the roof's
  EXPECT_DOUBLE_EQ(c.ratio, 0.02 * c.peak / 1e9);
  EXPECT_EQ(c.ratios.size(), 3u);

  std::vector<float> w(std::size_t{1} << 18, 1.0f);  // 1 MiB
  ch06::Kernel gemv{"gemv", 1e6, 1e6 * 1.5, [] { return 1e-3; }};
  gemv.reads = {{w.data(), w.size() * sizeof(float)}};
  gemv.rounds = 3;
  const ch06::Timing m = tb.time(gemv);
  EXPECT_EQ(m.bound, ch06::Bound::memory);
  EXPECT_EQ(m.ratios.size(), 3u);
  EXPECT_NEAR(m.roof_seconds(), gemv.bytes / m.read, 1e-15);
  // Its roof scales the read of its buffers to its bytes: 1.5x what it named as read.
  EXPECT_GT(m.roof_seconds(), 0);

  ch06::Kernel b1{"b1", 1e6, 1e9, [] { return 0.1; }};  // no buffers named: the probe's array
  const ch06::Timing r = tb.time(b1);
  EXPECT_DOUBLE_EQ(r.read, 5e10);  // one round: the roof's own bandwidth
  EXPECT_DOUBLE_EQ(r.ratio, 0.1 * 5e10 / 1e9);

  Recording none;
  ch06::Testbed unmeasured(none, /*cpu_only=*/true);
  EXPECT_THROW(unmeasured.time(gemm), std::logic_error);
}
