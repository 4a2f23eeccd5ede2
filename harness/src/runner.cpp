#include "runner.h"

#include <fnmatch.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <sched.h>
#include <unistd.h>

#include "claimcheck/base/sha256.h"
#include "claimcheck/io.h"
#include "errors.h"
#include "module.h"
#include "records.h"
#include "registry.h"
#include "units.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

std::vector<std::string> labels_of(const Expected& e) {
  std::vector<std::string> l{e.chapter};
  l.insert(l.end(), e.kinds.begin(), e.kinds.end());
  l.insert(l.end(), e.requirements.begin(), e.requirements.end());
  if (e.pending) l.push_back("pending");
  return l;
}

std::vector<std::string> select_claims(const std::map<std::string, Expected>& cat, const Selection& sel) {
  std::set<std::string> chapters, labels;
  for (const auto& [id, e] : cat) {
    chapters.insert(e.chapter);
    for (const auto& l : labels_of(e)) labels.insert(l);
  }
  for (const auto& k : known_kinds()) labels.insert(k);
  for (const char* r : {"libtorch", "python", "gpu", "numpy", "pending"}) labels.insert(r);
  for (const auto& c : sel.chapters)
    if (!chapters.count(c))
      throw InputError("--chapter: unknown chapter '" + c + "'" +
                       did_you_mean(c, std::vector<std::string>(chapters.begin(), chapters.end())) + " (ch01 .. ch06)");
  for (const auto& l : sel.labels)
    if (!labels.count(l)) {
      std::string all;
      for (const auto& x : labels) all += (all.empty() ? "" : ", ") + x;
      throw InputError("--label: unknown label '" + l + "'" +
                       did_you_mean(l, std::vector<std::string>(labels.begin(), labels.end())) + " (" + all + ")");
    }
  for (const auto& pat : sel.claims) {
    bool hit = false;
    for (const auto& [id, e] : cat) hit |= fnmatch(pat.c_str(), id.c_str(), 0) == 0;
    if (!hit) {
      const bool glob = pat.find_first_of("*?[") != std::string::npos;
      std::vector<std::string> ids;
      for (const auto& [id, e] : cat) ids.push_back(id);
      throw InputError("--claim: " + std::string(glob ? "no claim id matches '" : "unknown claim id '") + pat + "'" +
                       (glob ? "" : did_you_mean(pat, ids)) + " (see `claimcheck list`)");
    }
  }
  std::vector<std::string> out;
  for (const auto& [key, e] : cat) {
    const std::string& id = key;  // a lambda captures no structured binding before clang 16
    if (!sel.chapters.empty() && std::find(sel.chapters.begin(), sel.chapters.end(), e.chapter) == sel.chapters.end())
      continue;
    if (!sel.claims.empty() && std::none_of(sel.claims.begin(), sel.claims.end(), [&](const std::string& p) {
          return fnmatch(p.c_str(), id.c_str(), 0) == 0;
        }))
      continue;
    if (!sel.labels.empty()) {
      const auto l = labels_of(e);
      if (std::none_of(sel.labels.begin(), sel.labels.end(),
                       [&](const std::string& x) { return std::find(l.begin(), l.end(), x) != l.end(); }))
        continue;
    }
    out.push_back(id);
  }
  return out;
}

std::optional<std::string> Capabilities::missing(Requirement r) {
  auto it = cache_.find(r);
  if (it != cache_.end()) return it->second;
  std::optional<std::string> why;
  switch (r) {
    case Requirement::libtorch:
      if (torch_version().empty())
        why =
            "not built with LibTorch (point CLAIMCHECK_PYTHON at a Python with torch >= 2.4 and reconfigure: see the "
            "README)";
      break;
    case Requirement::gpu:
      if (!hw_ || !hw_->gpu) why = hw_ ? hw_->gpu_absent_reason : "no hardware probe";
      break;
    case Requirement::python:
      if (!run_command({python_interpreter(), "-c", "import sys"})) why = python_interpreter() + " not found";
      break;
    case Requirement::numpy:
      if (!run_command({python_interpreter(), "-c", "import numpy"}))
        why = "numpy is not importable by " + python_interpreter();
      break;
  }
  return cache_[r] = why;
}

namespace {

struct SkipSignal {
  std::string reason;
};

class ContextImpl final : public Context {
 public:
  ContextImpl(const Expected& e, const RunContextInputs& in, ClaimResult& r) : e_(e), in_(in), r_(r) {}

  const std::string& claim_id() const override { return e_.id; }

  fs::path input_path(const std::string& name) const override {
    const json& v = input(name);
    if (!v.is_string()) input_error(e_.file.string(), "inputs." + name, "expected a path string");
    fs::path p = v.get<std::string>();
    if (p.is_relative()) p = in_.root / p;
    if (!fs::exists(p)) input_error(e_.file.string(), "inputs." + name, "'" + p.string() + "' does not exist");
    return p;
  }
  const json& input(const std::string& name) const override {
    if (!e_.inputs.contains(name)) input_error(e_.file.string(), "inputs." + name, "missing (the check asks for it)");
    return e_.inputs.at(name);
  }

  void measure(double value, const std::string& unit) override { measure("value", value, unit); }
  void measure(const std::string& name, double value, const std::string& unit) override {
    if (!std::isfinite(value))
      input_error(e_.id, "measured." + name, "is " + std::string(std::isnan(value) ? "NaN" : "infinite"));
    if (unit.empty()) input_error(e_.id, "measured." + name, "has no unit");
    if (!known_unit(unit)) input_error(e_.id, "measured." + name, "unknown unit '" + unit + "'");
    add(name, value, unit);
  }
  void measure_bool(const std::string& name, bool value) override { add(name, value, "bool"); }
  void derive(const std::string& name, double value, const std::string& unit) override {
    const Source* source = derived_source(e_.id, name);
    if (!source)
      input_error(e_.id, "derived." + name,
                  "is derived without a declared source: its registration names it (.derives(\"" + name +
                      "\", claimcheck::Source::probe / reference / under_test))");
    if (!std::isfinite(value)) input_error(e_.id, "derived." + name, "is not finite");
    derived_[name] = value;
    r_.details["derived"][name] = {{"value", value}, {"unit", unit}, {"source", to_string(*source)}};
  }
  void assumption(const std::string& text) override { r_.assumptions.push_back(text); }
  void alternative(const std::string& name, double value, const std::string& unit,
                   const std::string& assumptions) override {
    r_.alternatives.push_back({{"name", name}, {"value", value}, {"unit", unit}, {"assumptions", assumptions}});
  }
  void detail(const std::string& key, const json& value) override { r_.details[key] = value; }
  void pending(const std::string& what) override { r_.pending_parts.push_back(what); }
  [[noreturn]] void skip(const std::string& reason) override { throw SkipSignal{reason}; }
  std::uint64_t seed() const override { return in_.seed; }
  const HardwareInfo& hardware() const override { return *in_.hardware; }
  json records() const override { return in_.records ? in_.records() : json(nullptr); }
  const fs::path& root() const override { return in_.root; }
  const std::string& planted_fault() const override { return in_.planted_fault; }
  bool wants(const std::string& statement) const override { return statement_selected(in_.statements, statement); }
  bool wants_only(std::initializer_list<const char*> names) const override {
    return std::all_of(e_.statements.begin(), e_.statements.end(), [&](const Statement& s) {
      return !statement_selected(in_.statements, s.name) ||
             std::any_of(names.begin(), names.end(), [&](const char* n) { return s.name == n; });
    });
  }
  bool timing_judged() const override {
    return e_.timed && std::any_of(e_.statements.begin(), e_.statements.end(), [&](const Statement& s) {
             return !s.untimed && statement_selected(in_.statements, s.name);
           });
  }
  bool part_selected(const std::string& kind) const override {
    if (kind == "measured" && in_.hardware && !in_.hardware->emulated.empty()) return false;  // nothing timed there
    if (kind == "measured" && !measured_part_judged(e_, in_.statements)) return false;
    return kind_selected(in_.selected_labels, kind);
  }

  fs::path keep_file(const std::string& name) override {
    if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
      input_error(e_.id, "keep_file", "'" + name + "' is not a plain file name");
    const fs::path base =
        in_.artifact_dir.empty() ? fs::temp_directory_path() / "claimcheck-artifacts" : in_.artifact_dir;
    const fs::path dir = base / e_.id;
    fs::create_directories(dir);
    kept_.push_back(dir / name);
    return kept_.back();
  }

  const std::map<std::string, double>& derived() const { return derived_; }
  const std::vector<fs::path>& kept() const { return kept_; }

 private:
  void add(const std::string& name, const json& value, const std::string& unit) {
    for (const auto& m : r_.measurements)
      if (m.name == name) input_error(e_.id, "measured." + name, "measured twice");
    Measurement m;
    m.name = name;
    m.value = value;
    m.unit = unit;
    r_.measurements.push_back(m);
  }

  const Expected& e_;
  const RunContextInputs& in_;
  ClaimResult& r_;
  std::map<std::string, double> derived_;
  std::vector<fs::path> kept_;
};

// The files a check kept, hashed here (not by the check): path, bytes, sha256.
json hash_kept(const std::vector<fs::path>& files) {
  json out = json::array();
  for (const auto& p : files) {
    std::ifstream in(p, std::ios::binary);
    if (!in) throw std::runtime_error(p.string() + ": the check kept this file but did not write it");
    Sha256 h;
    std::uintmax_t bytes = 0;
    char buf[1 << 16];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
      h.update(buf, static_cast<std::size_t>(in.gcount()));
      bytes += static_cast<std::uintmax_t>(in.gcount());
    }
    out.push_back({{"path", p.string()}, {"bytes", bytes}, {"sha256", h.hex()}});
  }
  return out;
}

ClaimResult base_result(const Expected& e) {
  ClaimResult r;
  r.id = e.id;
  r.chapter = e.chapter;
  r.chapter_title = e.chapter_title;
  r.title = e.title;
  r.source = e.source;
  r.kinds = e.kinds;
  r.requirements = e.requirements;
  r.setup_specific = e.setup_specific;
  r.stated = {{"value", e.statements[0].value}, {"unit", e.statements[0].unit}};
  r.measured = nullptr;
  return r;
}

// Compare every statement of the expected file (those the run selects: --statement) with what the check measured.
void judge(const Expected& e, const std::map<std::string, double>& derived, const HardwareInfo* hw,
           const std::vector<std::string>& selected, ClaimResult& r) {
  for (const auto& s0 : e.statements) {
    if (!statement_selected(selected, s0.name)) continue;
    Statement s = s0;
    std::pair<std::string, std::string> chosen;  // the variant that applies and the property that chose it
    const std::string at = s.name == "value" ? "" : "also." + s.name + ".";  // the statement's place in its file
    std::string compare_field = at + "compare";
    if (!variant_matches(s0.applies, hw, derived)) {  // a statement of a form that does not run here
      r.details["not_applicable"][s.name] = s0.applies.text;
      continue;
    }
    for (std::size_t vi = 0; vi < s0.variants.size(); ++vi) {
      const auto& v = s0.variants[vi];
      if (!variant_matches(v.condition, hw, derived)) continue;
      const std::string field = at + "variants[" + std::to_string(vi) + "]";
      s.compare = v.compare;
      compare_field = field + ".compare";
      s.compare.why = with_figures(v.compare.why, derived, r.measurements, e.file.string(), field + ".compare.why");
      r.details["variant"][s.name] = v.condition.text;
      chosen = {v.condition.text, variant_because(v.condition, hw, derived)};
      if (v.xfail) {  // refuted on machines of this variant (a claim-level xfail would refute it everywhere)
        s.xfail = true;
        s.xfail_reason =
            with_figures(v.xfail_reason, derived, r.measurements, e.file.string(), field + ".xfail_reason");
      }
      break;
    }
    auto it = std::find_if(r.measurements.begin(), r.measurements.end(),
                           [&](const Measurement& m) { return m.name == s.name; });
    if (it == r.measurements.end() && s.measured_part && !r.pending_parts.empty()) continue;  // listed as pending
    if (it == r.measurements.end())
      input_error(e.file.string(), s.name == "value" ? "value" : "also." + s.name,
                  "the check did not measure '" + s.name + "'");
    Measurement& m = *it;
    m.compared = true;
    // A claim with both parts: a statement marked "part": "measured" is the measured part's, the others the analytic's.
    const auto has = [&](const char* k) { return std::find(e.kinds.begin(), e.kinds.end(), k) != e.kinds.end(); };
    if (has("analytic") && has("measured")) m.part = s.measured_part ? "measured" : "analytic";
    m.stated = s.value;
    m.why = s.compare.why;
    m.evidence = s.compare.evidence;
    m.basis = s.compare.basis;
    m.expected_failure = s.xfail;
    m.variant = chosen.first;
    m.variant_because = chosen.second;
    m.xfail_reason = s.xfail && !(r.details.contains("variant") &&
                                  r.details["variant"].contains(s.name))  // a variant's reason has its figures already
                         ? with_figures(s.xfail_reason, derived, r.measurements, e.file.string(),
                                        (s.name == "value" ? "" : "also." + s.name + ".") + std::string("xfail_reason"))
                         : s.xfail_reason;
    if (s.value.is_boolean() != m.value.is_boolean())
      input_error(e.file.string(), s.name == "value" ? "unit" : "also." + s.name + ".unit",
                  "stated as " + s.unit + " but measured as " + m.unit);
    if (s.value.is_boolean()) {
      m.ok = m.value.get<bool>() == s.value.get<bool>();
      m.verdict = std::string(m.value.get<bool>() ? "true" : "false") + (m.ok ? " as stated" : ", stated ") +
                  (m.ok ? "" : (s.value.get<bool>() ? "true" : "false"));
      m.against = s.value.get<bool>() ? "true" : "false";
      if (s.name == "value") r.measured = {{"value", m.value}, {"unit", "bool"}};
      continue;
    }
    auto conv = convert_unit(m.value.get<double>(), m.unit, s.unit);
    if (!conv)
      input_error(e.file.string(), s.name == "value" ? "unit" : "also." + s.name + ".unit",
                  "stated in '" + s.unit + "' but the check measured '" + m.unit + "'");
    Verdict v = compare_scalar(s.compare, *conv, s.value.get<double>(), derived, s.unit);
    // A rule that needs a figure the check did not derive judges nothing: an error naming the field (on an expected
    // failure it would otherwise read as the refutation).
    if (!v.judged) input_error(e.file.string(), compare_field, v.text);
    // A figure that is no number (NaN, an overflow) refutes nothing: on an expected failure it fails.
    if (s.xfail && !std::isfinite(*conv)) m.expected_failure = false;
    m.ok = v.ok;
    m.verdict = v.text;
    m.against = v.against;
    m.accept_lo = v.accept_lo;
    m.accept_hi = v.accept_hi;
    if (s.name == "value") r.measured = {{"value", *conv}, {"unit", s.unit}};
  }
}

}  // namespace

void refuse_selectors_under_test(const std::map<std::string, Expected>& catalogue) {
  for (const auto& [key, e] : catalogue) {
    const std::string& id = key;  // a lambda captures no structured binding before clang 16
    const auto& reg = registry();
    const bool loaded =
        std::any_of(reg.begin(), reg.end(), [&](const CheckInfo& c) { return c.id == id; }) &&
        std::none_of(reg.begin(), reg.end(), [&](const CheckInfo& c) { return c.id == id && in_unloaded_module(c); });
    if (!loaded) continue;
    for (const auto& st : e.statements)
      for (std::size_t vi = 0; vi < st.variants.size(); ++vi)
        for (const auto& all : st.variants[vi].condition.any_of)
          for (const auto& term : all) {
            if (term.atom.rfind("derived:", 0) != 0) continue;
            const std::string name = term.atom.substr(8, term.atom.find_first_of("<>") - 8);
            const std::string field =
                (st.name == "value" ? "" : "also." + st.name + ".") + "variants[" + std::to_string(vi) + "].when";
            const Source* source = derived_source(id, name);
            if (!source)
              input_error(e.file.string(), field,
                          "derived:" + name + " is not a value the check of " + id +
                              " declares (.derives at its registration)");
            if (*source == Source::under_test)
              input_error(e.file.string(), field,
                          "derived:" + name +
                              " is computed by the code under test: a variant may be chosen only by the "
                              "machine, the probe or a reference");
          }
  }
}

// Whether one atom of a variant's condition holds here (FeatureExpr; the syntax was checked on loading).
namespace {
std::optional<bool> atom_holds(const std::string& t, const HardwareInfo* hw,
                               const std::map<std::string, double>& derived) {
  if (t.rfind("derived:", 0) == 0) {
    const auto op = t.find_first_of("<>", 8);
    const auto it = derived.find(t.substr(8, op - 8));
    if (op == std::string::npos || it == derived.end()) return std::nullopt;  // not derived here: not ours either way
    const double x = std::strtod(t.c_str() + op + 1, nullptr);
    return t[op] == '>' ? it->second > x : it->second < x;
  }
  if (!hw) return std::nullopt;
  if (t.rfind("isa:", 0) == 0) return hw->has_isa(t.substr(4));
  if (t == "gpu") return hw->gpu.has_value();
  Requirement r;
  if (parse_requirement(t, &r)) return !Capabilities(hw).missing(r).has_value();  // libtorch, python, numpy
  return false;
}
}  // namespace

bool variant_matches(const FeatureExpr& when, const HardwareInfo* hw, const std::map<std::string, double>& derived) {
  return feature_holds(when, [&](const std::string& atom) { return atom_holds(atom, hw, derived); });
}

std::string variant_because(const FeatureExpr& when, const HardwareInfo* hw,
                            const std::map<std::string, double>& derived) {
  if (when.any_of.empty()) return "no other variant's condition holds here";
  for (const auto& all : when.any_of) {
    std::string out;
    bool holds = true;
    for (const auto& t : all) {
      const std::optional<bool> v = atom_holds(t.atom, hw, derived);
      holds &= v.has_value() && *v != t.negated;
      std::string told = t.atom;
      if (t.atom.rfind("derived:", 0) == 0) {  // the figure that chose it
        const auto op = t.atom.find_first_of("<>", 8);
        const auto it = derived.find(t.atom.substr(8, op - 8));
        if (it != derived.end()) {
          char buf[64];
          std::snprintf(buf, sizeof buf, "%.3g", it->second);
          told = t.atom.substr(8, op - 8) + " = " + buf + " " + t.atom.substr(op);
        }
      } else {
        told = (v.value_or(false) ? "" : "not ") + t.atom + (t.atom == "gpu" ? "" : " (this machine)");
      }
      out += (out.empty() ? "" : " and ") + told;
    }
    if (holds) return out;
  }
  return "";
}

// A reason with this run's figures: "{NAME}" becomes the derived value or the measurement NAME (3 significant
// digits). A name the check gave no figure for is an error naming the expected file's field.
std::string with_figures(const std::string& text, const std::map<std::string, double>& derived,
                         const std::vector<Measurement>& ms, const std::string& file, const std::string& field) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const auto open = text.find('{', i);
    const auto close = open == std::string::npos ? open : text.find('}', open);
    if (close == std::string::npos) {
      out += text.substr(i);
      break;
    }
    out += text.substr(i, open - i);
    const std::string name = text.substr(open + 1, close - open - 1);
    double v = 0;
    bool found = false;
    if (auto it = derived.find(name); it != derived.end()) v = it->second, found = true;
    for (const auto& m : ms)
      if (!found && m.name == name && m.value.is_number()) v = m.value.get<double>(), found = true;
    if (!found) input_error(file, field, "the reason names {" + name + "}, a figure the check did not give");
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    out += buf;
    i = close + 1;
  }
  return out;
}

namespace {
std::map<std::string, Driver>& drivers() {
  static std::map<std::string, Driver> d;
  return d;
}
// The check of a claim whose expected file names a driver: the script, with {seed} and {inputs.NAME} filled in.
void driver_check(Context& ctx) {
  const Driver& d = drivers().at(ctx.claim_id());
  std::vector<std::string> args;
  for (const auto& a : d.args) {
    if (a == "{seed}") {
      args.push_back(std::to_string(ctx.seed()));
    } else if (a.rfind("{inputs.", 0) == 0 && a.back() == '}') {
      const json& v = ctx.input(a.substr(8, a.size() - 9));
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.17g", v.is_number() ? v.get<double>() : 0.0);
      args.push_back(v.is_string() ? v.get<std::string>() : std::string(buf));
    } else {
      args.push_back(a);
    }
  }
  if (!fs::exists(ctx.root() / d.script))
    throw std::runtime_error(ctx.claim_id() + ": field 'driver.script': " + (ctx.root() / d.script).string() +
                             " does not exist");
  forward_driver_result(ctx, run_python_driver(ctx, d.script, args));
}
}  // namespace

void register_drivers(const std::map<std::string, Expected>& catalogue) {
  auto& reg = registry();
  reg.erase(std::remove_if(reg.begin(), reg.end(), [](const CheckInfo& c) { return c.fn == &driver_check; }),
            reg.end());
  drivers().clear();
  for (const auto& [id, e] : catalogue) {
    if (!e.driver) continue;
    if (const CheckInfo* c = find_check(id))
      input_error(e.file.string(), "driver",
                  "the check of '" + id + "' is also registered at " + location(*c) + ": one or the other");
    drivers()[id] = *e.driver;
    CheckInfo c;
    c.id = id;
    c.fn = &driver_check;
    c.fn_name = "driver";
    c.file = e.driver->script;
    c.derives = e.driver->derives;
    reg.push_back(c);
  }
}

bool statement_selected(const std::vector<std::string>& selected, const std::string& name) {
  return selected.empty() || std::find(selected.begin(), selected.end(), name) != selected.end();
}

bool measured_part_judged(const Expected& e, const std::vector<std::string>& selected) {
  return selected.empty() || std::any_of(e.statements.begin(), e.statements.end(), [&](const Statement& st) {
           return st.measured_part && statement_selected(selected, st.name);
         });
}

bool kind_selected(const std::vector<std::string>& labels, const std::string& kind) {
  bool any_kind = false;
  for (const auto& l : labels) {
    if (l == kind) return true;
    any_kind |= std::find(known_kinds().begin(), known_kinds().end(), l) != known_kinds().end();
  }
  return !any_kind;
}

namespace {
// "needs <requirement>: <why>" for the first requirement of `c` this build or machine lacks; nullopt when it runs here.
std::optional<std::string> lacking(const CheckInfo& c, Capabilities& caps) {
  for (Requirement r : c.needs)
    if (auto why = caps.missing(r)) return std::string("needs ") + to_string(r) + ": " + *why;
  return std::nullopt;
}
bool runs_here(const CheckInfo& c, Capabilities& caps) { return !lacking(c, caps); }
}  // namespace

bool needs_module(const std::string& id, const std::vector<std::string>& labels, Capabilities& caps) {
  const CheckInfo* check = find_check(id);
  if (!check || !runs_here(*check, caps)) return false;
  if (in_unloaded_module(*check)) return true;
  const CheckInfo* part = find_part(id, "measured");
  return part && kind_selected(labels, "measured") && in_unloaded_module(*part) && runs_here(*part, caps);
}

CpuJiffies parse_proc_stat(const std::string& text, const std::vector<int>& cpus) {
  CpuJiffies j;
  std::istringstream in(text);
  int matched = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream ls(line);
    std::string name;
    ls >> name;
    if (cpus.empty() ? name != "cpu" : name == "cpu") continue;
    if (!cpus.empty()) {
      const std::string n = name.substr(3);
      if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) continue;
      if (std::find(cpus.begin(), cpus.end(), std::stoi(n)) == cpus.end()) continue;
    }
    double v[8] = {};
    for (double& x : v) ls >> x;  // user nice system idle iowait irq softirq steal (guest, guest_nice: inside user)
    j.busy += v[0] + v[1] + v[2] + v[5] + v[6];
    j.steal += v[7];
    if (!cpus.empty()) ++matched;
  }
  if (!cpus.empty() && matched == 0) return parse_proc_stat(text, {});
  j.cpus = matched;
  return j;
}

MachineLoad load_between(const CpuJiffies& before, const CpuJiffies& after, double own_jiffies, double wall_s, int cpus,
                         double hz) {
  const double capacity = std::max(1e-9, wall_s * std::max(1, cpus) * hz);
  MachineLoad l;
  l.cpus = std::max(1, cpus);
  l.others = std::clamp(((after.busy - before.busy) - own_jiffies) / capacity, 0.0, 1.0);
  l.steal = std::clamp((after.steal - before.steal) / capacity, 0.0, 1.0);
  return l;
}

namespace {
CpuJiffies read_jiffies(const std::vector<int>& cpus) {
  std::ifstream f("/proc/stat");
  std::stringstream buf;
  buf << f.rdbuf();
  return parse_proc_stat(buf.str(), cpus);
}
std::vector<int> affinity_cpus() {
  std::vector<int> out;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;  // (empty: the whole machine)
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) out.push_back(c);
  return out;
}
// This process's CPU time and that of its children waited for (the Python drivers, torchrun), in jiffies.
double own_jiffies() {
  std::ifstream f("/proc/self/stat");
  std::string line;
  std::getline(f, line);
  const auto close = line.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string tok;
  double own = 0;
  for (int field = 3; rest >> tok && field <= 17; ++field)
    if (field >= 14) own += std::strtod(tok.c_str(), nullptr);  // utime stime cutime cstime
  return own;
}
double wall_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

LoadWatch::LoadWatch() : cpus_(affinity_cpus()) {
  wall0_ = wall_seconds();
  start_ = read_jiffies(cpus_);
  own0_ = own_jiffies();
}

MachineLoad LoadWatch::stop() const {
  const CpuJiffies now = read_jiffies(cpus_);
  // The CPUs whose lines were read (the aggregate line's: every online CPU).
  const int cpus = now.cpus > 0 ? now.cpus : static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  return load_between(start_, now, own_jiffies() - own0_, wall_seconds() - wall0_, cpus,
                      static_cast<double>(sysconf(_SC_CLK_TCK)));
}

bool interference_may_explain(const Expected& e, const ClaimResult& r) {
  if (r.status == Status::xpass || r.status == Status::error) return true;
  if (r.status != Status::fail) return false;
  for (const Measurement& m : r.measurements) {
    if (!m.compared || m.ok || m.expected_failure) continue;
    for (const Statement& s : e.statements)
      if (s.name == m.name && s.untimed) return false;
  }
  return true;
}

ClaimResult run_claim_watched(const Expected& e, const RunContextInputs& in, Capabilities& caps, int tries,
                              double pause_s) {
  if (!e.timed) return run_claim(e, in, caps);
  json loads = json::array();
  ClaimResult r;
  for (int t = 0; t < std::max(1, tries); ++t) {
    if (t > 0) std::this_thread::sleep_for(std::chrono::duration<double>(pause_s));
    const LoadWatch watch;
    r = run_claim(e, in, caps);
    const MachineLoad l = watch.stop();
    loads.push_back({{"status", to_string(r.status)}, {"others", l.others}, {"steal", l.steal}, {"cpus", l.cpus}});
    if (!interference_may_explain(e, r) || l.busy() <= kBusyShare) {
      if (t > 0 || l.busy() > kBusyShare) r.details["interference"] = loads;
      return r;
    }
  }
  // Busy on every try: no verdict is owed to a machine shared this much.
  char buf[240];
  const json& last = loads.back();
  std::snprintf(
      buf, sizeof buf,
      "interference: other processes took %.0f%% of the %d CPUs this run may use (steal %.0f%%) on each of %zu "
      "runs of this timed claim; not judged (its last verdict: ",
      100 * last["others"].get<double>(), last["cpus"].get<int>(), 100 * last["steal"].get<double>(), loads.size());
  r.reason = std::string(buf) + to_string(r.status) + ", " + r.reason + ")";
  r.status = Status::error;
  r.details["interference"] = loads;
  return r;
}

ClaimResult run_claim(const Expected& e, const RunContextInputs& in, Capabilities& caps) {
  ClaimResult r = base_result(e);
  const auto t0 = std::chrono::steady_clock::now();
  const CheckInfo* check = find_check(e.id);
  if (e.pending) {
    r.status = Status::skip;
    r.not_implemented = true;
    r.reason = "not implemented yet: " + *e.pending;
    if (check) {
      r.status = Status::error;
      r.not_implemented = false;
      r.reason = e.file.string() + ": field 'pending': a check is registered at " + check->file + ":" +
                 std::to_string(check->line) + "; remove the marker";
    }
    return r;
  }
  if (!check) {
    r.status = Status::error;
    r.reason = "no check is registered for '" + e.id + "' (and its expected file is not marked pending)";
    return r;
  }
  r.check_location = location(*check);
  if (!in.planted_fault.empty()) r.details["planted_fault"] = in.planted_fault;
  if (auto why = lacking(*check, caps)) {
    r.status = Status::skip;
    r.reason = *why;
    return r;
  }
  if (!check->fn) {  // a module check whose module the run did not load (cli.cpp loads it first)
    r.status = Status::error;
    r.reason = "the check of '" + e.id + "' is in the LibTorch checks module, which is not loaded";
    return r;
  }
  const CheckInfo* part = find_part(e.id, "measured");
  // On an emulated CPU (probe.h: HardwareInfo::emulated) a time measures the emulator: a measured claim skips, the
  // measured part of another stays pending, each with the reason.
  const std::string emulated = in.hardware ? in.hardware->emulated : "";
  const bool measured_kind = std::find(e.kinds.begin(), e.kinds.end(), "measured") != e.kinds.end();
  if (!emulated.empty() && measured_kind && e.kinds.size() == 1) {
    r.status = Status::skip;
    r.reason = "measured on an emulated CPU: " + emulated;
    return r;
  }
  ContextImpl ctx(e, in, r);
  try {
    check->fn(ctx);
    const bool emulated_part = !emulated.empty() && measured_kind && kind_selected(in.selected_labels, "measured");
    if (emulated_part) ctx.pending("the measured part: measured on an emulated CPU: " + emulated);
    if (part && !emulated_part) {
      const auto lacks = lacking(*part, caps);
      if (!measured_part_judged(e, in.statements))
        ctx.pending("the measured part: not selected (--statement names none of its statements)");
      else if (!ctx.part_selected("measured"))
        ctx.pending("the measured part: not selected (the run asked for other kinds)");
      else if (lacks)
        ctx.pending("the measured part " + *lacks);
      else if (!part->fn)
        throw std::runtime_error("the measured part of '" + e.id +
                                 "' is in the LibTorch checks module, which is not loaded");
      else
        part->fn(ctx);
    }
    if (!ctx.kept().empty()) r.details["kept_files"] = hash_kept(ctx.kept());
    judge(e, ctx.derived(), in.hardware, in.statements, r);
    fold_outcome(r);
    // Only the statements asked for were judged (--statement): never a pass of the claim (an expected failure among
    // them still reads as one, a fault or a moved value as a failure).
    if (!in.statements.empty()) {
      std::string names;
      for (const auto& n : in.statements) names += (names.empty() ? "" : ", ") + n;
      r.details["statements_selected"] = in.statements;
      if (r.status == Status::pass) {
        std::string held;
        for (const auto& m : r.measurements)
          if (m.compared) held += (held.empty() ? "" : "; ") + m.name + ": " + m.verdict;
        r.status = Status::partial;
        r.reason = held + " — only these statements were judged (--statement): " + names;
      }
    }
    // Every judged statement held but a part of the claim was not judged: partial, never a pass.
    if (r.status == Status::pass && !r.pending_parts.empty()) {
      r.status = Status::partial;
      std::string pending;
      for (const auto& p : r.pending_parts) pending += (pending.empty() ? "" : "; ") + p;
      r.reason += " — pending: " + pending;
    }
    // A check's own account of a failure (details.cause: where two runs first part, say) follows the verdict.
    if ((r.status == Status::fail || r.status == Status::xpass) && r.details.contains("cause") &&
        r.details["cause"].is_string())
      r.reason += " — " + r.details["cause"].get<std::string>();
  } catch (const SkipSignal& s) {
    r.status = Status::skip;
    r.reason = s.reason;
  } catch (const std::exception& ex) {
    r.status = Status::error;
    std::string what = ex.what();  // LibTorch appends a multi-line backtrace: keep the first line
    r.reason = what.substr(0, what.find('\n'));
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace claimcheck
