// Causal attention on the CPU, the kernels under test (chapter 2).
//
// Numbered versions behind one entry point (llm.c style); every version is validated
// against the fp64 reference before anything is timed. The library's own attention
// (LibTorch) is "version 0" and lives in reference/ (it needs <torch/torch.h>).
//
// Layout: q, k, v, out are [B, H, T, D], contiguous. out = softmax(q k^T / sqrt(D) + causal mask) v.
#pragma once
#include <string>

namespace claimcheck::kernels {

struct AttentionShape {
  int B = 1, H = 1, T = 1, D = 64;
  long elements() const { return static_cast<long>(B) * H * T * D; }
};

// Faults a test can plant to prove a check fails (never set in normal runs).
struct AttentionFaults {
  bool no_max_subtraction = false;  // exp(s) instead of exp(s - max): overflows on large logits
  bool scale_by_d = false;          // 1/D instead of 1/sqrt(D)
  bool mask_off_by_one = false;     // lets query i see key i + 1
  bool v3_narrow_first = false;     // v3 dispatched to the AVX2 tile where the AVX-512 one runs
  bool v3_tile_emulated = false;    // v3 reports the AVX-512 tile and runs its emulation on AVX2 registers
  bool tile_local_max = false;      // v2's online softmax takes each key tile's max, not the running one
};

struct AttentionOptions {
  int threads = 1;
  AttentionFaults faults;
};

// v3 register-blocked: v2's recurrence with AVX2+FMA register-blocked micro-kernels for q k^T and p v
// (fp32; the fp64 overload runs v2's code, fp64 exists for validation only).
enum : int { kAttentionPlain = 1, kAttentionTiled = 2, kAttentionRegister = 3 };
inline constexpr int kAttentionVersions[] = {kAttentionPlain, kAttentionTiled, kAttentionRegister};
const char* attention_version_name(int version);

// Throws std::invalid_argument for an unknown version or a bad shape.
void attention_forward(int version, const float* q, const float* k, const float* v, float* out, const AttentionShape& s,
                       const AttentionOptions& o = {});
void attention_forward(int version, const double* q, const double* k, const double* v, double* out,
                       const AttentionShape& s, const AttentionOptions& o = {});

// The instruction set the vectorised code paths run with on this CPU: "avx512", "avx2" or "portable".
std::string attention_simd_path();
// v3's register tile: "avx512" (16 queries per zmm, 12 x 16 micro-kernels), "avx2" (two ymm, 6 x 16), "portable"
// (v2's code), or "avx512_emulated" where a test forced it (the AVX-512 tile's source on two ymm per register): the
// path a call with these faults runs.
std::string attention_v3_path(const AttentionFaults& faults = {});
// The register tile the last fp32 v3 call ran, as the tile reports itself (the names above; "" before any).
std::string attention_v3_last_tile();
// Forces v3's path for the calls that follow ("" = the detected one). False for an unknown name or a path this CPU
// cannot run.
bool attention_v3_force_path(const std::string& name);

// Parses a planted-fault name ("no_max_subtraction", "scale_by_d", "mask_off_by_one"); "" = none.
// Returns false for an unknown name.
bool parse_attention_fault(const std::string& name, AttentionFaults* out);

}  // namespace claimcheck::kernels
