// Shared by the chapter 4 checks that measure the Llama-shaped decoder (kernels/train/memory.cpp): the timeline
// as a stacked-bar picture for the report.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "claimcheck/train/memory.h"

namespace ch04 {

// details.stacked entry: bars = phases, parts = categories, in MB (10^6 bytes).
inline nlohmann::json timeline_chart(const std::string& title,
                                     const std::vector<claimcheck::train::MemorySnapshot>& t) {
  nlohmann::json bars = nlohmann::json::array();
  for (const auto& s : t) {
    nlohmann::json parts = nlohmann::json::array();
    for (const auto& c : claimcheck::train::memory_categories())
      parts.push_back({{"name", c}, {"value", static_cast<double>(s.bytes.at(c)) / 1e6}});
    bars.push_back({{"name", s.phase}, {"parts", parts}});
  }
  return {{"title", title}, {"unit", "MB"}, {"y_label", "live MB"}, {"bars", bars}};
}

inline nlohmann::json timeline_json(const std::vector<claimcheck::train::MemorySnapshot>& t) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : t) out.push_back({{"phase", s.phase}, {"bytes", s.bytes}, {"live", s.live}, {"peak", s.peak}});
  return out;
}

// Bytes the categories hold in a snapshot.
inline double sum_of(const claimcheck::train::MemorySnapshot& s, std::initializer_list<const char*> cats) {
  double b = 0;
  for (const char* c : cats) b += static_cast<double>(s.bytes.at(c));
  return b;
}

}  // namespace ch04
