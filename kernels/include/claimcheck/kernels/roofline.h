// The roofline probe, code under test of chapter 6: what this CPU does at best, measured.
//  - peak FLOP/s: every thread runs independent FMA chains in vector registers, as many as hide the FMA latency
//    for the instruction set actually dispatched and no more than the register file holds (no spills);
//  - the effective clock under an all-core load: two dependent chains of known latency on two different units
//    (x86-64: imul r64, 3 cycles, and add r64 from a register, 1 cycle), which must agree;
//  - the bf16 engines where the CPU has them: AVX-512 bf16 dot products (vdpbf16ps) and the AMX tile unit
//    (tdpbf16ps), each with independent accumulators and a result checked against its closed form;
//  - read bandwidth, STREAM-style: a read-only reduction over an array of at least 4x the last-level cache, threads
//    pinned to the CPUs of the affinity mask; the median of several passes (STREAM reports the best; on a shared VM
//    the best pass catches bursts that no kernel sustains, the median is what a decode step sees), the best kept
//    beside it. No triad: a figure no claim judged was code no claim checked.
// The theoretical peak to hold these against is the answer key's business (reference/), not the probe's.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace claimcheck::kernels {

// Faults a test can plant (never set in normal runs).
struct RooflineFaults {
  bool few_chains = false;      // one FMA chain per thread: latency-bound, a fraction of the peak
  bool scalar = false;          // the portable loop for every ISA, with one chain: scalar and latency-bound
  bool read_skips = false;      // the read probe steps over its 1 MiB blocks in bytes for floats: one block in four
  bool counts_double = false;   // the FMA probe counts four FLOP per lane and FMA: twice the peak it ran
  bool threads_twice = false;   // the FMA probe's rate over several threads multiplied by the threads twice over
  bool fill_floor = false;      // the read array's first touch split in chunks rounded down: its tail left unfilled
  bool read_overcount = false;  // the read probe's array counted 1.5x the bytes it holds (measure_bandwidth only)
  bool clock_miscount = false;  // the first clock chain counts 34 operations per pass of 32 (its loop's dec and jnz)
  bool clock_halved = false;    // both clock chains count 16 operations per pass of 32: a clock read at half
  bool llc_as_l1 = false;       // the read probe sizes its array by the level-1 cache (no floor), not the last level
  bool avx2_overcount = false;  // the AVX2 FMA probe counts 16 lanes per ymm FMA (the zmm kernel's figure)
  bool prefers_avx2 = false;    // the FMA probe dispatches to the narrowest vector path first, not the widest
  bool bf16_as_fma = false;     // the bf16 dot-product probe counts a lane's pair of products as one FMA (half)
  bool bf16_lanes_doubled = false;  // the bf16 dot-product probe counts 32 lanes of the zmm's 16 (twice)
  bool amx_k16 = false;             // the AMX probe counts 16 pairs per tile product where a bf16 tile holds 32 (half)
};
// Parses "probe_few_chains" / "probe_scalar" / "probe_read_skips" / "probe_counts_double" / "probe_read_overcount" /
// "probe_clock_miscount" / "probe_clock_halved" / "probe_llc_as_l1" / "probe_avx2_overcount" / "probe_prefers_avx2" /
// "probe_threads_twice" / "probe_fill_floor" / "probe_bf16_as_fma" / "probe_bf16_lanes_doubled" / "probe_amx_k16";
// "" = none. Returns false for a name that is not a probe fault.
bool parse_roofline_fault(const std::string& name, RooflineFaults* out);

struct FlopsPeak {
  double flops_per_s = 0;  // all threads together
  std::string isa;         // "avx512", "avx2", "neon" or "portable" (fp32), "avx512_bf16" (bf16 dot products)
  int threads = 0;
  int chains = 0;       // independent accumulators per thread
  int lanes = 0;        // fp32 lanes per vector
  double seconds = 0;   // wall time of the best pass
  long iterations = 0;  // of the kernel's loop, per thread and pass
  // What the kernel returned, smallest and largest over threads and passes: the bf16 probe's sum of its lanes per
  // iteration (measure_bf16_peak), for a caller to recount its work.
  double result_min = 1e300, result_max = -1e300;
};
// fp32 FMA peak on `threads` pinned threads, best of `passes`, each about `seconds` long.
FlopsPeak measure_fma_peak(int threads, const RooflineFaults& f = {}, int passes = 3, double seconds = 0.05);
// The FMA probe's vector paths this CPU runs, the widest (the one measure_fma_peak dispatches to) first: "avx512",
// "avx2" on x86-64, "neon" on AArch64; none on the portable build. And the probe forced onto one of them (throws
// std::invalid_argument for a path this CPU does not run): a path a narrower CPU dispatches to, checked here too.
std::vector<std::string> fma_peak_paths_here();
FlopsPeak measure_fma_peak_on(const std::string& path, int threads, const RooflineFaults& f = {}, int passes = 3,
                              double seconds = 0.05);
// bf16 dot-product peak (vdpbf16ps) where avx512_bf16 exists; flops_per_s = 0 and isa = "" where it does not.
FlopsPeak measure_bf16_peak(int threads, int passes = 3, double seconds = 0.05, const RooflineFaults& f = {});

// bf16 tile dot products on AMX (tdpbf16ps) where the CPU has amx_bf16 and Linux grants the tile state; run in a
// child process, so that a CPU or kernel that refuses the instructions ends the probe, not the caller.
// flops_per_s = 0 and `why_not` says why where there is no AMX. `exact` is false when an accumulator missed its
// closed form (a probe that skipped work).
struct AmxPeak {
  FlopsPeak peak;
  bool exact = false;
  std::string why_not;
};
AmxPeak measure_amx_peak(int threads, int passes = 3, double seconds = 0.05, const RooflineFaults& f = {});

// The clock under an all-core load, by two dependent chains of known latency (names in `methods`), each `seconds`
// long per pass, both in every pass, the best of 16 passes each, the mean over `threads` pinned threads. 0 where
// this architecture has no chain.
struct ClockReading {
  double hz[2] = {0, 0};
  std::string methods[2];
  // The higher reading when the two are within `tolerance` of each other; 0 when they disagree or one is missing.
  double agreed_hz(double tolerance = 0.1) const;
};
ClockReading measure_clock(int threads, double seconds = 0.002, const RooflineFaults& faults = {});

struct Bandwidth {
  double read_bytes_per_s = 0;       // read-only reduction: bytes read / time (the median pass)
  double read_best_bytes_per_s = 0;  // the best pass
  std::size_t array_bytes = 0;       // the read array's
  std::size_t llc_bytes = 0;         // the last-level cache the arrays were sized against (0 = unknown)
  int threads = 0;
  double checksum = 0;           // sum of the read array: validates that the reduction read every element
  double expected_checksum = 0;  // the same sum known in closed form from how the array was filled
  // (The array holds i mod 8 at element i, array_bytes / 4 elements: a check can know the sum without this code.)
};
// array_bytes = 0 picks max(4 x LLC, 64 MiB); `passes` read passes over it.
Bandwidth measure_bandwidth(int threads, std::size_t array_bytes = 0, int passes = 5, const RooflineFaults& f = {});
// While one lives, measure_bandwidth keeps its filled array for the next call of the same size and threads:
// a check that probes the bandwidth before each sample pays the array's first touch (4 x LLC of page faults,
// seconds where a hypervisor reports a large cache) once, not per sample. The last one destroyed frees them.
class BandwidthArraysKept {
 public:
  BandwidthArraysKept();
  ~BandwidthArraysKept();
  BandwidthArraysKept(const BandwidthArraysKept&) = delete;
  BandwidthArraysKept& operator=(const BandwidthArraysKept&) = delete;
};

// Seconds to read every byte of `buffers` once the probe's way (1 MiB blocks pulled from a shared counter, each read
// as four streams) on `threads` pinned threads, the median of `passes`: the yardstick of a kernel that must read those
// very bytes (the same pages and caches; a stack that fits in a large last-level cache is read from it by both).
// `checksum` (optional): the sum of the floats read, the buffers read as floats (a tail of under 4 bytes left out).
double measure_read_seconds(const std::vector<std::pair<const void*, std::size_t>>& buffers, int threads,
                            int passes = 3, const RooflineFaults& f = {}, double* checksum = nullptr);

// The last-level cache size from sysfs (bytes; 0 when unknown).
std::size_t last_level_cache_bytes(bool level1_only = false);  // (level1_only: a planted fault's reading)
// "avx512", "avx2", "neon" (AArch64) or "portable": the path measure_fma_peak dispatches to on this CPU.
std::string roofline_simd_path();

}  // namespace claimcheck::kernels
