// What this CPU's vector units can run, for every CPU kernel family (the GEMV and GEMM kernels, attention, the bf16
// matmul, the roofline probes): one detection, read once, so that each family dispatches on the same answer
// (private to kernels/cpu). Each family keeps its own paths and the forcing its tests use (gemv.h, attention.h).
#pragma once

namespace claimcheck::kernels::isa {

struct Cpu {
  bool avx2_fma = false;     // AVX2 and FMA (x86-64)
  bool f16c = false;         // F16C (every AVX2 core has it; the GEMV kernels check it)
  bool avx512 = false;       // AVX-512 F, BW, VL and DQ
  bool avx512_bf16 = false;  // vdpbf16ps, with avx512
  bool neon = false;         // AArch64's Advanced SIMD (every AArch64 core)
};
// This CPU's, from CPUID (GCC's __builtin_cpu_supports) on x86-64; neon on AArch64; nothing elsewhere.
const Cpu& cpu();

}  // namespace claimcheck::kernels::isa
