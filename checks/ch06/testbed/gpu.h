// Chapter 6's measured claims on a CUDA GPU (issue 10): the forms the checks take where the probe found a device.
// The roofs are measured here (the read-only reduction over 4 GiB, validated against its closed form; the bf16
// GEMM peak through cuBLAS, validated against fp64 dot products); the kernels are kernels/cuda's. The stated
// figures stay the series' (the H100's); the laws are judged against this device's measured roofs.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>

#include <nlohmann/json.hpp>

#include "claimcheck/kernels/cuda/decode.h"
#include "claimcheck/kernels/cuda/probes.h"
#include "claimcheck/kernels/cuda/stream.h"
#include "claimcheck/ref/ledger.h"
#include "cpu.h"

namespace ch06::gpu {
namespace C = claimcheck::kernels::cuda;

// A check that measures the CPU on a host whose GPU it cannot use says so, in its row's assumptions.
inline void note_cpu_in_place_of_gpu(claimcheck::Context& ctx, const std::string& why) {
  const auto& hw = ctx.hardware();
  if (!hw.gpu_on_host.empty() || hw.gpu)
    ctx.assumption("measured on the CPU in place of the GPU (" + (hw.gpu ? hw.gpu->name : hw.gpu_on_host) +
                   "): " + why);
}

// The GPU form runs where the probe found a CUDA device (in a build with CUDA) that this build has code for; a device
// it has no code for skips the claim with the reason (never a CPU figure in its place).
inline bool present(claimcheck::Context& ctx) {
  if (!ctx.hardware().gpu) {
    note_cpu_in_place_of_gpu(ctx, ctx.hardware().gpu_absent_reason);
    return false;
  }
  std::string why;
  if (C::device_count(&why) == 0) ctx.skip("the GPU form cannot run here: " + why);
  return true;
}

struct Roof {
  double read = 0, copy = 0, peak = 0;  // bytes/s, bytes/s (read + written), FLOP/s
  double theory_bw = 0;                 // the probe's 2 x memory clock x bus width
  double gemm_rel_err = 0;
  bool read_exact = false;
  std::string device;
  double ridge() const { return peak / read; }
  // The device-neutral view (roofs.h); theory_peak: the datasheet's, where the check has one.
  Roofs roofs(double theory_peak = 0) const { return {device, read, peak, theory_peak, {}}; }
};

// The compute roof, with the probe fault a test planted (the CPU probe's names: probe_few_chains, probe_scalar).
inline C::GemmResult gemm_peak(claimcheck::Context& ctx) {
  K::RooflineFaults faults;
  K::parse_roofline_fault(ctx.planted_fault(), &faults);
  const C::GemmResult g = C::gemm_peak_bf16(20, faults);
  if (g.max_rel_err > 1e-2)
    throw std::runtime_error("cuBLAS's bf16 GEMM probe is off its fp64 dot products by " +
                             std::to_string(g.max_rel_err));
  return g;
}

inline Roof measure_roof(claimcheck::Context& ctx, bool with_peak = true) {
  Roof r;
  r.device = C::device_summary();
  r.theory_bw = ctx.hardware().gpu->theoretical_bandwidth;
  K::RooflineFaults faults;
  K::parse_roofline_fault(ctx.planted_fault(), &faults);
  const C::ReadResult rd = C::read_bandwidth(std::size_t(4) << 30, 10, faults.read_skips);
  r.read_exact = std::fabs(rd.sum - rd.expected_sum) <= 0.5;  // the closed form of the fill: every element read
  r.read = rd.bytes / rd.seconds;
  const C::CopyResult cp = C::copy_bandwidth(std::size_t(2) << 30, 10);
  if (!cp.valid) throw std::runtime_error("the GPU copy probe's destination differs from its source");
  r.copy = cp.bytes / cp.seconds;
  if (with_peak) {
    const C::GemmResult g = gemm_peak(ctx);
    r.gemm_rel_err = g.max_rel_err;
    r.peak = g.flops / g.seconds;
  }
  return r;
}

inline nlohmann::json roof_json(const Roof& r) {
  return {{"device", r.device},
          {"read_gb_s", r.read / 1e9},
          {"copy_gb_s", r.copy / 1e9},
          {"theoretical_gb_s", r.theory_bw / 1e9},
          {"bf16_gemm_tflops", r.peak / 1e12},
          {"ridge_flop_per_byte", r.peak > 0 ? r.ridge() : 0.0},
          {"gemm_max_rel_err", r.gemm_rel_err}};
}
inline K::DecodeShape shape(claimcheck::Context& ctx, int layers) {
  K::DecodeShape d;
  d.hidden = positive_int(ctx, "hidden", 65536);
  d.kv_dim = positive_int(ctx, "kv_dim", 65536);
  d.ffn = positive_int(ctx, "ffn", 262144);
  d.head_dim = head_dim_of(ctx, d);
  d.layers = layers;
  return d;
}
// The decode chain's size on the GPU: inputs.gpu_layers (32, Llama-3-8B's) and inputs.gpu_vocab (its lm_head).
inline int chain_layers(claimcheck::Context& ctx) { return positive_int(ctx, "gpu_layers", 128); }
inline int chain_vocab(claimcheck::Context& ctx) { return positive_int(ctx, "gpu_vocab", 1 << 20); }

// The bytes a chain of this shape reads, from the shape alone (2 per bf16 weight; NF4: half a byte per weight and
// 4 bytes per 64): the figure the kernel's own count must equal.
inline double shape_bytes(const K::DecodeShape& d, int vocab, bool nf4) {
  const double w = d.layers * layer_weights(d) + static_cast<double>(vocab) * d.hidden;
  return nf4 ? w / 2 + w / 64 * 4 : 2 * w;
}

}  // namespace ch06::gpu
