// A bf16 x bf16 -> fp32 matmul, C = A W^T (A [M, K], W [N, K]: PyTorch's Linear layout), on the AMX tile unit where
// the CPU has it, else on the bf16 dot-product instruction (vdpbf16ps, avx512_bf16) where it has that, else on the
// fp32 FMA units (A widened to fp32, the batched GEMM of gemv/gemm.cpp). The dot-product engine runs on the AMX
// path's packed tiles and blocking (below).
//
// AMX (Sapphire Rapids and later): eight tile registers of up to 16 rows x 64 bytes. tdpbf16ps C += A B takes A as
// 16 rows x 32 bf16 (K contiguous) and B as 16 K-pairs x 16 columns x 2 bf16 (the "VNNI" layout: element (kp, n, j)
// = B[2 kp + j][n]), 16 x 16 x 32 multiply-adds into fp32. The register block is 2 x 2: four C tiles (tmm0-3), two A
// tiles (tmm4-5), two B tiles (tmm6-7), so every tile loaded feeds two products.
//
// Both operands are packed once per call into whole tiles, zero-padded to 32 rows / 32 K (1 KiB each, contiguous, so
// a tile load reads one sequential KiB): A's tile (mb, kb) holds rows 16 mb.., K 32 kb..; W's tile (nb, kb) is the
// VNNI transpose of W's rows 16 nb.., K 32 kb... (a 16 x 16 transpose of K-pair words). The packed buffer is kept by
// the calling thread between calls. Cache blocking: a thread owns a C block of kMc x kNc (64 x 64) and walks K in
// slices of kKc (4096): per slice its A and W panels (64 x 4096 bf16, 512 KiB each) are read from L2, and each
// 32 x 32 of C stays in the four C tiles for the whole slice (loaded and stored once per slice: the fp32
// accumulators live in C itself between slices). The tile loads, not the caches, bound this schedule: its 2 x 2
// block leaves no tile to load the next step's operands into while the current ones multiply. Blocks on the matrix's
// edges go through a 32 x 32 scratch.
//
// The tile instructions are inline assembly (binutils >= 2.34 knows them), so nothing here needs AMX's compiler
// flags. A test can force "amx_emulated": the same packing, blocking and 2 x 2 tile schedule, each tile instruction
// done in C on a per-thread copy of the eight tiles, so that every index of this kernel runs on any CPU; only the
// instructions' own semantics need an AMX machine (claimcheck_gemv_tests runs the real path there).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "claimcheck/kernels/gemv.h"
#include "isa.h"
#include "thread_pool.h"
#if defined(__x86_64__) && defined(__linux__)
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#define CC_AMX_X86 1
#else
#define CC_AMX_X86 0
#endif

namespace claimcheck::kernels {
namespace {

// Fewer, longer K slices store and reload C less often; the figures that chose them are in docs/checks.md.
constexpr int kMc = 64, kNc = 64, kKc = 4096;  // multiples of 32

struct alignas(64) TileConfig {
  std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
  std::uint16_t colsb[16] = {};
  std::uint8_t rows[16] = {};
};

// ---- the two tile units: AMX itself, and the same operations in C ----------------------------------------------
#if CC_AMX_X86
#define CC_TLOAD(t, p, s) asm volatile("tileloadd (%0,%1,1), %%tmm" #t ::"r"(p), "r"(static_cast<long>(s)) : "memory")
#define CC_TSTORE(t, p, s) \
  asm volatile("tilestored %%tmm" #t ", (%0,%1,1)" ::"r"(p), "r"(static_cast<long>(s)) : "memory")
#define CC_TDP(c, a, b) asm volatile("tdpbf16ps %%tmm" #b ", %%tmm" #a ", %%tmm" #c ::: "memory")
struct RealTiles {
  static void configure(const TileConfig* c) { asm volatile("ldtilecfg (%0)" ::"r"(c) : "memory"); }
  static void release() { asm volatile("tilerelease" ::: "memory"); }
  static void zero_c() {
    asm volatile("tilezero %%tmm0\n\ttilezero %%tmm1\n\ttilezero %%tmm2\n\ttilezero %%tmm3" ::: "memory");
  }
  // C tile i (0..3: row block i / 2, column block i % 2) from / to fp32 rows of stride ld bytes.
  static void load_c(int i, const float* p, long ld) {
    switch (i) {
      case 0:
        CC_TLOAD(0, p, ld);
        break;
      case 1:
        CC_TLOAD(1, p, ld);
        break;
      case 2:
        CC_TLOAD(2, p, ld);
        break;
      default:
        CC_TLOAD(3, p, ld);
        break;
    }
  }
  static void store_c(int i, float* p, long ld) {
    switch (i) {
      case 0:
        CC_TSTORE(0, p, ld);
        break;
      case 1:
        CC_TSTORE(1, p, ld);
        break;
      case 2:
        CC_TSTORE(2, p, ld);
        break;
      default:
        CC_TSTORE(3, p, ld);
        break;
    }
  }
  // One K step of the 2 x 2 block: A tiles a0, a1 and B tiles b0, b1 (packed, 64-byte rows), four products.
  static void step(const std::uint16_t* a0, const std::uint16_t* a1, const std::uint16_t* b0, const std::uint16_t* b1) {
    CC_TLOAD(4, a0, 64);
    CC_TLOAD(6, b0, 64);
    CC_TDP(0, 4, 6);
    CC_TLOAD(7, b1, 64);
    CC_TDP(1, 4, 7);
    CC_TLOAD(5, a1, 64);
    CC_TDP(2, 5, 6);
    CC_TDP(3, 5, 7);
  }
};
#undef CC_TLOAD
#undef CC_TSTORE
#undef CC_TDP
#endif

// The emulation: tdpbf16ps as the ISA defines it for one element, C[m][n] += sum over the 16 K-pairs of
// fp32(A[m][2p]) * fp32(B[p][n][0]) + fp32(A[m][2p+1]) * fp32(B[p][n][1]), in fp32.
struct EmulatedTiles {
  struct State {
    float c[4][16][16];
  };
  static State& s() {
    static thread_local State st;
    return st;
  }
  static float f(std::uint16_t b) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float x;
    std::memcpy(&x, &u, sizeof x);
    return x;
  }
  static void configure(const TileConfig*) {}
  static void release() {}
  static void zero_c() { std::memset(s().c, 0, sizeof s().c); }
  static void load_c(int i, const float* p, long ld) {
    for (int r = 0; r < 16; ++r) std::memcpy(s().c[i][r], reinterpret_cast<const char*>(p) + r * ld, 64);
  }
  static void store_c(int i, float* p, long ld) {
    for (int r = 0; r < 16; ++r) std::memcpy(reinterpret_cast<char*>(p) + r * ld, s().c[i][r], 64);
  }
  static void dp(float (&c)[16][16], const std::uint16_t* a, const std::uint16_t* b) {
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n) {
        float acc = c[m][n];
        for (int p = 0; p < 16; ++p)
          acc += f(a[m * 32 + 2 * p]) * f(b[p * 32 + 2 * n]) + f(a[m * 32 + 2 * p + 1]) * f(b[p * 32 + 2 * n + 1]);
        c[m][n] = acc;
      }
  }
  static void step(const std::uint16_t* a0, const std::uint16_t* a1, const std::uint16_t* b0, const std::uint16_t* b1) {
    dp(s().c[0], a0, b0);
    dp(s().c[1], a0, b1);
    dp(s().c[2], a1, b0);
    dp(s().c[3], a1, b1);
  }
};

// ---- packing --------------------------------------------------------------------------------------------------
struct Packed {
  int Mt = 0, Nt = 0, Kt = 0;  // tiles along M, N (even: padded to 32) and K
  std::uint16_t* a = nullptr;  // Mt x Kt tiles, then
  std::uint16_t* w = nullptr;  // Nt x Kt tiles (both in one buffer kept by the calling thread, below)
  const std::uint16_t* a_tile(int mb, int kb) const { return a + (static_cast<std::size_t>(mb) * Kt + kb) * 512; }
  const std::uint16_t* w_tile(int nb, int kb) const { return w + (static_cast<std::size_t>(nb) * Kt + kb) * 512; }
};

// The packed operands of the last call, kept by the calling thread: a call of the same size or smaller neither
// allocates nor faults in pages (64 MiB at 4096^3), and nothing is zeroed that a tile then overwrites.
std::uint16_t* packing_buffer(std::size_t elements) {
  thread_local std::unique_ptr<std::uint16_t[]> buf;
  thread_local std::size_t capacity = 0;
  if (elements > capacity) {
    buf.reset();
    buf.reset(new std::uint16_t[elements]);
    capacity = elements;
  }
  return buf.get();
}

// W's tile (nb, kb) when all 16 rows and 32 K are inside W: K-pairs are 32-bit words, and the VNNI layout is the
// 16 x 16 transpose of those words (word p of row n goes to row p, column n).
void pack_w_whole(std::uint16_t* t, const bf16_t* W, int K, int nb, int kb) {
  std::uint32_t rows[16][16];
  for (int n = 0; n < 16; ++n) std::memcpy(rows[n], W + static_cast<std::size_t>(nb * 16 + n) * K + kb * 32, 64);
  std::uint32_t out[16][16];
  for (int p = 0; p < 16; ++p)
    for (int n = 0; n < 16; ++n) out[p][n] = rows[n][p];
  std::memcpy(t, out, sizeof out);
}

Packed pack(const bf16_t* A, int M, int K, const bf16_t* W, int N, int threads) {
  Packed p;
  p.Mt = (M + 31) / 32 * 2;
  p.Nt = (N + 31) / 32 * 2;
  p.Kt = (K + 31) / 32;
  const std::size_t a_elems = static_cast<std::size_t>(p.Mt) * p.Kt * 512;
  p.a = packing_buffer(a_elems + static_cast<std::size_t>(p.Nt) * p.Kt * 512);
  p.w = p.a + a_elems;
  parallel_items(p.Mt + p.Nt, threads, [&](int item) {
    if (item < p.Mt) {  // A: row block mb, each tile 16 rows x 32 K as they are
      const int mb = item;
      for (int kb = 0; kb < p.Kt; ++kb) {
        std::uint16_t* t = p.a + (static_cast<std::size_t>(mb) * p.Kt + kb) * 512;
        const int k0 = kb * 32, kn = std::min(32, K - k0), rows = std::clamp(M - mb * 16, 0, 16);
        if (rows < 16 || kn < 32) std::memset(t, 0, 512 * sizeof(std::uint16_t));  // the edge: zero padding
        for (int r = 0; r < rows; ++r)
          std::memcpy(t + r * 32, A + static_cast<std::size_t>(mb * 16 + r) * K + k0, kn * sizeof(bf16_t));
      }
    } else {  // W: column block nb; tile row p holds, for each of the 16 columns n, W[n][2p] and W[n][2p + 1]
      const int nb = item - p.Mt;
      for (int kb = 0; kb < p.Kt; ++kb) {
        std::uint16_t* t = p.w + (static_cast<std::size_t>(nb) * p.Kt + kb) * 512;
        const int kn = std::min(32, K - kb * 32), cols = std::clamp(N - nb * 16, 0, 16);
        if (cols == 16 && kn == 32) {
          pack_w_whole(t, W, K, nb, kb);
          continue;
        }
        std::memset(t, 0, 512 * sizeof(std::uint16_t));  // the edge: zero padding
        for (int n = 0; n < cols; ++n) {
          const bf16_t* row = W + static_cast<std::size_t>(nb * 16 + n) * K + kb * 32;
          for (int k = 0; k < kn; ++k) t[(k / 2) * 32 + 2 * n + (k % 2)] = row[k];
        }
      }
    }
  });
  return p;
}

// ---- the blocked kernel -----------------------------------------------------------------------------------------
// The 32 x 32 block of C at (m0, n0) that an engine accumulates into: C itself where the block is whole, else a
// scratch of rows of 32 floats (zero, or what C holds there unless `first`), written back by finish().
struct CBlock {
  alignas(64) float scratch[32 * 32];
  float* C;
  float* c;        // the block's first element
  std::size_t ld;  // its row stride, in floats
  int M, N, m0, n0;
  bool whole;
  CBlock(float* C_, int M_, int N_, int m0_, int n0_, bool first)
      : C(C_),
        c(C_ + static_cast<std::size_t>(m0_) * N_ + n0_),
        ld(static_cast<std::size_t>(N_)),
        M(M_),
        N(N_),
        m0(m0_),
        n0(n0_),
        whole(m0_ + 32 <= M_ && n0_ + 32 <= N_) {
    if (whole) return;
    std::memset(scratch, 0, sizeof scratch);
    if (!first)
      for (int r = 0; r < 32 && m0 + r < M; ++r)
        std::memcpy(scratch + r * 32, c + static_cast<std::size_t>(r) * N, std::min(32, N - n0) * sizeof(float));
    c = scratch;
    ld = 32;
  }
  void finish() const {
    if (whole) return;
    for (int r = 0; r < 32 && m0 + r < M; ++r)
      std::memcpy(C + static_cast<std::size_t>(m0 + r) * N + n0, scratch + r * 32,
                  std::min(32, N - n0) * sizeof(float));
  }
};

// C block (rows m0.., columns n0..; 32 x 32) over the K tiles [kb0, kb1): accumulated onto C unless `first`.
template <typename T>
void block32(const Packed& p, int m0, int n0, int kb0, int kb1, bool first, float* C, int M, int N, bool drop_last_k) {
  CBlock b(C, M, N, m0, n0, first);
  const long ld = static_cast<long>(b.ld * sizeof(float));  // the tile loads' stride, in bytes
  if (first && b.whole) {
    T::zero_c();
  } else {
    for (int i = 0; i < 4; ++i) T::load_c(i, b.c + (i / 2) * 16 * b.ld + (i % 2) * 16, ld);
  }
  const int mb = m0 / 16, nb = n0 / 16;
  if (drop_last_k && kb1 == p.Kt) --kb1;  // the planted fault: the last 32 of K never multiplied
  for (int kb = kb0; kb < kb1; ++kb)
    T::step(p.a_tile(mb, kb), p.a_tile(mb + 1, kb), p.w_tile(nb, kb), p.w_tile(nb + 1, kb));
  for (int i = 0; i < 4; ++i) T::store_c(i, b.c + (i / 2) * 16 * b.ld + (i % 2) * 16, ld);
  b.finish();
}

// The cache blocking both engines share: each thread owns kMc x kNc blocks of C and walks K in slices of kKc,
// calling block(m0, n0, kb0, kb1, first) for each 32 x 32 of its block; begin() / end() run on each thread around
// its blocks (the tile configuration).
template <typename Begin, typename Block, typename End>
void walk_blocks(const Packed& p, int M, int N, int threads, Begin begin, Block block, End end, bool accumulate_first) {
  const int mblocks = (M + kMc - 1) / kMc, nblocks = (N + kNc - 1) / kNc, ks = kKc / 32;
  parallel_items(mblocks * nblocks, threads, [&](int item) {
    begin();
    const int mc0 = (item / nblocks) * kMc, nc0 = (item % nblocks) * kNc;
    const int mc1 = std::min(M, mc0 + kMc), nc1 = std::min(N, nc0 + kNc);
    for (int kb0 = 0; kb0 < p.Kt; kb0 += ks)
      for (int m0 = mc0; m0 < mc1; m0 += 32)
        for (int n0 = nc0; n0 < nc1; n0 += 32)  // (a planted fault adds the first slice onto what C held)
          block(m0, n0, kb0, std::min(p.Kt, kb0 + ks), kb0 == 0 && !accumulate_first);
    end();
  });
}

template <typename T>
void tiled(const Packed& p, int M, int N, float* C, int threads, bool drop_last_k, bool accumulate_first) {
  walk_blocks(
      p, M, N, threads,
      [] {
        TileConfig cfg;
        for (int t = 0; t < 8; ++t) cfg.colsb[t] = 64, cfg.rows[t] = 16;
        T::configure(&cfg);
      },
      [&](int m0, int n0, int kb0, int kb1, bool first) {
        block32<T>(p, m0, n0, kb0, kb1, first, C, M, N, drop_last_k);
      },
      [] { T::release(); }, accumulate_first);
}

// ---- the bf16 dot-product engine: vdpbf16ps (avx512_bf16) on the same packed tiles ------------------------------
// Row p of a W tile is one zmm: the K-pair p of 16 columns. A's K-pair p of row r is one 32-bit word, broadcast:
// vdpbf16ps C[r][16 columns] += A[r][2p] W[.][2p] + A[r][2p+1] W[.][2p+1], in fp32. Register block: 8 rows x the 32
// columns of the block's two W tiles, 16 accumulators; per K-pair 2 W loads and 8 broadcasts feed 16 vdpbf16ps.
#if CC_AMX_X86
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void block32_dot(const Packed& p, int m0, int n0,
                                                                                 int kb0, int kb1, bool first, float* C,
                                                                                 int M, int N, bool drop_last_k) {
  CBlock b(C, M, N, m0, n0, first);
  float* const c = b.c;
  const std::size_t ld = b.ld;
  const bool whole = b.whole;
  const int nb = n0 / 16;
  if (drop_last_k && kb1 == p.Kt) --kb1;  // the planted fault: the last 32 of K never multiplied
  for (int g = 0; g < 4; ++g) {           // the four 8-row groups of the 32 rows
    const int mb = m0 / 16 + g / 2, r0 = (g % 2) * 8;
    float* cg = c + static_cast<std::size_t>(g) * 8 * ld;
    __m512 acc[8][2];
    for (int r = 0; r < 8; ++r)
      for (int j = 0; j < 2; ++j)
        acc[r][j] = first && whole ? _mm512_setzero_ps() : _mm512_loadu_ps(cg + r * ld + j * 16);
    for (int kb = kb0; kb < kb1; ++kb) {
      const std::uint16_t* a = p.a_tile(mb, kb) + r0 * 32;
      const std::uint16_t *w0 = p.w_tile(nb, kb), *w1 = p.w_tile(nb + 1, kb);
      for (int q = 0; q < 16; ++q) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(w0 + q * 32);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(w1 + q * 32);
#pragma GCC unroll 8
        for (int r = 0; r < 8; ++r) {
          std::int32_t pair;
          std::memcpy(&pair, a + r * 32 + 2 * q, sizeof pair);
          const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
          acc[r][0] = _mm512_dpbf16_ps(acc[r][0], av, b0);
          acc[r][1] = _mm512_dpbf16_ps(acc[r][1], av, b1);
        }
      }
    }
    for (int r = 0; r < 8; ++r)
      for (int j = 0; j < 2; ++j) _mm512_storeu_ps(cg + r * ld + j * 16, acc[r][j]);
  }
  b.finish();
}

void dotted(const Packed& p, int M, int N, float* C, int threads, bool drop_last_k, bool accumulate_first) {
  walk_blocks(
      p, M, N, threads, [] {},
      [&](int m0, int n0, int kb0, int kb1, bool first) {
        block32_dot(p, m0, n0, kb0, kb1, first, C, M, N, drop_last_k);
      },
      [] {}, accumulate_first);
}
#endif

// ---- the engine this process has ---------------------------------------------------------------------------------
enum Engine { kFma = 0, kAmx = 1, kAmxEmulated = 2, kDot = 3 };

// AMX where CPUID says amx_bf16 and amx_tile (leaf 7, EDX bits 22 and 24) and Linux grants this process the tile
// data state (arch_prctl ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18; without it the first tile instruction is
// SIGILL). The permission holds for every thread of the process.
bool detect_amx() {
#if CC_AMX_X86
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!(d & (1u << 22)) || !(d & (1u << 24))) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}
// Asked once, on first use (a process that never multiplies never asks Linux for the larger signal frames).
bool has_amx() {
  static const bool yes = detect_amx();
  return yes;
}
// vdpbf16ps where CPUID says avx512_bf16 (leaf 7 subleaf 1, EAX bit 5), with AVX-512 (isa.h).
bool has_dot() { return CC_AMX_X86 && isa::cpu().avx512_bf16; }
std::atomic<int> g_forced{-1};
// The fastest engine this CPU has: the AMX tiles, else the bf16 dot products, else fp32 FMAs.
// (A planted fault, matmul_fma_first, passes the bf16 engines by.)
Engine engine(const GemvFaults& faults = {}) {
  const int f = g_forced.load();
  if (f >= 0) return static_cast<Engine>(f);
  return faults.matmul_fma_first ? kFma : has_amx() ? kAmx : has_dot() ? kDot : kFma;
}

}  // namespace

std::string matmul_bf16_engine(const GemvFaults& faults) {
  switch (engine(faults)) {
    case kAmx:
      return "amx_bf16";
    case kAmxEmulated:
      return "amx_emulated";
    case kDot:
      return "avx512_bf16";
    default:
      return "fp32_fma";
  }
}

bool matmul_bf16_force(const std::string& name) {
  if (name.empty())
    g_forced = -1;
  else if (name == "fp32_fma")
    g_forced = kFma;
  else if (name == "amx_emulated")
    g_forced = kAmxEmulated;
  else if (name == "amx_bf16" && has_amx())
    g_forced = kAmx;
  else if (name == "avx512_bf16" && has_dot())
    g_forced = kDot;
  else
    return false;
  return true;
}

std::vector<std::string> matmul_bf16_engines_here() {
  std::vector<std::string> out = {"fp32_fma", "amx_emulated"};
  if (has_dot()) out.emplace_back("avx512_bf16");
  if (has_amx()) out.emplace_back("amx_bf16");
  return out;
}

void matmul_bf16(const bf16_t* A, int M, int K, const bf16_t* W, int N, float* C, const GemvOptions& o) {
  if (M < 0 || N < 0 || K < 0) throw std::invalid_argument("matmul_bf16: negative dimension");
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::fill(C, C + static_cast<std::size_t>(M) * N, 0.0f);
    return;
  }
  const Engine e = engine(o.faults);
  if (e == kFma) {  // A widened to fp32 (exact), the batched GEMM of gemv/gemm.cpp
    std::vector<float> Af(static_cast<std::size_t>(M) * K);
    for (std::size_t i = 0; i < Af.size(); ++i) Af[i] = from_bf16(A[i]);
    gemm_bf16(W, N, K, Af.data(), M, C, o);
    return;
  }
  const Packed p = pack(A, M, K, W, N, o.threads);
  const bool drop = o.faults.matmul_drop_last_k, add = o.faults.matmul_accumulates;
#if CC_AMX_X86
  if (e == kAmx) {
    tiled<RealTiles>(p, M, N, C, o.threads, drop, add);
    return;
  }
  if (e == kDot) {  // (a planted fault runs it on one thread, whatever the caller asked: right, and slower)
    dotted(p, M, N, C, o.faults.matmul_one_thread ? 1 : o.threads, drop, add);
    return;
  }
#endif
  tiled<EmulatedTiles>(p, M, N, C, o.threads, drop, add);
}

}  // namespace claimcheck::kernels
