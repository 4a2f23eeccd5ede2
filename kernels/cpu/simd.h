// The CPU kernels' ISA macros, one definition for every file under kernels/cpu (private: not in kernels/include).
// Everything is compiled for the baseline ISA; wider code is compiled per function (a target attribute) and the CPU
// picks at run time, so no file needs ISA compile flags.
//   CC_X86, CC_NEON   1 where the x86-64 intrinsics (<immintrin.h>) or AArch64's NEON (<arm_neon.h>) are available,
//                     those headers included; 0 elsewhere
//   CC_CLONES         GCC's target_clones for x86-64-v4 / v3 / the baseline, the CPU picking one at load time
//                     (nothing under clang or off x86-64)
//   CC_INLINE         forced inlining
//   CC_AVX2, CC_AVX512           the attention kernels' ISAs: AVX2 + FMA, and AVX-512 F/BW/VL/DQ on top
//   CC_AVX2_F16C, CC_AVX512_F16C the decode (GEMV) kernels': the same with F16C, which their dispatch checks too
//   CC_AVX512_BF16    the NF4 GEMV's dot-product kernel: CC_AVX512_F16C with avx512_bf16 (vdpbf16ps)
//   CC_PROBE(isa)     the roofline probe's chains (roofline/): a target list of their own, never inlined into a caller
//                     compiled for the baseline
#pragma once

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define CC_X86 1
#else
#define CC_X86 0
#endif

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#define CC_NEON 1
#else
#define CC_NEON 0
#endif

#if CC_X86 && !defined(__clang__)
#define CC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CC_CLONES
#endif
#define CC_INLINE inline __attribute__((always_inline))

#define CC_AVX2 __attribute__((target("avx2,fma")))
#define CC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma")))
#define CC_AVX2_F16C __attribute__((target("avx2,fma,f16c")))
#define CC_AVX512_F16C __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define CC_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")))
#define CC_PROBE(isa) __attribute__((target(isa), noinline))
