// Shared by the checks that hold the kernels' dispatch to the machine (ch02.attention_fp32, ch06.decode_4bit,
// ch06.prefill_ms): the path each kernel family should run here, from the harness's hardware record (the flags Linux
// reports in /proc/cpuinfo) and, for AMX, the check's own request for the tile state, never from the kernels' own
// CPUID reading (kernels/cpu/isa.cpp). A kernel dispatched to a narrower path computes the right values more slowly:
// only the benchmark table would show it, and no claim.
#pragma once
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#if defined(__x86_64__) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "claimcheck/probe.h"

namespace claimcheck::checks {

// How wide a path is, across the families' names (-1: a name none of them uses). A path at least as wide as the one
// the record implies is right: a CPU whose CPUID shows more than /proc/cpuinfo lists (an older kernel, clearcpuid=,
// an emulator's CPUID) may rightly run a wider one; a narrower one is the dispatch slip these checks look for.
inline int path_width(const std::string& path) {
  static const std::map<std::string, int> w = {
      {"portable", 0},        {"neon", 1},   {"fp32_fma", 1},    {"avx2", 1},
      {"avx512_emulated", 1}, {"avx512", 2}, {"avx512_bf16", 3}, {"amx_bf16", 4}};
  const auto it = w.find(path);
  return it == w.end() ? -1 : it->second;
}
inline bool at_least_as_wide(const std::string& ran, const std::string& expected) {
  return path_width(ran) >= 0 && path_width(ran) >= path_width(expected);
}

// Linux grants this process the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, Linux 5.16 and later):
// asked here, apart from the kernels' own request.
inline bool amx_granted_here() {
#if defined(__x86_64__) && defined(__linux__)
  return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XFEATURE_XTILEDATA */) == 0;
#else
  return false;
#endif
}

// AVX-512 as the kernels take it (F, BW, VL and DQ, on top of AVX2 and FMA): every AVX-512 CPU but the Xeon Phi.
inline bool record_has_avx512(const HardwareInfo& hw) {
  return hw.has_isa("avx2") && hw.has_isa("fma") && hw.has_isa("avx512f") && hw.has_isa("avx512bw") &&
         hw.has_isa("avx512vl") && hw.has_isa("avx512dq");
}

// The widest fp32 vector path of an x86 CPU by its record: "avx512", "avx2" (with FMA) or "portable" (the FMA
// probe's paths, and attention v3's register tiles).
inline std::string record_widest_x86(const HardwareInfo& hw) {
  return record_has_avx512(hw) ? "avx512" : hw.has_isa("avx2") && hw.has_isa("fma") ? "avx2" : "portable";
}

// Attention v3's register tiles: the AVX-512 one, else the AVX2 one, else v2's portable code (AArch64 included).
inline std::string expected_attention_v3_path(const HardwareInfo& hw) {
#if defined(__x86_64__)
  return record_widest_x86(hw);
#else
  (void)hw;
  return "portable";
#endif
}

// The GEMV kernels' paths this machine runs, best first (the first is the one timed): vdpbf16ps where the CPU has
// it, AVX-512, AVX2 (and the AVX-512 tiles emulated on AVX2 registers, tested wherever AVX2 is), NEON on AArch64,
// and the portable code everywhere. (The SIMD paths convert bf16 with F16C's neighbours, so they ask for it too.)
inline std::vector<std::string> expected_gemv_paths(const HardwareInfo& hw) {
  std::vector<std::string> p;
#if defined(__x86_64__)
  const bool avx2 = hw.has_isa("avx2") && hw.has_isa("fma") && hw.has_isa("f16c");
  if (avx2 && record_has_avx512(hw) && hw.has_isa("avx512_bf16")) p.emplace_back("avx512_bf16");
  if (avx2 && record_has_avx512(hw)) p.emplace_back("avx512");
  if (avx2) p.insert(p.end(), {"avx2", "avx512_emulated"});
#elif defined(__aarch64__)
  (void)hw;
  p.emplace_back("neon");
#else
  (void)hw;
#endif
  p.emplace_back("portable");
  return p;
}

// The row kernels a GEMV of each format should run here (the widest of gemv_paths' first, by format): the bf16
// GEMV converts to fp32 and runs FMAs (no dot-product kernel: it is bound by its reads), so its widest is the widest
// fp32 path; NF4 runs the widest path itself, but on AArch64, where its kernel is the portable one.
inline std::string expected_gemv_rows(const HardwareInfo& hw, const std::string& format) {
  const std::string widest = expected_gemv_paths(hw).front();
  if (format == "nf4") return widest == "neon" ? "portable" : widest;
  return widest == "avx512_bf16" ? "avx512" : widest;
}

// The bf16 matmul's engine: the AMX tiles where the record has them and Linux grants this process their state, else
// vdpbf16ps where the record has it, else fp32 FMAs.
inline std::string expected_matmul_engine(const HardwareInfo& hw) {
#if defined(__x86_64__)
  if (hw.has_isa("amx_tile") && hw.has_isa("amx_bf16") && amx_granted_here()) return "amx_bf16";
  if (record_has_avx512(hw) && hw.has_isa("avx512_bf16")) return "avx512_bf16";
#else
  (void)hw;
#endif
  return "fp32_fma";
}

// The names in `want` that `have` lacks, joined by ", " ("" where none).
inline std::string missing_names(const std::vector<std::string>& want, const std::vector<std::string>& have) {
  std::string out;
  for (const auto& w : want)
    if (std::find(have.begin(), have.end(), w) == have.end()) out += (out.empty() ? "" : ", ") + w;
  return out;
}

}  // namespace claimcheck::checks
