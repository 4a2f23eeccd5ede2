#include "units.h"

#include <map>
#include <utility>

namespace claimcheck {
namespace {

struct UnitDef {
  const char* family;
  double scale;  // in the family's base unit
};

const std::map<std::string, UnitDef>& table() {
  static const std::map<std::string, UnitDef> t = {
      {"B", {"bytes", 1}},
      {"KB", {"bytes", 1e3}},
      {"MB", {"bytes", 1e6}},
      {"GB", {"bytes", 1e9}},
      {"TB", {"bytes", 1e12}},
      {"KiB", {"bytes", 1024.0}},
      {"MiB", {"bytes", 1048576.0}},
      {"GiB", {"bytes", 1073741824.0}},
      {"s", {"time", 1}},
      {"ms", {"time", 1e-3}},
      {"us", {"time", 1e-6}},
      {"ns", {"time", 1e-9}},
      {"params", {"params", 1}},
      {"K params", {"params", 1e3}},
      {"M params", {"params", 1e6}},
      {"B params", {"params", 1e9}},
      {"FLOP", {"flop", 1}},
      {"GFLOP", {"flop", 1e9}},
      {"TFLOP", {"flop", 1e12}},
      {"FLOP/s", {"flops", 1}},
      {"GFLOP/s", {"flops", 1e9}},
      {"TFLOP/s", {"flops", 1e12}},
      {"B/s", {"bandwidth", 1}},
      {"GB/s", {"bandwidth", 1e9}},
      {"TB/s", {"bandwidth", 1e12}},
      {"FLOP/byte", {"intensity", 1}},
      {"token/s", {"rate", 1}},
      {"ratio", {"ratio", 1}},
      {"%", {"ratio", 1e-2}},
      {"x", {"ratio", 1}},
      {"points", {"points", 1}},  // percentage points
      {"count", {"count", 1}},
      {"layers", {"layers", 1}},
      {"records", {"records", 1}},
      {"bool", {"bool", 1}},
      {"nats", {"nats", 1}},
      {"ppl", {"ppl", 1}},
      {"abs error", {"abs error", 1}},
  };
  return t;
}

}  // namespace

bool known_unit(const std::string& unit) { return table().count(unit) > 0; }

std::optional<double> convert_unit(double value, const std::string& from, const std::string& to) {
  auto a = table().find(from), b = table().find(to);
  if (a == table().end() || b == table().end()) return std::nullopt;
  if (std::string(a->second.family) != b->second.family) return std::nullopt;
  if (from == to) return value;
  return value * a->second.scale / b->second.scale;
}

std::string known_units_list() {
  std::string s;
  for (const auto& [k, v] : table()) s += (s.empty() ? "" : ", ") + k;
  return s;
}

}  // namespace claimcheck
