// This CPU's vector ISAs (isa.h), read once.
#include "isa.h"

#include "simd.h"

namespace claimcheck::kernels::isa {

namespace {
Cpu detect() {
  Cpu c;
#if CC_X86
  __builtin_cpu_init();
  c.avx2_fma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#if defined(__clang__) && __clang_major__ < 18  // clang asks for "f16c" from 18 on; every AVX2 CPU has F16C
  c.f16c = c.avx2_fma;
#else
  c.f16c = __builtin_cpu_supports("f16c");
#endif
  c.avx512 = c.avx2_fma && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  c.avx512_bf16 = c.avx512 && __builtin_cpu_supports("avx512bf16");
#endif
  c.neon = CC_NEON;
  return c;
}
}  // namespace

const Cpu& cpu() {
  static const Cpu c = detect();
  return c;
}

}  // namespace claimcheck::kernels::isa
