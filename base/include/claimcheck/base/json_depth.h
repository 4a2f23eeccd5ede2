// A bound on JSON nesting for every loader of a user's file (a config, a spec, an expected file, a report): a file
// nested 100,000 deep crashed the writers of its error message (a recursive dump) and took memory quadratic in its
// depth. Header-only; whoever includes it has nlohmann::json.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace claimcheck {

// Deeper than any file the project reads or writes (a report's details reach about 8 levels).
inline constexpr int kMaxJsonDepth = 64;

struct JsonTooDeep : std::runtime_error {
  JsonTooDeep()
      : std::runtime_error("nested deeper than " + std::to_string(kMaxJsonDepth) +
                           " levels (not a file of this kind)") {}
};

// A parser callback refusing nesting deeper than kMaxJsonDepth (throws JsonTooDeep), then asking `inner`, if any.
inline nlohmann::json::parser_callback_t depth_guard(nlohmann::json::parser_callback_t inner = nullptr) {
  return [inner](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if ((event == E::object_start || event == E::array_start) && depth >= kMaxJsonDepth) throw JsonTooDeep();
    return inner ? inner(depth, event, parsed) : true;
  };
}

// A value as an error message quotes it: its JSON, cut to 60 characters (a file's megabyte of array in one line).
inline std::string shown(const nlohmann::json& v) {
  std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
}

}  // namespace claimcheck
