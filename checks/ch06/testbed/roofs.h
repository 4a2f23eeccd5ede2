// What a roofline is made of, whichever device measured it: the read bandwidth, the compute roof of the engine the
// kernels run on, each further engine's roof, the theoretical peak. The CPU probe (cpu.h, ch06::Roof) and
// the CUDA probes (gpu.h, ch06::gpu::Roof) each give this view (roofs()); the testbed (testbed.h) holds a
// kernel's FLOPs, bytes and time against it the same way on either device, and the report draws it with the points
// (roofline_chart).
#pragma once
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace ch06 {

struct Roofs {
  std::string device;
  double read = 0;         // bytes/s: the read probe
  double peak = 0;         // FLOP/s: the compute probe of the kernels' engine
  double theory_peak = 0;  // FLOP/s: the theoretical peak it is held against; 0 where unknown
  std::vector<std::pair<std::string, double>> engines;  // further engines (bf16 dot products, AMX tiles): FLOP/s
  double ridge() const { return read > 0 ? peak / read : 0; }
  // The time the bytes take at the read roof, the FLOPs at the compute roof, and the larger: the kernel's floor.
  double bytes_seconds(double bytes) const { return bytes / read; }
  double flops_seconds(double flops) const { return flops / peak; }
  double floor_seconds(double flops, double bytes) const {
    return std::max(bytes_seconds(bytes), flops_seconds(flops));
  }
  bool memory_bound(double flops, double bytes) const { return flops_seconds(flops) < bytes_seconds(bytes); }
};

// A point of the roofline: a kernel that did `flops` over `bytes` in `seconds`.
inline nlohmann::json roofline_point(const std::string& name, double flops, double bytes, double seconds) {
  return {{"name", name}, {"intensity", flops / bytes}, {"flops", flops / seconds}};
}

// details.roofline: a log-log roofline with the measured roofs and the points a check measured; every engine measured
// beyond the kernels' own is drawn as a roof of its own (with its ridge), the theoretical peak dashed where known.
inline nlohmann::json roofline_chart(const std::string& title, const Roofs& r, const nlohmann::json& points) {
  nlohmann::json roofs = nlohmann::json::array();
  for (const auto& [name, flops] : r.engines)
    if (flops > 0) roofs.push_back({{"name", name}, {"flops", flops}});
  nlohmann::json j = {{"title", title}, {"peak_flops", r.peak}, {"bandwidth", r.read}, {"points", points}};
  if (r.theory_peak > 0) j["theoretical_peak_flops"] = r.theory_peak;
  if (!roofs.empty()) j["roofs"] = roofs;
  return j;
}

}  // namespace ch06
