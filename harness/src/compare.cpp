#include "compare.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "claimcheck/base/json_depth.h"
#include "errors.h"
#include "outcome.h"
#include "report.h"
#include "tolerance.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string type_of(const json& v) { return v.type_name(); }

// A figure is a number, a bool, or null (a NaN, or a check that measured nothing).
void need_figure(const std::string& f, const std::string& path, const json& v) {
  if (!v.is_number() && !v.is_boolean() && !v.is_null()) input_error(f, path, "expected a number, got " + type_of(v));
}
void need_string(const std::string& f, const std::string& path, const json& o, const char* key, bool required) {
  if (!o.contains(key)) {
    if (required) input_error(f, path + key, "missing");
    return;
  }
  if (!o[key].is_string()) input_error(f, path + key, "expected a string, got " + type_of(o[key]));
  if (required && o[key].get<std::string>().empty()) input_error(f, path + key, "empty");
}
void need_bool(const std::string& f, const std::string& path, const json& o, const char* key) {
  if (o.contains(key) && !o[key].is_boolean()) input_error(f, path + key, "expected a bool, got " + type_of(o[key]));
}

bool bad(const std::string& s) { return s == "fail" || s == "error" || s == "xpass"; }
bool good(const std::string& s) { return s == "pass" || s == "xfail"; }
std::string label(const json& c) {
  const std::string s = c["status"];
  return s == "skip" && c.value("not_implemented", false) ? "not implemented" : s;
}

// A claim's figures by name: the primary ("value", in the stated unit) and the named parts of details.measurements.
struct Figure {
  json value, unit;
  bool compared = false, ok = false, expected_failure = false;
  std::string variant;  // the `when` of the variant that judged it ("" where its statement has none)
};
std::map<std::string, Figure> figures_of(const json& c) {
  std::map<std::string, Figure> out;
  const json none = json::object();
  const json& d = c.contains("details") ? c["details"] : none;
  for (const auto& m : d.value("measurements", json::array())) {
    Figure& x = out[m["name"].get<std::string>()];
    x = {m.value("value", json()), m.value("unit", json("")),      m.value("compared", false),
         m.value("ok", false),     m.contains("expected_failure"), ""};
    if (m.contains("variant") && m["variant"].is_object() && m["variant"].contains("when") &&
        m["variant"]["when"].is_string())
      x.variant = m["variant"]["when"].get<std::string>();
  }
  if (c["measured"].is_object()) {  // the primary as the report shows it, converted to the stated unit
    out["value"].value = c["measured"].value("value", json());
    out["value"].unit = c["measured"].value("unit", json(""));
  }
  return out;
}

// The row's per-repetition ratios (ci/bench_ratios.py writes them as "samples"); empty where the row has none.
std::vector<double> samples_of(const json& row) {
  std::vector<double> v;
  if (row.contains("samples") && row["samples"].is_array())
    for (const auto& x : row["samples"])
      if (x.is_number() && std::isfinite(x.get<double>())) v.push_back(x.get<double>());
  return v;
}
double median_of(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A time ratio (its name says "time": NF4 time / bf16 time) is better lower; a speed-up or a share of a roof higher.
bool higher_is_better(const json& row) {
  if (row.contains("higher_is_better")) return row["higher_is_better"].get<bool>();
  return row["name"].get<std::string>().find("time") == std::string::npos;
}

std::string percent(double x) { return fmt(std::round(x * 1000) / 10) + " %"; }
std::string signed_percent(double x) { return (x > 0 ? "+" : "") + percent(x); }

std::string md_cell_short(const std::string& s) { return md_cell(s, 200); }

std::string figure_text(const json& v, const json& unit) {
  if (v.is_null()) return "—";
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  const std::string u = unit.is_string() ? unit.get<std::string>() : "";
  return fmt(v.get<double>()) + (u.empty() || u == "bool" ? "" : " " + u);
}

json side(const json& r, const std::string& name) {
  auto text = [](const json& o, const char* k) {
    return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string();
  };
  const json& rec = r.contains("records") ? r["records"] : json();
  return {{"file", name},
          {"generated_at", text(r, "generated_at")},
          {"commit", rec.is_object() && rec.contains("commit") ? text(rec["commit"], "sha") : ""}};
}

}  // namespace

void check_benchmark_rows(const json& b, const std::string& f, const std::string& field) {
  if (!b.is_array()) input_error(f, field, "expected an array, got " + type_of(b));
  std::set<std::string> names;
  for (std::size_t i = 0; i < b.size(); ++i) {
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!b[i].is_object()) input_error(f, at, "expected an object, got " + type_of(b[i]));
    need_string(f, at + ".", b[i], "name", true);
    if (!names.insert(b[i]["name"].get<std::string>()).second)
      input_error(f, at + ".name", "'" + b[i]["name"].get<std::string>() + "' appears twice");
    if (!b[i].contains("ratio")) input_error(f, at + ".ratio", "missing");
    if (!b[i]["ratio"].is_number()) input_error(f, at + ".ratio", "expected a number, got " + type_of(b[i]["ratio"]));
    for (const char* k : {"cv", "spread"})
      if (b[i].contains(k) && !b[i][k].is_number() && !b[i][k].is_null())
        input_error(f, at + "." + k, "expected a number, got " + type_of(b[i][k]));
    if (b[i].contains("samples")) {
      if (!b[i]["samples"].is_array())
        input_error(f, at + ".samples", "expected an array, got " + type_of(b[i]["samples"]));
      for (std::size_t k = 0; k < b[i]["samples"].size(); ++k)
        if (!b[i]["samples"][k].is_number())
          input_error(f, at + ".samples[" + std::to_string(k) + "]",
                      "expected a number, got " + type_of(b[i]["samples"][k]));
    }
    need_bool(f, at + ".", b[i], "higher_is_better");
  }
}

json load_report_for_compare(const fs::path& p) {
  const std::string f = p.string();
  std::ifstream in(p, std::ios::binary);
  if (!in || fs::is_directory(p)) input_error(f, "(file)", "cannot be read");
  json j;
  try {
    j = json::parse(in, depth_guard());
  } catch (const std::exception& e) {  // parse_error, out_of_range beyond a double (1e400), JsonTooDeep
    input_error(f, "(json)", e.what());
  }
  if (!j.is_object()) input_error(f, "(json)", "expected an object, got " + type_of(j));
  if (!j.contains("schema")) input_error(f, "schema", "missing");
  if (j["schema"] != kReportSchema)
    input_error(f, "schema", std::string("expected '") + kReportSchema + "', got " + shown(j["schema"]));
  if (!j.contains("claims")) input_error(f, "claims", "missing");
  if (!j["claims"].is_array()) input_error(f, "claims", "expected an array, got " + type_of(j["claims"]));
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < j["claims"].size(); ++i) {
    const json& c = j["claims"][i];
    const std::string at = "claims[" + std::to_string(i) + "]";
    if (!c.is_object()) input_error(f, at, "expected an object, got " + type_of(c));
    need_string(f, at + ".", c, "id", true);
    if (!seen.emplace(c["id"].get<std::string>(), i).second)
      input_error(f, at + ".id",
                  "'" + c["id"].get<std::string>() + "' also at claims[" +
                      std::to_string(seen[c["id"].get<std::string>()]) + "]");
    need_string(f, at + ".", c, "status", true);
    Status s;
    if (!parse_status(c["status"].get<std::string>(), &s))
      input_error(f, at + ".status", "unknown status " + shown(c["status"]));
    need_bool(f, at + ".", c, "not_implemented");
    need_string(f, at + ".", c, "reason", false);
    if (!c.contains("measured")) input_error(f, at + ".measured", "missing");
    if (!c["measured"].is_null() && !c["measured"].is_object())
      input_error(f, at + ".measured", "expected an object or null, got " + type_of(c["measured"]));
    if (c["measured"].is_object()) {
      need_figure(f, at + ".measured.value", c["measured"].value("value", json()));
      need_string(f, at + ".measured.", c["measured"], "unit", false);
    }
    if (!c.contains("details")) continue;
    if (!c["details"].is_object()) input_error(f, at + ".details", "expected an object, got " + type_of(c["details"]));
    const json& ms = c["details"].value("measurements", json::array());
    if (!ms.is_array()) input_error(f, at + ".details.measurements", "expected an array, got " + type_of(ms));
    for (std::size_t k = 0; k < ms.size(); ++k) {
      const std::string mat = at + ".details.measurements[" + std::to_string(k) + "]";
      if (!ms[k].is_object()) input_error(f, mat, "expected an object, got " + type_of(ms[k]));
      need_string(f, mat + ".", ms[k], "name", true);
      need_figure(f, mat + ".value", ms[k].value("value", json()));
      need_string(f, mat + ".", ms[k], "unit", false);
      need_bool(f, mat + ".", ms[k], "compared");
      need_bool(f, mat + ".", ms[k], "ok");
    }
  }
  if (j.contains("benchmarks") && !j["benchmarks"].is_null()) check_benchmark_rows(j["benchmarks"], f, "benchmarks");
  return j;
}

double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n1 = a.size(), n2 = b.size(), n = n1 + n2;
  if (n1 == 0 || n2 == 0) return 1;
  std::vector<std::pair<double, int>> all;
  for (double x : a) all.emplace_back(x, 0);
  for (double x : b) all.emplace_back(x, 1);
  std::sort(all.begin(), all.end());
  double r1 = 0, ties = 0;  // rank sum of a; sum of t^3 - t over tied groups
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i;
    while (j < n && all[j].first == all[i].first) ++j;
    const double rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2, t = static_cast<double>(j - i);
    for (std::size_t k = i; k < j; ++k)
      if (all[k].second == 0) r1 += rank;
    ties += t * t * t - t;
    i = j;
  }
  const double u = r1 - static_cast<double>(n1) * (static_cast<double>(n1) + 1) / 2;
  const double mu = static_cast<double>(n1) * static_cast<double>(n2) / 2;
  const double sigma2 = static_cast<double>(n1) * static_cast<double>(n2) / 12 *
                        (static_cast<double>(n) + 1 - ties / (static_cast<double>(n) * (static_cast<double>(n) - 1)));
  if (!(sigma2 > 0)) return 1;
  const double z = std::max(0.0, std::fabs(u - mu) - 0.5) / std::sqrt(sigma2);
  return std::erfc(z / std::sqrt(2.0));
}

json compare_reports(const json& oldr, const std::string& old_name, const json& newr, const std::string& new_name,
                     const CompareOptions& opt) {
  std::map<std::string, const json*> olds, news;
  for (const auto& c : oldr["claims"]) olds[c["id"].get<std::string>()] = &c;
  for (const auto& c : newr["claims"]) news[c["id"].get<std::string>()] = &c;
  std::map<std::string, int> counts = {{"regression", 0}, {"improvement", 0}, {"changed", 0},
                                       {"added", 0},      {"unchanged", 0},   {"not compared", 0}};
  bool regression = false;
  // Whether NEW's run asked for all its claims' work (no --label, or one naming measured; no --statement): only then
  // is a part left pending, or a claim partial or skipped, a hatch rather than the selection's doing (an
  // analytic-only run lists every measured part as pending; a --statement run judges the statements it names).
  bool new_measures = true;
  if (newr.contains("records") && newr["records"].is_object() && newr["records"].contains("config") &&
      newr["records"]["config"].is_object()) {
    const json& config = newr["records"]["config"];
    const json labels = config.value("labels", json::array());
    if (labels.is_array() && !labels.empty())
      new_measures = std::any_of(labels.begin(), labels.end(), [](const json& l) { return l == "measured"; });
    const json statements = config.value("statements", json::array());
    if (statements.is_array() && !statements.empty()) new_measures = false;
  }

  // Claims, in NEW's order, then those only OLD has.
  json claims = json::array(), figures = json::array();
  int figures_still = 0;
  auto add_claim = [&](const std::string& id, const json* o, const json* n) {
    const std::string os = o ? label(*o) : "absent", ns = n ? label(*n) : "absent";
    std::string change, note;
    // The statements each report judged: a partial run (an analytic-only report) judged fewer.
    auto judged = [](const json* c) {
      std::set<std::string> names;
      if (c && c->contains("details") && (*c)["details"].is_object() && (*c)["details"].contains("measurements"))
        for (const auto& m : (*c)["details"]["measurements"])
          if (m.is_object() && m.value("compared", false) && m.contains("name") && m["name"].is_string())
            names.insert(m["name"].get<std::string>());
      return names;
    };
    const auto jo = judged(o), jn = judged(n);
    // A claim that was judged and now fails, errs, passes unexpectedly, is an expected failure, is left partial or
    // is skipped in a run that selected its work: a regression whatever statements the two reports judged (a
    // partial run hides improvements, never these).
    const bool worse = o && n && os != ns &&
                       ((bad(ns) && !bad(os)) ||
                        (os == "pass" && (ns == "xfail" || ((ns == "partial" || ns == "skip") && new_measures))));
    if (opt.only_common && (!o || !n)) {
      change = "not compared", note = std::string("only in ") + (o ? "OLD" : "NEW") + " (--all judges it)";
    } else if (opt.only_common && os != ns && jo != jn && !worse) {
      change = "not compared";
      note = "the reports judged different statements (" + std::to_string(jo.size()) + " in OLD, " +
             std::to_string(jn.size()) + " in NEW: a partial run; --all judges it)";
    } else if (!o)
      change = bad(ns) ? "regression" : "added";  // a new claim failing
    else if (!n)
      change = "regression";  // a claim disappearing
    else if (os == ns)
      change = "unchanged";
    else if (bad(ns) && !bad(os))
      change = "regression";  // pass -> fail, xfail -> xpass, skip -> error, ...
    else if (worse)
      change = "regression";  // a hatch opened: pass -> xfail; partial or skipped where its work was selected
    else if (good(ns) && !good(os))
      change = "improvement";
    else
      change = "changed";  // pass <-> skip, fail <-> error, pass <-> xfail
    // A hatch opening under a status that did not move: a statement judged by another variant, moving onto an
    // expected failure, or left pending in a run that selected every kind of work.
    std::vector<std::string> hatches;
    const bool judged_both = o && n && change != "not compared";
    const auto fo = judged_both ? figures_of(*o) : std::map<std::string, Figure>{};
    const auto fn = judged_both ? figures_of(*n) : std::map<std::string, Figure>{};
    if (judged_both) {
      std::set<std::string> pending_now;
      if (n->contains("details") && (*n)["details"].is_object())
        for (const auto& p : (*n)["details"].value("pending", json::array()))
          if (p.is_string()) pending_now.insert(p.get<std::string>());
      for (const auto& [name, a] : fo) {
        if (!a.compared) continue;
        const auto it = fn.find(name);
        if (it == fn.end() || !it->second.compared) {
          if (!pending_now.empty() && new_measures) hatches.push_back(name + " was judged and is now pending");
          continue;
        }
        const Figure& b = it->second;
        if (a.variant != b.variant)
          hatches.push_back(name + " is judged by another variant ('" + a.variant + "' then '" + b.variant + "')");
        if (!a.expected_failure && b.expected_failure) hatches.push_back(name + " became an expected failure");
      }
    }
    if (!hatches.empty() && change != "regression") {
      std::string all;
      for (const auto& h : hatches) all += (all.empty() ? "" : "; ") + h;
      change = "regression";
      note = all;
    }
    ++counts[change];
    regression |= change == "regression";
    const json& why = n ? *n : *o;
    claims.push_back({{"id", id},
                      {"old", os},
                      {"new", ns},
                      {"change", change},
                      {"reason", note.empty() ? why.value("reason", "") : note}});
    if (!judged_both) return;
    for (const auto& [name, b] : fn) {
      auto it = fo.find(name);
      if (it == fo.end() || it->second.value.is_null() || b.value.is_null()) continue;
      const Figure& a = it->second;
      json e = {{"claim", id},
                {"figure", name},
                {"unit", b.unit},
                {"old", a.value},
                {"new", b.value},
                {"move", nullptr},
                {"beyond_tolerance", false},
                {"regression", false}};
      bool moved = a.value != b.value;
      if (a.unit != b.unit)
        e["note"] = "unit changed from " + a.unit.dump() + " to " + b.unit.dump();
      else if (a.value.is_number() && b.value.is_number()) {
        const double x = a.value.get<double>(), y = b.value.get<double>();
        if (x != 0) e["move"] = (y - x) / std::fabs(x);
      } else if (a.value.type() != b.value.type())
        e["note"] = "not comparable: " + type_of(a.value) + " then " + type_of(b.value);
      // The tolerance a report records is its comparison around the stated figure (ok); there is no run-to-run one.
      std::string tol = "no tolerance recorded";
      if (a.compared && b.compared) {
        tol = a.ok == b.ok ? (b.ok ? "within its tolerance in both" : "outside its tolerance in both")
                           : (b.ok ? "moved back within its tolerance" : "moved out of its tolerance");
        e["beyond_tolerance"] = a.ok && !b.ok;
        // An expected failure regresses when it holds; any other comparison when it breaks.
        const bool worse = b.expected_failure ? !a.ok && b.ok : a.ok && !b.ok;
        e["regression"] = worse;
        regression |= worse;
        moved |= a.ok != b.ok;
        if (b.expected_failure) tol += " (an expected failure)";
      }
      e["tolerance"] = tol;
      if (moved)
        figures.push_back(e);
      else
        ++figures_still;
    }
  };
  for (const auto& c : newr["claims"]) {
    const std::string id = c["id"];
    add_claim(id, olds.count(id) ? olds[id] : nullptr, &c);
  }
  for (const auto& c : oldr["claims"])
    if (!news.count(c["id"].get<std::string>())) add_claim(c["id"].get<std::string>(), &c, nullptr);
  std::stable_sort(figures.begin(), figures.end(), [](const json& a, const json& b) {
    auto key = [](const json& e) { return e["move"].is_number() ? std::fabs(e["move"].get<double>()) : INFINITY; };
    if (a["beyond_tolerance"] != b["beyond_tolerance"]) return a["beyond_tolerance"].get<bool>();
    return key(a) > key(b);
  });

  // Benchmarks, joined by name.
  const json none = json::array();
  const json& ob = oldr.contains("benchmarks") && oldr["benchmarks"].is_array() ? oldr["benchmarks"] : none;
  const json& nb = newr.contains("benchmarks") && newr["benchmarks"].is_array() ? newr["benchmarks"] : none;
  std::map<std::string, const json*> orow, nrow;
  for (const auto& r : ob) orow[r["name"].get<std::string>()] = &r;
  for (const auto& r : nb) nrow[r["name"].get<std::string>()] = &r;
  json benches = json::array();
  std::map<std::string, int> bcounts;
  auto add_bench = [&](const std::string& name, const json* o, const json* n) {
    json e = {{"name", name},
              {"old", o ? (*o)["ratio"] : json()},
              {"new", n ? (*n)["ratio"] : json()},
              {"move", nullptr},
              {"regression", false}};
    std::string verdict, why;
    if (!o || !n) {
      verdict = o ? "removed" : "added";
    } else {
      const double x = (*o)["ratio"].get<double>(), y = (*n)["ratio"].get<double>();
      const std::vector<double> so = samples_of(*o), sn = samples_of(*n);
      const bool up = higher_is_better(*n);
      e["higher_is_better"] = up;
      e["repetitions_old"] = so.size();
      e["repetitions_new"] = sn.size();
      if (!(x > 0) || !(y > 0)) {
        verdict = "inconclusive", why = "a ratio that is not positive";
      } else if (so.size() < static_cast<std::size_t>(kMinRepetitions) ||
                 sn.size() < static_cast<std::size_t>(kMinRepetitions)) {
        e["move"] = y / x - 1;
        verdict = "inconclusive";
        why = std::to_string(so.size()) + " and " + std::to_string(sn.size()) + " repetitions: the U test needs " +
              std::to_string(kMinRepetitions) +
              " on each side (--benchmark_repetitions=" + std::to_string(kMinRepetitions) + ")";
      } else {
        const double d = median_of(sn) / median_of(so) - 1, p = mann_whitney_p(so, sn);
        e["move"] = d;
        e["p_value"] = p;
        const bool slower = up ? d < 0 : d > 0;
        if (p >= kAlpha) {
          verdict = "within noise";
        } else if (std::fabs(d) <= opt.margin) {
          verdict = "within margin";
        } else {
          verdict = slower ? "slower" : "faster";
          e["regression"] = slower;
          regression |= slower;
        }
      }
    }
    e["verdict"] = verdict;
    if (!why.empty()) e["why"] = why;
    ++bcounts[verdict];
    benches.push_back(e);
  };
  for (const auto& r : nb) {
    const std::string name = r["name"];
    add_bench(name, orow.count(name) ? orow[name] : nullptr, &r);
  }
  for (const auto& r : ob)
    if (!nrow.count(r["name"].get<std::string>())) add_bench(r["name"], &r, nullptr);

  json summary = {{"claims", counts},
                  {"benchmarks", bcounts},
                  {"figures_moved", figures.size()},
                  {"figures_unmoved", figures_still}};
  return {{"schema", kCompareSchema},
          {"old", side(oldr, old_name)},
          {"new", side(newr, new_name)},
          {"regression", regression},
          {"alpha", kAlpha},
          {"min_repetitions", kMinRepetitions},
          {"margin", opt.margin},
          {"only_common", opt.only_common},
          {"summary", summary},
          {"claims", claims},
          {"figures", figures},
          {"benchmarks", benches}};
}

std::string compare_markdown(const json& c) {
  std::ostringstream o;
  auto who = [](const json& s) {
    std::string t = "`" + s["file"].get<std::string>() + "`";
    if (!s["generated_at"].get<std::string>().empty()) t += ", generated " + s["generated_at"].get<std::string>();
    if (!s["commit"].get<std::string>().empty()) t += ", commit " + s["commit"].get<std::string>().substr(0, 12);
    return t;
  };
  auto count = [&](const char* part, const char* k) { return c["summary"][part].value(k, 0); };
  o << "# claimcheck compare\n\n- OLD: " << who(c["old"]) << "\n- NEW: " << who(c["new"]) << "\n\n";
  int fig_regr = 0, bench_regr = 0;
  for (const auto& f : c["figures"]) fig_regr += f["regression"].get<bool>();
  for (const auto& b : c["benchmarks"]) bench_regr += b["regression"].get<bool>();
  if (c["regression"].get<bool>())
    o << "**REGRESSION**: " << count("claims", "regression") << " claim(s), " << fig_regr << " figure(s), "
      << bench_regr << " benchmark(s).\n\n";
  else
    o << "No regression.\n\n";
  o << "Claims: " << count("claims", "regression") << " regressed, " << count("claims", "improvement") << " improved, "
    << count("claims", "changed") << " changed otherwise, " << count("claims", "added") << " added, "
    << count("claims", "unchanged") << " unchanged, " << count("claims", "not compared")
    << " not compared (in one report only, or judged on different statements).\n\n";

  o << "## Claims whose status changed\n\n";
  std::string same;
  int changed = 0;
  for (const auto& e : c["claims"]) {
    if (e["change"] == "unchanged") {
      same +=
          (same.empty() ? "" : ", ") + ("`" + e["id"].get<std::string>() + "` (" + e["new"].get<std::string>() + ")");
      continue;
    }
    if (!changed++) o << "| claim | OLD | NEW | change | reason |\n|---|---|---|---|---|\n";
    o << "| `" << e["id"].get<std::string>() << "` | " << e["old"].get<std::string>() << " | "
      << e["new"].get<std::string>() << " | "
      << (e["change"] == "regression" ? "**regression**" : e["change"].get<std::string>()) << " | "
      << md_cell_short(e["reason"].get<std::string>()) << " |\n";
  }
  o << (changed ? "\n" : "None.\n\n");
  if (!same.empty()) o << "Unchanged (" << count("claims", "unchanged") << "): " << same << "\n\n";

  o << "## Figures that moved\n\nThe move is (NEW - OLD) / |OLD|. The tolerance is the comparison each report "
       "records around the stated figure (whether it held); a report records no run-to-run tolerance.\n\n";
  if (c["figures"].empty())
    o << "None.\n\n";
  else
    o << "| claim | figure | OLD | NEW | move | tolerance |\n|---|---|---|---|---|---|\n";
  for (const auto& f : c["figures"]) {
    std::string tol = md_cell_short(f["tolerance"].get<std::string>());
    if (f["regression"].get<bool>()) tol = "**" + tol + "**";
    o << "| `" << f["claim"].get<std::string>() << "` | " << md_cell_short(f["figure"].get<std::string>()) << " | "
      << figure_text(f["old"], f["unit"]) << " | " << figure_text(f["new"], f["unit"]) << " | "
      << (f["move"].is_number() ? signed_percent(f["move"].get<double>()) : md_cell_short(f.value("note", "—")))
      << " | " << tol << " |\n";
  }
  if (!c["figures"].empty()) o << "\n";
  o << c["summary"]["figures_unmoved"].get<int>() << " figures present in both reports did not move.\n\n";

  o << "## Benchmarks\n\n";
  if (c["benchmarks"].empty()) {
    o << "Neither report has benchmark rows.\n";
    return o.str();
  }
  o << "Each row's per-repetition ratios, OLD against NEW, in a two-sided Mann-Whitney U test (alpha "
    << fmt(c["alpha"].get<double>()) << ", at least " << c["min_repetitions"].get<int>()
    << " repetitions on each side, else inconclusive); a ratio has moved when the test says so and the medians differ "
       "by more than the margin "
    << percent(c["margin"].get<double>()) << ". A time ratio is better lower, any other better higher.\n\n"
    << "| benchmark | OLD | NEW | move | repetitions | p | verdict |\n|---|---|---|---|---|---|---|\n";
  for (const auto& b : c["benchmarks"]) {
    std::string v = b["verdict"];
    if (b["regression"].get<bool>()) v = "**" + v + " (regression)**";
    if (b.contains("why")) v += ": " + md_cell_short(b["why"].get<std::string>());
    auto num = [](const json& x) { return x.is_number() ? fmt(x.get<double>()) : std::string("—"); };
    o << "| " << md_cell_short(b["name"].get<std::string>()) << " | " << num(b["old"]) << " | " << num(b["new"])
      << " | " << (b["move"].is_number() ? signed_percent(b["move"].get<double>()) : "—") << " | "
      << (b.contains("repetitions_old") ? std::to_string(b["repetitions_old"].get<int>()) + " / " +
                                              std::to_string(b["repetitions_new"].get<int>())
                                        : "—")
      << " | " << (b.contains("p_value") ? fmt(b["p_value"].get<double>()) : "—") << " | " << v << " |\n";
  }
  return o.str();
}

void write_files_atomically(const std::vector<std::pair<fs::path, std::string>>& files) {
  // Everything that would stop a rename is refused before a byte is written: a folder in the way, one path named
  // twice (the second write would replace the first).
  std::set<fs::path> seen;
  std::error_code ec;
  for (const auto& [path, text] : files) {
    if (fs::is_directory(path, ec)) input_error(path.string(), "(file)", "is a folder, not a file");
    if (!seen.insert(fs::weakly_canonical(fs::absolute(path), ec)).second)
      input_error(path.string(), "(file)", "named twice as an output");
  }
  std::vector<fs::path> tmps;
  const auto fail = [&](const fs::path& path, const std::string& why) {
    for (const auto& t : tmps) fs::remove(t, ec);  // nothing half-written left behind
    input_error(path.string(), "(file)", why);
  };
  for (const auto& [path, text] : files) {
    if (!path.parent_path().empty()) {
      fs::create_directories(path.parent_path(), ec);
      if (ec) fail(path, "its folder cannot be created (" + ec.message() + ")");
    }
    fs::path tmp = path;
    tmp += ".tmp";
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (out) tmps.push_back(tmp);
    out << text;
    out.close();
    if (!out) fail(path, "cannot be written");
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    fs::rename(tmps[i], files[i].first, ec);
    if (ec) fail(files[i].first, "cannot be written (" + ec.message() + ")");
  }
}

}  // namespace claimcheck
