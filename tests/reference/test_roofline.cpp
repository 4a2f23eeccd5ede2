// The roofline's answer key (reference/src/roofline.cpp): the theoretical peak, /proc/cpuinfo as each machine met
// wrote it (reference/data/machines/), the microarchitecture table's rules and refusals, the knee of a batch sweep.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "claimcheck/ref/gemv.h"
#include "claimcheck/ref/roofline.h"

namespace ref = claimcheck::ref;

namespace {
const std::filesystem::path kUarchTable =
    std::filesystem::path(CLAIMCHECK_SOURCE_DIR) / "reference/data/hardware/cpu-uarch.json";
// The first processor of a machine's /proc/cpuinfo as recorded in reference/data/machines/.
ref::CpuIdentity machine(const std::string& name) {
  const auto path = std::filesystem::path(CLAIMCHECK_SOURCE_DIR) / "reference/data/machines" / (name + ".cpuinfo");
  std::ifstream in(path);
  return ref::parse_cpuinfo(in, path.string());
}
ref::Microarch uarch_of(ref::CpuIdentity c) { return ref::identify_microarch(c, kUarchTable); }
double fp32(const ref::Microarch& m, const std::string& isa) {
  const auto it = m.fp32_flop_per_cycle.find(isa);
  return it == m.fp32_flop_per_cycle.end() || it->second.size() != 1 ? -1 : it->second[0];
}
}  // namespace

TEST(Roofline, TheoreticalPeakIsCoresClockFlopPerCycle) {
  EXPECT_DOUBLE_EQ(ref::theoretical_peak_flops(2, 3.0e9, 32), 2 * 3.0e9 * 32);
  // where CPUID cannot tell two figures apart, the one nearer to what was measured
  EXPECT_EQ(ref::nearest_figure({32, 64}, 60), 64);
  EXPECT_EQ(ref::nearest_figure({32, 64}, 30), 32);
  EXPECT_EQ(ref::nearest_figure({32, 64}, 0), 64);
}

// The four CPUs the project has met, from their recorded /proc/cpuinfo, and an Arm server in the kernel's format.
TEST(Roofline, ParsesTheMachinesDescriptions) {
  const auto emr = machine("emerald-rapids");
  EXPECT_EQ(emr.vendor, "GenuineIntel");
  EXPECT_EQ(emr.family, 6);
  EXPECT_EQ(emr.model, 207);
  EXPECT_EQ(emr.model_name, "Intel(R) Xeon(R) Processor");
  EXPECT_TRUE(emr.has("amx_bf16") && emr.has("amx_tile") && emr.has("avx512_bf16") && emr.has("avx512f"));
  EXPECT_FALSE(emr.has("amx"));  // whole words only
  EXPECT_DOUBLE_EQ(emr.clock_hz, 2.1e9);
  const auto zen3 = machine("zen3");
  EXPECT_EQ(zen3.vendor, "AuthenticAMD");
  EXPECT_EQ(zen3.family, 25);
  EXPECT_EQ(zen3.model, 1);
  EXPECT_TRUE(zen3.has("avx2") && zen3.has("fma"));
  EXPECT_FALSE(zen3.has("avx512f"));
  const auto zen4 = machine("zen4");
  EXPECT_EQ(zen4.model, 17);
  EXPECT_TRUE(zen4.has("avx512f") && zen4.has("avx512_bf16"));
  EXPECT_FALSE(zen4.has("amx_bf16"));
  const auto zen5 = machine("zen5");
  EXPECT_EQ(zen5.family, 26);
  EXPECT_EQ(zen5.model, 2);
  EXPECT_TRUE(zen5.has("avx512f") && zen5.has("avx512_bf16") && zen5.has("avx_vnni"));
  EXPECT_FALSE(zen5.has("amx_bf16"));
  const auto v1 = machine("neoverse-v1");
  EXPECT_EQ(v1.vendor, "ARM");
  EXPECT_EQ(v1.implementer, "0x41");
  EXPECT_EQ(v1.part, "0xd40");
  EXPECT_TRUE(v1.has("asimd") && v1.has("bf16"));
  std::istringstream empty("# nothing\n\n");
  EXPECT_THROW(ref::parse_cpuinfo(empty, "empty"), std::runtime_error);
}

TEST(Roofline, EachMachineItsMicroarchitectureAndEngines) {
  const auto emr = uarch_of(machine("emerald-rapids"));
  EXPECT_EQ(emr.name, "Emerald Rapids");
  EXPECT_EQ(fp32(emr, "avx512"), 64);  // two full 512-bit FMA units: 2 x 16 lanes x 2
  EXPECT_EQ(fp32(emr, "avx2"), 32);
  EXPECT_EQ(emr.amx_bf16_flop_per_cycle, 1024);
  // vdpbf16ps: a floor, the rate a Xeon with AMX delivered (half the FMA's FLOP); the FMA rate would call that probe
  // broken (below half its roof) on every Xeon whose zmm vdpbf16ps issues once per two cycles.
  EXPECT_EQ(emr.bf16_dot_flop_per_cycle, 32);
  EXPECT_TRUE(emr.bf16_dot_lower_bound);
  const auto zen4 = uarch_of(machine("zen4"));
  EXPECT_EQ(zen4.name, "Zen 4");
  EXPECT_EQ(fp32(zen4, "avx512"), 32);  // double-pumped: the zmm peak is the ymm peak
  EXPECT_EQ(fp32(zen4, "avx2"), 32);
  EXPECT_EQ(zen4.amx_bf16_flop_per_cycle, 0);
  EXPECT_EQ(zen4.bf16_dot_flop_per_cycle, 64);  // one zmm vdpbf16ps per cycle, as measured on this core
  EXPECT_FALSE(zen4.bf16_dot_lower_bound);
  const auto zen3 = uarch_of(machine("zen3"));
  EXPECT_EQ(zen3.name, "Zen 3");
  EXPECT_EQ(fp32(zen3, "avx2"), 32);
  EXPECT_EQ(zen3.bf16_dot_flop_per_cycle, 0);
  EXPECT_EQ(zen3.fp32_flop_per_cycle.count("avx512"), 0u);
  const auto zen5 = uarch_of(machine("zen5"));
  EXPECT_EQ(zen5.name, "Zen 5 (server / desktop)");
  EXPECT_EQ(fp32(zen5, "avx512"), 64);  // full 512-bit datapaths: twice Zen 4's zmm peak per cycle
  EXPECT_EQ(fp32(zen5, "avx2"), 32);
  EXPECT_EQ(zen5.bf16_dot_flop_per_cycle, 128);  // two zmm vdpbf16ps per cycle, as measured on this core
  EXPECT_FALSE(zen5.bf16_dot_lower_bound);
  EXPECT_EQ(zen5.amx_bf16_flop_per_cycle, 0);
  // A guest whose hypervisor reports a client core's model number (167, Rocket Lake) on a Xeon with AMX: AMX names
  // the server core (two 512-bit FMA units), the number alone would say one.
  const auto amx167 = machine("xeon-amx-model167");
  EXPECT_EQ(amx167.model, 167);
  const auto x = uarch_of(amx167);
  EXPECT_EQ(x.name, "Xeon with AMX (Sapphire Rapids or later; the model number does not say which)");
  EXPECT_EQ(fp32(x, "avx512"), 64);
  EXPECT_EQ(x.amx_bf16_flop_per_cycle, 1024);
  EXPECT_EQ(x.bf16_dot_flop_per_cycle, 32);
  auto rkl = amx167;  // the same numbers without AMX: the client rule
  rkl.flags.erase(std::remove(rkl.flags.begin(), rkl.flags.end(), "amx_tile"), rkl.flags.end());
  EXPECT_EQ(fp32(uarch_of(rkl), "avx512"), 32);
  const auto v1 = uarch_of(machine("neoverse-v1"));
  EXPECT_EQ(v1.name, "Neoverse V1");
  EXPECT_EQ(fp32(v1, "neon"), 32);  // four 128-bit pipes
}

TEST(Roofline, TheTableTellsCoresApartByModelNameAndLeavesStrangersUnknown) {
  ref::CpuIdentity skx{"GenuineIntel", 6, 85, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"};
  skx.flags = {"avx2", "fma", "avx512f"};
  EXPECT_EQ(fp32(uarch_of(skx), "avx512"), 64);
  skx.model_name = "Intel(R) Xeon(R) Silver 4114 CPU @ 2.20GHz";
  EXPECT_EQ(fp32(uarch_of(skx), "avx512"), 32);
  skx.model_name = "Intel Xeon Processor (Skylake, IBRS)";  // a VM's name: one or two units, both allowed
  EXPECT_EQ(uarch_of(skx).fp32_flop_per_cycle.at("avx512"), (std::vector<double>{32, 64}));
  skx.flags.push_back("avx512_bf16");  // the same model with bf16: Cooper Lake
  EXPECT_EQ(uarch_of(skx).name, "Cooper Lake");
  ref::CpuIdentity zen2{"AuthenticAMD", 23, 0x31};
  EXPECT_EQ(uarch_of(zen2).name, "Zen 2");
  ref::CpuIdentity zen1{"AuthenticAMD", 23, 1};
  EXPECT_EQ(fp32(uarch_of(zen1), "avx2"), 16);  // two 128-bit pipes
  ref::CpuIdentity turin{"AuthenticAMD", 26, 0x11}, strix{"AuthenticAMD", 26, 0x24};
  EXPECT_EQ(fp32(uarch_of(turin), "avx512"), 64);
  EXPECT_EQ(fp32(uarch_of(strix), "avx512"), 32);
  ref::CpuIdentity adl{"GenuineIntel", 6, 151};
  EXPECT_EQ(fp32(uarch_of(adl), "avx2"), 32);
  EXPECT_FALSE(uarch_of(ref::CpuIdentity{"GenuineIntel", 6, 250}).known());  // a model no rule names
  EXPECT_FALSE(uarch_of(ref::CpuIdentity{"HygonGenuine", 24, 1}).known());
}

// libcpuinfo's name decides only where no rule names the CPU by its numbers: Debian 12's library calls every
// family-25 core "zen3", a Zen 4 among them, so the tested table comes first.
TEST(Roofline, LibcpuinfoNamesOnlyWhatTheTableDoesNot) {
  auto zen4 = machine("zen4");
  zen4.library_uarch = "zen3";  // the library's mistake
  EXPECT_EQ(uarch_of(zen4).name, "Zen 4");
  EXPECT_EQ(uarch_of(zen4).identified_by, "table");
  ref::CpuIdentity later{"AuthenticAMD", 25, 0xf0};  // a family-25 model the table has not met
  EXPECT_FALSE(uarch_of(later).known());
  later.library_uarch = "zen3";
  EXPECT_EQ(uarch_of(later).name, "Zen 3");
  EXPECT_EQ(uarch_of(later).identified_by, "libcpuinfo");
  later.vendor = "HygonGenuine";  // the name, not the vendor: no rule
  EXPECT_FALSE(uarch_of(later).known());
  ref::CpuIdentity skx{"GenuineIntel", 6, 250};
  skx.library_uarch = "sky_lake";  // client or server, one or two units: the name alone does not say
  EXPECT_FALSE(uarch_of(skx).known());
  ref::CpuIdentity arm;
  arm.vendor = "ARM";
  arm.implementer = "0x41";
  arm.part = "0xfff";
  arm.library_uarch = "neoverse_v1";
  EXPECT_EQ(uarch_of(arm).name, "Neoverse V1");
  EXPECT_EQ(fp32(uarch_of(arm), "neon"), 32);
}

TEST(Roofline, AMalformedTableIsAnErrorNamingTheField) {
  const auto bad = std::filesystem::temp_directory_path() / "claimcheck-bad-uarch.json";
  const ref::CpuIdentity zen3{"AuthenticAMD", 25, 1};
  const std::pair<const char*, const char*> cases[] = {
      {R"({"rules": [{"name": "x", "vendor": "AuthenticAMD", "fp32_flop_per_cycle": {"avx2": [0]}}]})",
       "rules[0].fp32_flop_per_cycle.avx2[0]"},
      {R"({"rules": [{"name": "x", "vendor": "Other", "models": ["0x1g"], "fp32_flop_per_cycle": {"avx2": [32]}}]})",
       "rules[0].models"},
      {R"({"rules": [{"name": "x", "vendro": "AuthenticAMD", "fp32_flop_per_cycle": {"avx2": [32]}}]})",
       "rules[0].vendro"},
      {R"({"rules": [{"name": "x", "vendor": "AuthenticAMD", "fp32_flop_per_cycle": {"avx2": [32]}, "model_name": "("}]})",
       "rules[0].model_name"},
      {R"({"rules": [{"vendor": "AuthenticAMD", "fp32_flop_per_cycle": {"avx2": [32]}}]})", "rules[0].name"},
  };
  for (const auto& [text, field] : cases) {
    std::ofstream(bad) << text;
    try {
      ref::identify_microarch(zen3, bad);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(bad);
}

TEST(Roofline, KneeIsWhereTheMemoryFloorMeetsTheComputeRoof) {
  // a machine with a 10 ms floor and 1 ms per token of compute: max(10, B) ms per step -> knee at B = 10
  const std::vector<int> b = {1, 2, 4, 8, 16, 32, 64};
  std::vector<double> t;
  for (int x : b) t.push_back(std::max(10.0, 1.0 * x) * 1e-3);
  EXPECT_DOUBLE_EQ(ref::sweep_knee(b, t).batch, 10.0);
  EXPECT_THROW(ref::sweep_knee({1}, {1.0}), std::invalid_argument);
}

// The answer key's bf16 rounding (the optimizer check's side): nearest by value, ties to the even pattern.
TEST(Bf16, NearestByValueTiesToEven) {
  EXPECT_EQ(claimcheck::ref::bf16_nearest(1.0f), 0x3F80);
  EXPECT_EQ(claimcheck::ref::bf16_nearest(-1.5f), 0xBFC0);
  EXPECT_EQ(claimcheck::ref::bf16_nearest(1.00390625f), 0x3F80);  // 1 + 2^-8: halfway, 0x3F80 is even
  EXPECT_EQ(claimcheck::ref::bf16_nearest(1.01171875f), 0x3F82);  // 1 + 3 * 2^-8: halfway, 0x3F82 is even
  EXPECT_EQ(claimcheck::ref::bf16_nearest(1.00390637f), 0x3F81);  // just above halfway
  EXPECT_EQ(claimcheck::ref::bf16_nearest(-1.00390637f), 0xBF81);
  EXPECT_THROW(claimcheck::ref::bf16_nearest(INFINITY), std::invalid_argument);
}

// The answer key's last-level cache: the highest level sysfs lists (an instruction cache left out), 0 with none.
TEST(Roofline, LastLevelCacheIsTheHighestLevelListed) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "claimcheck_llc_test";
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ref::last_level_cache_bytes_sysfs(dir), 0u);  // no such folder
  auto index = [&](int i, int level, const char* size, const char* type) {
    const auto d = dir / ("index" + std::to_string(i));
    std::filesystem::create_directories(d);
    std::ofstream(d / "level") << level << "\n";
    std::ofstream(d / "size") << size << "\n";
    std::ofstream(d / "type") << type << "\n";
  };
  index(0, 1, "32K", "Data");
  index(1, 1, "32K", "Instruction");
  index(2, 2, "1024K", "Unified");
  EXPECT_EQ(ref::last_level_cache_bytes_sysfs(dir), 1048576u);
  index(3, 3, "32768K", "Unified");
  EXPECT_EQ(ref::last_level_cache_bytes_sysfs(dir), 33554432u);
  index(4, 4, "2M", "Instruction");  // an instruction cache, however high, is not where the read lands
  EXPECT_EQ(ref::last_level_cache_bytes_sysfs(dir), 33554432u);
  std::filesystem::remove_all(dir);
}
