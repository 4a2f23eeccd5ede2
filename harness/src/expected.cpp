#include "expected.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "claimcheck/base/json_depth.h"
#include "claimcheck/probe.h"
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

std::vector<std::string> get_string_list(const json& j, const std::string& file, const char* key,
                                         const std::string& path = "") {
  const json& v = field(j, file, path, key);
  if (!v.is_array()) input_error(file, path + key, std::string("expected a list of strings, got ") + v.type_name());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) input_error(file, path + key + "[" + std::to_string(i) + "]", "expected a string");
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

// A key outside `allowed` is one error naming the file and the key: a typo (`alsoo`, `evidence` one level too high)
// must not drop what it holds and still pass.
void only_keys(const json& j, const std::string& file, const std::string& p, const std::vector<const char*>& allowed) {
  for (const auto& item : j.items()) {
    const std::string& k = item.key();  // a plain name: clang does not capture a structured binding in a lambda
    if (std::any_of(allowed.begin(), allowed.end(), [&k](const char* a) { return k == a; })) continue;
    std::string list;
    for (const char* a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    input_error(file, p + k,
                "unknown key" + did_you_mean(k, std::vector<std::string>(allowed.begin(), allowed.end())) +
                    " (here: " + list + ")");
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

// A `why`: one line the report prints beside the verdict; the measurements behind it go in `evidence`.
std::string one_line(const json& c, const std::string& file, const std::string& p, const char* key) {
  std::string v = get_string(c, file, p, key);
  if (v.find('\n') != std::string::npos) input_error(file, p + key, "one line (the detail goes in 'evidence')");
  // Characters, not bytes (the schema's maxLength counts code points): UTF-8 continuation bytes do not count.
  const auto chars = static_cast<std::size_t>(
      std::count_if(v.begin(), v.end(), [](char ch) { return (static_cast<unsigned char>(ch) & 0xC0) != 0x80; }));
  if (chars > kWhyMaxChars)
    input_error(file, p + key,
                "longer than " + std::to_string(kWhyMaxChars) + " characters (" + std::to_string(chars) +
                    "): one line, the detail goes in 'evidence'");
  return v;
}

// A range's two ends (bound, band): one spelling, min and max, either may be absent but not both.
void parse_range(const json& c, const std::string& file, const std::string& p, const char* what,
                 std::optional<double>* min, std::optional<double>* max) {
  *min = opt_number(c, file, p, "min");
  *max = opt_number(c, file, p, "max");
  if (!*min && !*max) input_error(file, p + "min", std::string("missing (a ") + what + " needs min, max or both)");
  if (*min && *max && **min > **max) input_error(file, p + "max", "smaller than min");
}

double positive(const json& c, const std::string& file, const std::string& p, const char* key) {
  const double d = get_number(c, file, p, key);
  if (d <= 0) input_error(file, p + key, "must be positive");
  return d;
}

Comparison parse_compare(const json& c, const std::string& file, const std::string& path) {
  if (!c.is_object()) input_error(file, path, "expected an object");
  const std::string p = path + ".";
  Comparison out;
  const std::string rule = get_string(c, file, p, "rule");
  // The keys of each rule, beside rule, why, evidence and basis (expected/schema.json says the same).
  const auto keys = [&](std::initializer_list<const char*> own) {
    std::vector<const char*> all = {"rule", "why", "evidence", "basis"};
    all.insert(all.end(), own.begin(), own.end());
    only_keys(c, file, p, all);
  };
  if (rule == "close") {
    keys({"dtype", "atol", "rtol"});
    rule::Close r;
    if (c.contains("dtype")) {
      if (c.contains("atol") || c.contains("rtol")) input_error(file, p + "dtype", "give either dtype or atol / rtol");
      r.dtype = checked_string(c, file, p, "dtype", [](const std::string& d) { dtype_default(d); });
    } else {
      if (!c.contains("atol") && !c.contains("rtol")) input_error(file, p + "rtol", "missing (or atol, or dtype)");
      r.atol = opt_number(c, file, p, "atol").value_or(0);
      r.rtol = opt_number(c, file, p, "rtol").value_or(0);
      if (r.atol < 0) input_error(file, p + "atol", "negative");
      if (r.rtol < 0) input_error(file, p + "rtol", "negative");
    }
    out.rule = r;
  } else if (rule == "rounded") {
    keys({"step"});
    out.rule = rule::Rounded{positive(c, file, p, "step")};
  } else if (rule == "truncated") {
    keys({"step"});
    out.rule = rule::Truncated{positive(c, file, p, "step")};
  } else if (rule == "bound") {
    keys({"min", "max"});
    rule::Bound r;
    parse_range(c, file, p, "bound", &r.min, &r.max);
    out.rule = r;
  } else if (rule == "band") {
    keys({"relative_to", "min", "max"});
    rule::Band r;
    r.relative_to = get_string(c, file, p, "relative_to");
    parse_range(c, file, p, "band", &r.min, &r.max);
    out.rule = r;
  } else if (rule == "rounded_parts") {
    keys({"step", "part_step", "parts"});
    rule::RoundedParts r;
    r.step = positive(c, file, p, "step");
    r.part_step = positive(c, file, p, "part_step");
    if (!c.contains("parts") || !c["parts"].is_array() || c["parts"].size() < 2)
      input_error(file, p + "parts", "expected at least two names of derived values");
    for (const auto& n : c["parts"]) {
      if (!n.is_string() || n.get<std::string>().empty()) input_error(file, p + "parts", "expected names (strings)");
      r.parts.push_back(n.get<std::string>());
    }
    out.rule = r;
  } else if (rule == "interval") {
    keys({"min_from", "max_from"});
    out.rule = rule::Interval{get_string(c, file, p, "min_from"), get_string(c, file, p, "max_from")};
  } else if (rule == "equal") {
    keys({});
    out.rule = rule::Equal{};
  } else {
    input_error(file, p + "rule",
                "unknown rule '" + rule + "' (close, rounded, rounded_parts, truncated, bound, band, interval, equal)");
  }
  out.why = one_line(c, file, p, "why");
  if (c.contains("evidence")) out.evidence = get_string(c, file, p, "evidence");
  if (c.contains("basis"))
    out.basis = checked_string(c, file, p, "basis", [](const std::string& b) { basis_label(b); });
  return out;
}

Statement parse_statement(const json& j, const std::string& file, const std::string& name, const std::string& path) {
  Statement s;
  s.name = name;
  const std::string p = path.empty() ? "" : path + ".";
  if (!path.empty())
    only_keys(j, file, p,
              {"value", "unit", "compare", "variants", "part", "applies", "expect", "xfail_reason", "untimed"});
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
      checked_string(vs[i], file, vp + ".", "when",
                     [&var](const std::string& w) { var.condition = parse_feature_expr(w); });
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
    if (s.variants.back().condition.text != "default")
      input_error(file, p + "variants", "the last variant must be 'default'");
    if (j.contains("compare")) input_error(file, p + "compare", "give either compare or variants");
    s.compare = s.variants.back().compare;
  } else {
    s.compare = parse_compare(field(j, file, p, "compare"), file, p + "compare");
  }
  if (v.is_boolean() && !std::holds_alternative<rule::Equal>(s.compare.rule))
    input_error(file, p + "compare.rule", "a boolean compares with 'equal'");
  if (j.contains("part")) {
    if (get_string(j, file, p, "part") != "measured") input_error(file, p + "part", "the only part is 'measured'");
    s.measured_part = true;
  }
  if (j.contains("applies"))
    checked_string(j, file, p, "applies", [&s](const std::string& w) {
      s.applies = parse_feature_expr(w);
      if (w.find("derived:") != std::string::npos)
        throw std::invalid_argument("'" + w + "' reads a derived value: where a statement applies is the machine's");
    });
  if (j.contains("untimed")) {
    if (!j.at("untimed").is_boolean()) input_error(file, p + "untimed", "expected a boolean");
    s.untimed = j.at("untimed").get<bool>();
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

FeatureExpr parse_feature_expr(const std::string& text) {
  // The grammar, character for character the pattern of expected/schema.json's `when` (tests/expected/check_schema.py
  // plants the same expressions in both): one space around && and ||, none after !.
#define CLAIMCHECK_FEATURE_ATOM \
  "(gpu|libtorch|python|numpy|isa:[a-z0-9_]+|derived:[A-Za-z0-9_]+[<>]-?[0-9]+(\\.[0-9]+)?([eE]-?[0-9]+)?)"
  static const std::regex grammar("^(default|!?" CLAIMCHECK_FEATURE_ATOM "( (&&|\\|\\|) !?" CLAIMCHECK_FEATURE_ATOM
                                  ")*)$");
#undef CLAIMCHECK_FEATURE_ATOM
  if (!std::regex_match(text, grammar))
    throw std::invalid_argument(
        "'" + text +
        "' is not a feature expression (gpu, libtorch, python, numpy, isa:FLAG, derived:NAME<X, "
        "derived:NAME>X; ! before one; ' && ' and ' || ' between them; or default alone)");
  FeatureExpr e;
  e.text = text;
  if (text == "default") return e;
  const auto split = [](const std::string& s, const std::string& op) {
    std::vector<std::string> parts;
    std::size_t at = 0;
    for (std::size_t next; (next = s.find(op, at)) != std::string::npos; at = next + op.size())
      parts.push_back(s.substr(at, next - at));
    parts.push_back(s.substr(at));
    return parts;
  };
  for (const std::string& alt : split(text, " || ")) {
    std::vector<FeatureTerm> all;
    for (const std::string& t : split(alt, " && ")) {
      FeatureTerm term;
      term.negated = t[0] == '!';
      term.atom = term.negated ? t.substr(1) : t;
      if (term.atom.rfind("isa:", 0) == 0) {
        const auto& flags = probed_isa_flags();
        if (std::find(flags.begin(), flags.end(), term.atom.substr(4)) == flags.end()) {
          std::string known;
          for (const auto& f : flags) known += (known.empty() ? "" : ", ") + f;
          throw std::invalid_argument("'" + term.atom + "' names a flag the probe does not record (it would read " +
                                      "false on every machine); the probe records " + known);
        }
      }
      all.push_back(term);
    }
    e.any_of.push_back(all);
  }
  return e;
}

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
  // A key twice in one object: JSON parsers keep one of the two silently (nlohmann the last), so a statement or a
  // tolerance written twice would judge by whichever came last. Refused, naming the key's place.
  struct Frame {
    bool array = false;
    int next = 0;         // an array's next element
    std::string at, key;  // the container's place, an object's last key
    std::set<std::string> keys;
  };
  std::vector<Frame> frames;
  std::string twice;
  const json::parser_callback_t no_key_twice = [&](int, json::parse_event_t event, json& parsed) {
    using E = json::parse_event_t;
    const auto child = [&]() {  // the place of the value starting now
      if (frames.empty()) return std::string();
      Frame& f = frames.back();
      if (f.array) return f.at + "[" + std::to_string(f.next++) + "]";
      return f.at.empty() ? f.key : f.at + "." + f.key;
    };
    if (event == E::object_start || event == E::array_start) {
      Frame f;
      f.array = event == E::array_start;
      f.at = child();
      frames.push_back(std::move(f));
    } else if (event == E::object_end || event == E::array_end) {
      if (!frames.empty()) frames.pop_back();
    } else if (event == E::key && !frames.empty()) {
      Frame& f = frames.back();
      f.key = parsed.get<std::string>();
      if (!f.keys.insert(f.key).second && twice.empty()) twice = f.at.empty() ? f.key : f.at + "." + f.key;
    } else if (event == E::value && !frames.empty() && frames.back().array) {
      ++frames.back().next;
    }
    return true;
  };
  try {
    j = json::parse(text, depth_guard(no_key_twice));
  } catch (const std::exception& e) {  // parse_error, out_of_range beyond a double (1e400), JsonTooDeep
    input_error(file, "(json)", std::string("malformed JSON: ") + e.what());
  }
  if (!twice.empty()) input_error(file, twice, "appears twice in one object (a JSON parser keeps one silently)");
  if (!j.is_object()) input_error(file, "(json)", "expected an object at the top level");

  only_keys(j, file, "", {"schema",  "id",       "title",    "source", "source_en",      "establishes",
                          "kind",    "requires", "optional", "parts",  "setup_specific", "value",
                          "unit",    "compare",  "variants", "also",   "expect",         "xfail_reason",
                          "pending", "inputs",   "timed",    "faults", "driver",         "untimed"});
  Expected e;
  e.file = path;
  e.raw = j;
  const json& schema = field(j, file, "", "schema");
  // An integer (not get<int>: 2^32 + 1 is no 1), or 1.0: JSON Schema's "integer" takes a number with no fraction.
  const bool one = schema.is_number_integer() ? schema.get<std::int64_t>() == kExpectedSchema
                                              : schema.is_number_float() && schema.get<double>() == kExpectedSchema;
  if (!one) input_error(file, "schema", "expected " + std::to_string(kExpectedSchema) + ", got " + shown(schema));
  e.id = get_string(j, file, "", "id");
  static const std::regex id_re("^(ch0[1-9])\\.([a-z0-9_]+)$");
  std::smatch m;
  if (!std::regex_match(e.id, m, id_re)) input_error(file, "id", "'" + e.id + "' is not of the form chNN.name");
  e.chapter = m[1];
  const std::string stem = path.stem().string(), dir = path.parent_path().filename().string();
  if (dir + "." + stem != e.id)
    input_error(file, "id", "'" + e.id + "' does not match the file's place " + dir + "/" + stem + ".json");
  e.title = get_string(j, file, "", "title");
  e.source = get_string(j, file, "", "source");
  e.source_en = get_string(j, file, "", "source_en", false);
  e.kinds = get_string_list(j, file, "kind");
  if (e.kinds.empty()) input_error(file, "kind", "empty");
  for (std::size_t i = 0; i < e.kinds.size(); ++i)
    if (std::count(e.kinds.begin(), e.kinds.end(), e.kinds[i]) > 1)
      input_error(file, "kind", "'" + e.kinds[i] + "' twice");
  for (const auto& k : e.kinds)
    if (std::find(known_kinds().begin(), known_kinds().end(), k) == known_kinds().end())
      input_error(file, "kind", "unknown kind '" + k + "' (analytic, numeric, measured, phenomenon)");
  const auto features = [&](const json& at, const std::string& p, const char* key) {
    std::vector<std::string> out = get_string_list(at, file, key, p);
    for (const auto& r : out) {
      Requirement req;
      if (!parse_requirement(r, &req))
        input_error(file, p + key, "unknown requirement '" + r + "' (libtorch, python, gpu, numpy)");
    }
    return out;
  };
  e.requirements = features(j, "", "requires");
  if (j.contains("optional")) e.optional = features(j, "", "optional");
  if (j.contains("parts")) {
    const json& parts = j["parts"];
    if (!parts.is_object()) input_error(file, "parts", "expected an object");
    only_keys(parts, file, "parts.", {"measured"});
    const json& m = field(parts, file, "parts.", "measured");
    if (!m.is_object()) input_error(file, "parts.measured", "expected an object");
    only_keys(m, file, "parts.measured.", {"requires"});
    e.measured_requirements = features(m, "parts.measured.", "requires");
  }
  if (j.contains("establishes")) e.establishes = get_string(j, file, "", "establishes");
  if (j.contains("timed")) {
    if (!j["timed"].is_boolean()) input_error(file, "timed", "expected a boolean");
    e.timed = j["timed"].get<bool>();
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
      if (k == "value")
        input_error(file, "also.value", "'value' names the claim's own statement: a second one would overwrite it");
      if (!v.is_object()) input_error(file, "also." + k, "expected an object");
      e.statements.push_back(parse_statement(v, file, k, "also." + k));
    }
  }
  for (const Statement& s : e.statements)
    if (s.untimed && !e.timed)
      input_error(file, s.name == "value" ? "untimed" : "also." + s.name + ".untimed",
                  "only a statement of a timed claim (\"timed\": true) is untimed");
  const std::string expect = j.contains("expect") ? get_string(j, file, "", "expect") : "pass";
  if (expect == "xfail") {
    // The claim's stated value is the expected failure; every other statement must still hold (a claim-wide
    // expectation would let a broken part hide behind the refuted one).
    e.statements.front().xfail = true;
    e.statements.front().xfail_reason = get_string(j, file, "", "xfail_reason");
  } else if (expect != "pass") {
    input_error(file, "expect", "'" + expect + "' is neither 'pass' nor 'xfail'");
  }
  if (j.contains("faults")) {  // each planted fault and the statements it must turn
    const json& faults = j["faults"];
    if (!faults.is_object()) input_error(file, "faults", "expected an object of fault: [statements]");
    static const std::regex fault_re("^[a-z0-9_]+$");
    for (const auto& [fault, names] : faults.items()) {
      const std::string p = "faults." + fault;
      if (!std::regex_match(fault, fault_re)) input_error(file, p, "a fault's name is [a-z0-9_]+");
      if (!names.is_array()) input_error(file, p, "expected a list of statement names");
      std::vector<std::string> list;
      for (const auto& n : names) {
        if (!n.is_string()) input_error(file, p, "expected a list of statement names");
        const std::string name = n.get<std::string>();
        if (std::none_of(e.statements.begin(), e.statements.end(),
                         [&](const Statement& st) { return st.name == name; }))
          input_error(file, p, "'" + name + "' is not a statement of this file ('value' or an `also` name)");
        if (std::find(list.begin(), list.end(), name) != list.end()) input_error(file, p, "'" + name + "' twice");
        list.push_back(name);
      }
      e.faults[fault] = list;
    }
  }
  if (j.contains("pending")) e.pending = get_string(j, file, "", "pending");
  if (j.contains("inputs")) {
    if (!j["inputs"].is_object()) input_error(file, "inputs", "expected an object");
    e.inputs = j["inputs"];
  }
  if (j.contains("driver")) {  // the check is a Python driver: its script, arguments and derived values
    const json& d = j["driver"];
    if (!d.is_object()) input_error(file, "driver", "expected an object {script, args, derives}");
    only_keys(d, file, "driver.", {"script", "args", "derives"});
    Driver drv;
    drv.script = get_string(d, file, "driver.", "script");
    if (drv.script.empty() || drv.script[0] == '/' || drv.script.find("..") != std::string::npos ||
        fs::path(drv.script).extension() != ".py")
      input_error(file, "driver.script", "'" + drv.script + "': a .py file inside the repository, relative to it");
    if (d.contains("args")) drv.args = get_string_list(d, file, "args", "driver.");
    for (std::size_t i = 0; i < drv.args.size(); ++i) {
      const std::string& a = drv.args[i];
      if (a.empty() || a.front() != '{') continue;
      const std::string f = "driver.args[" + std::to_string(i) + "]";
      if (a == "{seed}") continue;
      if (a.rfind("{inputs.", 0) != 0 || a.back() != '}')
        input_error(file, f, "'" + a + "': a literal, {seed} or {inputs.NAME}");
      const std::string name = a.substr(8, a.size() - 9);
      if (!e.inputs.contains(name)) input_error(file, f, "'" + a + "': inputs." + name + " is missing");
      if (!e.inputs[name].is_string() && !e.inputs[name].is_number())
        input_error(file, f, "'" + a + "': inputs." + name + " is neither a string nor a number");
    }
    if (d.contains("derives")) {
      const json& dv = d["derives"];
      if (!dv.is_object()) input_error(file, "driver.derives", "expected an object of name: source");
      for (const auto& [name, src] : dv.items()) {
        const std::string s = src.is_string() ? src.get<std::string>() : "";
        if (s == "probe")
          drv.derives[name] = Source::probe;
        else if (s == "reference")
          drv.derives[name] = Source::reference;
        else if (s == "under_test")
          drv.derives[name] = Source::under_test;
        else
          input_error(file, "driver.derives." + name, "expected probe, reference or under_test");
      }
    }
    e.driver = drv;
  }
  return e;
}

void require_from_expected(const std::map<std::string, Expected>& catalogue) {
  for (auto& c : registry()) {
    const auto it = catalogue.find(c.id);
    if (it == catalogue.end()) continue;  // named by the caller (a check without an expected file)
    if (!c.part.empty() && !it->second.raw.contains("parts"))
      input_error(it->second.file.string(), "parts." + c.part,
                  "missing: " + c.file + " registers the claim's " + c.part + " part (say what it requires)");
    c.needs.clear();
    for (const auto& name : c.part.empty() ? it->second.requirements : it->second.measured_requirements) {
      Requirement r;
      if (parse_requirement(name, &r)) c.needs.push_back(r);  // checked on loading
    }
  }
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
  std::map<std::string, std::string> titles;
  if (const fs::path cf = dir / "chapters.json"; fs::exists(cf)) {
    std::ifstream in(cf, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    json j;
    try {
      j = json::parse(buf.str(), depth_guard());
    } catch (const std::exception& e) {
      input_error(cf.string(), "(json)", std::string("malformed JSON: ") + e.what());
    }
    if (!j.is_object()) input_error(cf.string(), "(json)", "expected an object at the top level");
    only_keys(j, cf.string(), "", {"schema", "chapters"});
    const json& chapters = field(j, cf.string(), "", "chapters");
    if (!chapters.is_object()) input_error(cf.string(), "chapters", "expected an object of chNN: {title}");
    for (const auto& [ch, v] : chapters.items()) {
      if (!std::regex_match(ch, std::regex("^ch0[1-9]$"))) input_error(cf.string(), "chapters." + ch, "not a chNN");
      if (!v.is_object()) input_error(cf.string(), "chapters." + ch, "expected an object");
      only_keys(v, cf.string(), "chapters." + ch + ".", {"title"});
      titles[ch] = get_string(v, cf.string(), "chapters." + ch + ".", "title");
    }
  }
  std::map<std::string, Expected> out;
  for (const auto& f : files) {
    Expected e = load_expected_file(f);
    if (!titles.empty()) {
      const auto t = titles.find(e.chapter);
      if (t == titles.end())
        input_error((dir / "chapters.json").string(), "chapters." + e.chapter, "missing (" + f.string() + " is in it)");
      e.chapter_title = t->second;
    }
    const std::string id = e.id;
    if (!out.emplace(id, std::move(e)).second) input_error(f.string(), "id", "'" + id + "' appears twice");
  }
  if (out.empty()) input_error(dir.string(), "(dir)", "holds no expected files (chNN/<name>.json)");
  return out;
}

}  // namespace claimcheck
