// Fuzz target: a claim's expected file (parse_expected_file, the text behind load_expected_file), then the tolerance
// engine on what it accepted: every statement's comparison (and each variant's) against its own stated value.
// The file's place (expected/chNN/<name>.json) is taken from the input's "id" where it has one, so that the parse
// goes past the id check. Expected: an InputError naming the file and field. A finding: any other exception, a
// crash, undefined behaviour, or a verdict whose share of the budget is NaN or negative.
#include <cmath>
#include <cstdint>
#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "errors.h"
#include "expected.h"
#include "fuzz_check.h"
#include "tolerance.h"
#include "units.h"

using namespace claimcheck;

namespace {

std::string place_of(const std::string& text) {
  static const std::regex id_re("^(ch0[1-9])\\.([a-z0-9_]+)$");
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  std::smatch m;
  if (j.is_object() && j.contains("id") && j["id"].is_string()) {
    const std::string id = j["id"].get<std::string>();
    if (std::regex_match(id, m, id_re)) return "expected/" + m[1].str() + "/" + m[2].str() + ".json";
  }
  return "expected/ch00/fuzz.json";
}

void check_verdict(const Comparison& c, const Statement& s, double measured, double stated) {
  std::map<std::string, double> derived;
  if (const auto* b = std::get_if<rule::Band>(&c.rule)) derived[b->relative_to] = stated;
  if (const auto* i = std::get_if<rule::Interval>(&c.rule))
    derived[i->min_from] = stated - 1, derived[i->max_from] = stated + 1;
  if (const auto* p = std::get_if<rule::RoundedParts>(&c.rule))
    for (const std::string& k : p->parts) derived[k] = measured / static_cast<double>(p->parts.size());  // they add up
  const Verdict v = compare_scalar(c, measured, stated, derived, s.unit);
  const std::string rule = rule_name(c.rule);
  if (std::isnan(v.budget_used) || v.budget_used < 0)
    fuzz::finding("compare_scalar(" + rule + ") on " + s.name + ": budget_used " + std::to_string(v.budget_used));
  if (v.text.empty()) fuzz::finding("compare_scalar(" + rule + ") on " + s.name + ": no text");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  Expected e;
  try {
    e = parse_expected_file(text, place_of(text));
  } catch (const InputError&) {
    return 0;  // one line naming the file and the field
  } catch (const std::exception& ex) {
    fuzz::finding(std::string("parse_expected_file threw an untyped exception: ") + ex.what());
  }
  if (e.statements.empty()) fuzz::finding("accepted with no statement");
  if (e.raw.at("schema") != kExpectedSchema) fuzz::finding("accepted schema " + e.raw.at("schema").dump());
  try {
    for (const Statement& s : e.statements) {
      if (!known_unit(s.unit)) fuzz::finding("accepted unknown unit '" + s.unit + "'");
      const double v = s.value.is_boolean() ? (s.value.get<bool>() ? 1.0 : 0.0) : s.value.get<double>();
      if (!std::isfinite(v)) fuzz::finding("accepted a non-finite value in " + s.name);
      const auto same = convert_unit(v, s.unit, s.unit);
      if (!same || *same != v) fuzz::finding("convert_unit(" + s.unit + " -> " + s.unit + ") changed " + s.name);
      const double near = std::isfinite(v * 1.01) ? v * 1.01 : v / 2;
      for (double m : {v, near}) {
        check_verdict(s.compare, s, m, v);
        for (const Variant& var : s.variants) check_verdict(var.compare, s, m, v);
      }
    }
  } catch (const std::exception& ex) {
    fuzz::finding(std::string("an accepted expected file made the tolerance engine throw: ") + ex.what());
  }
  return 0;
}
