#include "expected.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <regex>
#include <sstream>

#include "errors.h"
#include "registry.h"
#include "units.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const json& field(const json& j, const std::string& file, const std::string& path, const char* key) {
  if (!j.contains(key)) input_error(file, path + key, "missing");
  return j.at(key);
}

std::string get_string(const json& j, const std::string& file, const std::string& path, const char* key,
                       bool required = true) {
  if (!j.contains(key)) {
    if (required) input_error(file, path + key, "missing");
    return "";
  }
  const json& v = j.at(key);
  if (!v.is_string()) input_error(file, path + key, std::string("expected a string, got ") + v.type_name());
  if (required && v.get<std::string>().empty()) input_error(file, path + key, "empty");
  return v.get<std::string>();
}

double get_number(const json& j, const std::string& file, const std::string& path, const char* key) {
  const json& v = field(j, file, path, key);
  if (!v.is_number()) input_error(file, path + key, std::string("expected a number, got ") + v.type_name());
  const double d = v.get<double>();
  if (!std::isfinite(d)) input_error(file, path + key, "not a finite number");
  return d;
}

std::optional<double> opt_number(const json& j, const std::string& file, const std::string& path, const char* key) {
  if (!j.contains(key)) return std::nullopt;
  return get_number(j, file, path, key);
}

std::vector<std::string> get_string_list(const json& j, const std::string& file, const char* key) {
  const json& v = field(j, file, "", key);
  if (!v.is_array()) input_error(file, key, std::string("expected a list of strings, got ") + v.type_name());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) input_error(file, std::string(key) + "[" + std::to_string(i) + "]", "expected a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// A key outside `allowed` is one error naming the file and the key: a typo (`alsoo`, `evidence` one level too high)
// must not drop what it holds and still pass.
void only_keys(const json& j, const std::string& file, const std::string& p, std::initializer_list<const char*> allowed) {
  for (const auto& item : j.items()) {
    const std::string& k = item.key();  // a plain name: clang does not capture a structured binding in a lambda
    if (std::any_of(allowed.begin(), allowed.end(), [&k](const char* a) { return k == a; })) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    input_error(file, p + k, "unknown key (here: " + list + ")");
  }
}

// A string field that `check` accepts (it throws with the reason otherwise): one error naming the file and field.
template <class Check>
std::string checked_string(const json& c, const std::string& file, const std::string& p, const char* key, Check check) {
  std::string v = get_string(c, file, p, key);
  try {
    check(v);
  } catch (const std::exception& e) {
    input_error(file, p + key, e.what());
  }
  return v;
}

Comparison parse_compare(const json& c, const std::string& file, const std::string& path) {
  if (!c.is_object()) input_error(file, path, "expected an object");
  const std::string p = path + ".";
  Comparison out;
  out.rule = get_string(c, file, p, "rule");
  // The keys of each rule, beside rule, why, evidence and basis.
  if (out.rule == "close") only_keys(c, file, p, {"rule", "why", "evidence", "basis", "dtype", "atol", "rtol"});
  else if (out.rule == "rounded" || out.rule == "truncated") only_keys(c, file, p, {"rule", "why", "evidence", "basis", "step"});
  else if (out.rule == "bound") only_keys(c, file, p, {"rule", "why", "evidence", "basis", "min", "max"});
  else if (out.rule == "band") only_keys(c, file, p, {"rule", "why", "evidence", "basis", "relative_to", "lo", "hi"});
  else if (out.rule == "rounded_parts")
    only_keys(c, file, p, {"rule", "why", "evidence", "basis", "step", "part_step", "parts"});
  else if (out.rule == "interval") only_keys(c, file, p, {"rule", "why", "evidence", "basis", "lo_from", "hi_from"});
  else if (out.rule == "equal") only_keys(c, file, p, {"rule", "why", "evidence", "basis"});
  out.why = get_string(c, file, p, "why");
  if (c.contains("evidence")) out.evidence = get_string(c, file, p, "evidence");
  if (c.contains("basis")) out.basis = checked_string(c, file, p, "basis", [](const std::string& b) { basis_label(b); });
  if (out.rule == "close") {
    if (c.contains("dtype")) {
      out.dtype = checked_string(c, file, p, "dtype", [](const std::string& d) { dtype_default(d); });
    } else {
      if (!c.contains("atol") && !c.contains("rtol")) input_error(file, p + "rtol", "missing (or atol, or dtype)");
      out.atol = opt_number(c, file, p, "atol").value_or(0);
      out.rtol = opt_number(c, file, p, "rtol").value_or(0);
      if (out.atol < 0) input_error(file, p + "atol", "negative");
      if (out.rtol < 0) input_error(file, p + "rtol", "negative");
    }
  } else if (out.rule == "rounded" || out.rule == "truncated") {
    out.step = get_number(c, file, p, "step");
    if (out.step <= 0) input_error(file, p + "step", "must be positive");
  } else if (out.rule == "bound") {
    out.min = opt_number(c, file, p, "min");
    out.max = opt_number(c, file, p, "max");
    if (!out.min && !out.max) input_error(file, p + "min", "missing (a bound needs min, max or both)");
    if (out.min && out.max && *out.min > *out.max) input_error(file, p + "max", "smaller than min");
  } else if (out.rule == "band") {
    out.relative_to = get_string(c, file, p, "relative_to");
    out.lo = opt_number(c, file, p, "lo");
    out.hi = opt_number(c, file, p, "hi");
    if (!out.lo && !out.hi) input_error(file, p + "lo", "missing (a band needs lo, hi or both)");
    if (out.lo && out.hi && *out.lo > *out.hi) input_error(file, p + "hi", "smaller than lo");
  } else if (out.rule == "rounded_parts") {
    out.step = get_number(c, file, p, "step");
    out.part_step = get_number(c, file, p, "part_step");
    if (out.step <= 0) input_error(file, p + "step", "must be positive");
    if (out.part_step <= 0) input_error(file, p + "part_step", "must be positive");
    if (!c.contains("parts") || !c["parts"].is_array() || c["parts"].size() < 2)
      input_error(file, p + "parts", "expected at least two names of derived values");
    for (const auto& n : c["parts"]) {
      if (!n.is_string() || n.get<std::string>().empty()) input_error(file, p + "parts", "expected names (strings)");
      out.parts.push_back(n.get<std::string>());
    }
  } else if (out.rule == "interval") {
    out.interval_lo = get_string(c, file, p, "lo_from");
    out.interval_hi = get_string(c, file, p, "hi_from");
  } else if (out.rule == "equal") {
  } else {
    input_error(file, p + "rule",
                "unknown rule '" + out.rule + "' (close, rounded, rounded_parts, truncated, bound, band, interval, equal)");
  }
  return out;
}

// "" when `when` is well formed (see Variant::when), else what is wrong with it.
std::string when_error(const std::string& when) {
  static const std::regex term(R"((default|gpu|no-gpu|isa:[a-z0-9_]+|derived:[A-Za-z0-9_]+[<>]-?[0-9]+(\.[0-9]+)?([eE]-?[0-9]+)?))");
  std::stringstream alts(when);
  int n = 0;
  for (std::string alt; std::getline(alts, alt, '|');) {
    std::stringstream terms(alt);
    for (std::string t; std::getline(terms, t, '&');) {
      ++n;
      if (!std::regex_match(t, term))
        return "'" + t + "' is not a condition (default, gpu, no-gpu, isa:FLAG, derived:NAME>X or derived:NAME<X, "
               "joined by & and |)";
    }
  }
  return n == 0 || when.back() == '|' || when.back() == '&' ? "an empty condition" : "";
}

Statement parse_statement(const json& j, const std::string& file, const std::string& name, const std::string& path) {
  Statement s;
  s.name = name;
  const std::string p = path.empty() ? "" : path + ".";
  if (!path.empty()) only_keys(j, file, p, {"value", "unit", "compare", "variants", "part", "expect", "xfail_reason"});
  const json& v = field(j, file, p, "value");
  if (v.is_number()) {
    if (!std::isfinite(v.get<double>())) input_error(file, p + "value", "not a finite number");
  } else if (!v.is_boolean()) {
    input_error(file, p + "value", std::string("expected a number or a boolean, got ") + v.type_name());
  }
  s.value = v;
  s.unit = get_string(j, file, p, "unit");
  if (!known_unit(s.unit)) input_error(file, p + "unit", "unknown unit '" + s.unit + "' (" + known_units_list() + ")");
  if (v.is_boolean() && s.unit != "bool") input_error(file, p + "unit", "a boolean value has unit 'bool'");
  if (j.contains("variants")) {
    const json& vs = j.at("variants");
    if (!vs.is_array() || vs.empty()) input_error(file, p + "variants", "expected a non-empty list");
    for (std::size_t i = 0; i < vs.size(); ++i) {
      const std::string vp = p + "variants[" + std::to_string(i) + "]";
      if (!vs[i].is_object()) input_error(file, vp, "expected an object");
      only_keys(vs[i], file, vp + ".", {"when", "compare", "expect", "xfail_reason"});
      Variant var;
      var.when = get_string(vs[i], file, vp + ".", "when");
      if (const std::string bad = when_error(var.when); !bad.empty()) input_error(file, vp + ".when", bad);
      var.compare = parse_compare(field(vs[i], file, vp + ".", "compare"), file, vp + ".compare");
      if (vs[i].contains("expect")) {
        const std::string expect = get_string(vs[i], file, vp + ".", "expect");
        if (expect == "xfail") {
          var.xfail = true;
          var.xfail_reason = get_string(vs[i], file, vp + ".", "xfail_reason");
        } else if (expect != "pass") {
          input_error(file, vp + ".expect", "'" + expect + "' is neither 'pass' nor 'xfail'");
        }
      }
      s.variants.push_back(var);
    }
    if (s.variants.back().when != "default") input_error(file, p + "variants", "the last variant must be 'default'");
    if (j.contains("compare")) input_error(file, p + "compare", "give either compare or variants");
    s.compare = s.variants.back().compare;
  } else {
    s.compare = parse_compare(field(j, file, p, "compare"), file, p + "compare");
  }
  if (v.is_boolean() && s.compare.rule != "equal") input_error(file, p + "compare.rule", "a boolean compares with 'equal'");
  if (j.contains("part")) {
    if (get_string(j, file, p, "part") != "measured") input_error(file, p + "part", "the only part is 'measured'");
    s.measured_part = true;
  }
  if (j.contains("expect")) {
    if (path.empty()) input_error(file, "expect", "a claim-level expectation is read elsewhere");
    const std::string expect = get_string(j, file, p, "expect");
    if (expect == "xfail") {
      s.xfail = true;
      s.xfail_reason = get_string(j, file, p, "xfail_reason");
    } else if (expect != "pass") {
      input_error(file, p + "expect", "'" + expect + "' is neither 'pass' nor 'xfail'");
    }
  }
  return s;
}

}  // namespace

Expected load_expected_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) input_error(path.string(), "(file)", "cannot be read");
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_expected_file(buf.str(), path);
}

Expected parse_expected_file(const std::string& text, const fs::path& path) {
  const std::string file = path.string();
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number beyond a double (1e400)
    input_error(file, "(json)", std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) input_error(file, "(json)", "expected an object at the top level");

  only_keys(j, file, "", {"schema", "id", "title", "source", "source_en", "kind", "requires", "setup_specific", "value",
                          "unit", "compare", "variants", "also", "expect", "xfail_reason", "pending", "inputs"});
  Expected e;
  e.file = path;
  e.raw = j;
  const json& schema = field(j, file, "", "schema");
  if (!schema.is_number_integer() || schema.get<std::int64_t>() != kExpectedSchema)  // not get<int>: 2^32 + 1 is no 1
    input_error(file, "schema", "expected " + std::to_string(kExpectedSchema) + ", got " + schema.dump());
  e.id = get_string(j, file, "", "id");
  static const std::regex id_re("^(ch0[1-9])\\.([a-z0-9_]+)$");
  std::smatch m;
  if (!std::regex_match(e.id, m, id_re)) input_error(file, "id", "'" + e.id + "' is not of the form chNN.name");
  e.chapter = m[1];
  const std::string stem = path.stem().string(), dir = path.parent_path().filename().string();
  if (dir + "." + stem != e.id) input_error(file, "id", "'" + e.id + "' does not match the file's place " + dir + "/" + stem + ".json");
  e.title = get_string(j, file, "", "title");
  e.source = get_string(j, file, "", "source");
  e.source_en = get_string(j, file, "", "source_en", false);
  e.kinds = get_string_list(j, file, "kind");
  if (e.kinds.empty()) input_error(file, "kind", "empty");
  for (const auto& k : e.kinds)
    if (std::find(known_kinds().begin(), known_kinds().end(), k) == known_kinds().end())
      input_error(file, "kind", "unknown kind '" + k + "' (analytic, numeric, measured, phenomenon)");
  e.requirements = get_string_list(j, file, "requires");
  for (const auto& r : e.requirements) {
    Requirement req;
    if (!parse_requirement(r, &req)) input_error(file, "requires", "unknown requirement '" + r + "' (libtorch, python, gpu, numpy)");
  }
  if (j.contains("setup_specific")) {
    if (!j["setup_specific"].is_boolean()) input_error(file, "setup_specific", "expected a boolean");
    e.setup_specific = j["setup_specific"].get<bool>();
  }
  {
    json primary = j;
    primary.erase("expect");  // the claim's own expectation (below), not a statement's
    e.statements.push_back(parse_statement(primary, file, "value", ""));
  }
  if (j.contains("also")) {
    const json& also = j["also"];
    if (!also.is_object()) input_error(file, "also", "expected an object of named statements");
    for (const auto& [k, v] : also.items()) {
      if (!v.is_object()) input_error(file, "also." + k, "expected an object");
      e.statements.push_back(parse_statement(v, file, k, "also." + k));
    }
  }
  const std::string expect = j.contains("expect") ? get_string(j, file, "", "expect") : "pass";
  if (expect == "xfail") {
    // The claim's stated value is the expected failure; every other statement must still hold (a claim-wide
    // expectation would let a broken part hide behind the refuted one).
    e.statements.front().xfail = true;
    e.statements.front().xfail_reason = get_string(j, file, "", "xfail_reason");
  } else if (expect != "pass") {
    input_error(file, "expect", "'" + expect + "' is neither 'pass' nor 'xfail'");
  }
  if (j.contains("pending")) e.pending = get_string(j, file, "", "pending");
  if (j.contains("inputs")) {
    if (!j["inputs"].is_object()) input_error(file, "inputs", "expected an object");
    e.inputs = j["inputs"];
  }
  return e;
}

std::map<std::string, Expected> load_expected_dir(const fs::path& dir) {
  if (!fs::is_directory(dir)) input_error(dir.string(), "(dir)", "not a directory of expected files");
  std::vector<fs::path> files;
  for (const auto& ch : fs::directory_iterator(dir)) {
    if (!ch.is_directory()) continue;
    for (const auto& f : fs::directory_iterator(ch.path()))
      if (f.path().extension() == ".json") files.push_back(f.path());
  }
  std::sort(files.begin(), files.end());
  std::map<std::string, Expected> out;
  for (const auto& f : files) {
    Expected e = load_expected_file(f);
    const std::string id = e.id;
    if (!out.emplace(id, std::move(e)).second) input_error(f.string(), "id", "'" + id + "' appears twice");
  }
  if (out.empty()) input_error(dir.string(), "(dir)", "holds no expected files (chNN/<name>.json)");
  return out;
}

}  // namespace claimcheck
