// claimcheck matrix: reading the reports, building the matrix (claimcheck.matrix/1) and its Markdown (matrix.h).
#include "matrix.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "compare.h"
#include "errors.h"
#include "report.h"
#include "report_writers.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string mx_text(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || o[key].is_null()) return "";
  return o[key].is_string() ? o[key].get<std::string>() : o[key].dump();
}
double mx_number(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : 0.0;
}
std::string short_sha(const std::string& sha) { return sha.substr(0, 7); }
std::string mx_figure_text(const json& v, const std::string& unit) {
  if (v.is_number()) return sig3(v.get<double>()) + (unit.empty() || unit == "bool" ? "" : " " + unit);
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return "—";
}

// The machine a report ran on: what tells two machines apart (not the commit, not the clock of the day).
std::string machine_key(const json& hw) {
  return mx_text(hw, "cpu_vendor") + "|" + mx_text(hw, "cpu_model") + "|" + mx_text(hw, "cpu_family") + "|" +
         mx_text(hw, "cpu_model_number") + "|" + mx_text(hw, "microarchitecture") + "|" + mx_text(hw, "logical_cpus") +
         "|" + mx_text(hw, "gpu");
}

// The column's card: CPU, cores, ISA and engines, the roofs the run measured (chapter 6's probe), GPU, PyTorch.
json card_of(const json& rep) {
  const json& rec = rep["records"];
  const json& hw = rec["hardware"];
  json card = {{"cpu", mx_text(hw, "cpu_model")},
               {"vendor", mx_text(hw, "cpu_vendor")},
               {"family", hw.value("cpu_family", json())},
               {"model", hw.value("cpu_model_number", json())},
               {"microarchitecture", mx_text(hw, "microarchitecture")},
               {"cpus", hw.value("logical_cpus", json())},
               {"memory_gib", mx_number(hw, "memory_bytes") / (1024.0 * 1024 * 1024)},
               {"isa", hw.value("isa", json::array())},
               {"gpu", hw.value("gpu", json())},
               {"engines", json::array()},
               {"read_gb_s", json()}};
  const json env = rec.value("environment", json::object());
  card["torch"] = mx_text(env.value("python", json::object()), "torch");
  card["cpu_math"] = mx_text(env, "cpu_math");
  // The probe's record with the most engines (the ridge claim measures every engine; others only the one they use).
  json best;
  for (const auto& c : rep["claims"]) {
    const json d = c.value("details", json::object());
    if (!d.contains("roof") || !d["roof"].is_object()) continue;
    if (best.is_null() ||
        d["roof"].value("engines", json::array()).size() > best.value("engines", json::array()).size())
      best = d["roof"];
  }
  if (best.is_null()) return card;
  for (const auto& e : best.value("engines", json::array()))
    card["engines"].push_back({{"engine", mx_text(e, "engine")},
                               {"isa", mx_text(e, "isa")},
                               {"peak_gflops", e.value("peak_gflops", json())},
                               {"theoretical_gflops", e.value("theoretical_gflops", json())}});
  if (best.contains("read_gb_s")) card["read_gb_s"] = best["read_gb_s"];
  return card;
}

// What the claim was judged against in this report: its expected file's hash where the report records it (""
// in reports older than the record), and its figures: the stated one and each statement's name and stated figure.
std::pair<std::string, std::string> expected_signature(const json& rep, const json& c) {
  const json checks = rep["records"].value("config", json::object()).value("checks", json::object());
  const std::string id = c["id"];
  const std::string sha = checks.contains(id) ? mx_text(checks[id], "expected_sha256") : "";
  std::string s = c.value("stated", json()).dump();
  for (const auto& m : c.value("details", json::object()).value("measurements", json::array()))
    s += "|" + mx_text(m, "name") + "=" + m.value("stated", json()).dump();
  return {sha, s};
}

// The machine's properties a variant's `when` names, as this report saw them: isa:X (listed or not), the figures
// it derived (details.derived: value, unit, source).
json chosen_by(const json& c, const json& hw, const std::string& when) {
  json out = json::array();
  std::set<std::string> seen;
  const std::set<std::string> isa = hw.value("isa", json::array()).get<std::set<std::string>>();
  static const std::regex isa_re("isa:([A-Za-z0-9_]+)");
  for (std::sregex_iterator it(when.begin(), when.end(), isa_re), end; it != end; ++it) {
    const std::string x = (*it)[1];
    if (seen.insert("isa:" + x).second) out.push_back("isa " + x + ": " + (isa.count(x) ? "yes" : "no"));
  }
  const json derived = c.value("details", json::object()).value("derived", json::object());
  for (const auto& [name, d] : derived.items())
    if (when.find(name) != std::string::npos && seen.insert(name).second)
      out.push_back(name + " = " + mx_figure_text(d.value("value", json()), mx_text(d, "unit")) + " (" +
                    mx_text(d, "source") + ")");
  return out;
}

json cell_of(const json& c, const json& hw, const std::string& link) {
  const json d = c.value("details", json::object());
  json variant = json::object(), facts = json::array(), xfails = json::array();
  const json variants = d.value("variant", json::object());
  for (const auto& [stmt, when] : variants.items()) {
    if (!when.is_string() || when.get<std::string>() == "default") continue;
    variant[stmt] = when;
    for (const auto& f : chosen_by(c, hw, when.get<std::string>()))
      if (std::find(facts.begin(), facts.end(), f) == facts.end()) facts.push_back(f);
  }
  for (const auto& m : d.value("measurements", json::array()))
    if (m.contains("expected_failure")) xfails.push_back(mx_text(m, "name"));
  const json meas = c.value("measured", json());
  return {{"status", c["status"]},
          {"not_implemented", c.value("not_implemented", false)},
          {"value", meas.is_object() ? meas.value("value", json()) : json()},
          {"unit", meas.is_object() ? mx_text(meas, "unit") : ""},
          {"reason", mx_text(c, "reason")},
          {"variant", variant},
          {"chosen_by", facts},
          {"expected_failures", xfails},
          {"link", link.empty() ? "" : link + "#" + c["id"].get<std::string>()}};
}

}  // namespace

std::string machine_label(const json& hw) {
  std::string name = mx_text(hw, "microarchitecture");
  name = name.substr(0, name.find(" ("));  // "Xeon with AMX (Sapphire Rapids or later; ...)": its first words
  if (name.empty()) name = mx_text(hw, "cpu_model");
  if (name.empty()) name = "unknown CPU";
  std::string out = name + " · " + mx_text(hw, "logical_cpus") + " CPUs";
  if (hw.contains("gpu") && hw["gpu"].is_object())
    out += " · " + mx_text(hw["gpu"], "name");
  else if (hw.contains("gpu") && hw["gpu"].is_string())
    out += " · " + hw["gpu"].get<std::string>();
  return out;
}

std::string matrix_machine_key(const json& hardware) { return machine_key(hardware); }

MatrixInput load_matrix_input(const fs::path& file, const fs::path& out_dir) {
  const std::string f = file.string();
  json rep = load_report_for_compare(file);
  if (!rep.contains("records") || !rep["records"].is_object()) input_error(f, "records", "missing (not a report)");
  const json& rec = rep["records"];
  if (!rec.contains("hardware") || !rec["hardware"].is_object()) input_error(f, "records.hardware", "missing");
  if (!rec.contains("commit") || !rec["commit"].is_object() || !rec["commit"].contains("sha") ||
      !rec["commit"]["sha"].is_string() || rec["commit"]["sha"].get<std::string>().empty())
    input_error(f, "records.commit.sha", "missing");
  for (std::size_t i = 0; i < rep["claims"].size(); ++i) {
    const json& c = rep["claims"][i];
    if (!c.contains("chapter") || !c["chapter"].is_string())
      input_error(f, "claims[" + std::to_string(i) + "].chapter", "missing");
  }
  MatrixInput in{f, std::move(rep), report_link(file, out_dir)};
  try {  // a field of the wrong type (a string for records.commit.dirty, ...) named with this file, not later
    build_matrix({in});
  } catch (const nlohmann::json::exception& e) {
    input_error(f, "(report)", std::string("a field of the wrong type: ") + e.what());
  }
  return in;
}

std::string report_link(const fs::path& report_json, const fs::path& from_dir) {
  const fs::path html = report_json.parent_path() / "report.html";
  std::error_code ec;
  const fs::path target = fs::exists(html, ec) ? html : report_json;
  return fs::weakly_canonical(fs::absolute(target), ec)
      .lexically_relative(fs::weakly_canonical(fs::absolute(from_dir), ec))
      .generic_string();
}

std::string matrix_text(const json& o, const char* key) { return mx_text(o, key); }

json build_matrix(const std::vector<MatrixInput>& inputs) {
  if (inputs.empty()) throw InputError("claimcheck matrix: no report given");
  json m = {
      {"schema", kMatrixSchema}, {"machines", json::array()}, {"chapters", json::array()}, {"claims", json::array()}};
  std::map<std::string, std::string> seen;  // machine key + commit -> the file
  std::map<std::string, int> labels;
  for (const auto& in : inputs) {
    const json& rec = in.report["records"];
    const std::string sha = rec["commit"]["sha"], key = machine_key(rec["hardware"]) + "@" + sha;
    if (seen.count(key))
      input_error(in.file, "records.hardware",
                  "the same machine (" + machine_label(rec["hardware"]) + ") and commit (" + short_sha(sha) + ") as " +
                      seen[key]);
    seen[key] = in.file;
    ++labels[machine_label(rec["hardware"])];
  }
  std::map<std::string, json> chapters;  // id -> title
  std::map<std::string, json> rows;      // claim id -> row
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    const json& rep = inputs[k].report;
    const json& rec = rep["records"];
    const std::string sha = rec["commit"]["sha"], label = machine_label(rec["hardware"]);
    const std::string id = "m" + std::to_string(k + 1);
    m["machines"].push_back({{"id", id},
                             {"label", labels[label] > 1 ? label + " @" + short_sha(sha) : label},
                             {"file", inputs[k].file},
                             {"link", inputs[k].link},
                             {"commit", sha},
                             {"dirty", rec["commit"].value("dirty", false)},
                             {"generated_at", mx_text(rep, "generated_at")},
                             {"card", card_of(rep)},
                             {"summary", rep.value("summary", json::object())}});
    for (const auto& c : rep["claims"]) {
      const std::string cid = c["id"], ch = c["chapter"];
      if (!chapters.count(ch)) chapters[ch] = mx_text(c, "chapter_title");
      json& row = rows[cid];
      if (row.is_null())
        row = {{"id", cid},
               {"chapter", ch},
               {"title", mx_text(c, "title")},
               {"source", mx_text(c, "source")},
               {"kind", c.value("kind", json::array())},
               {"stated", c.value("stated", json())},
               {"cells", json::array()},
               {"signatures", json::object()}};
      while (row["cells"].size() < k) row["cells"].push_back(nullptr);
      row["cells"].push_back(cell_of(c, rec["hardware"], inputs[k].link));
      const auto [file_sha, figures] = expected_signature(rep, c);
      row["signatures"][sha] = {file_sha, figures};
    }
  }
  for (const auto& [ch, title] : chapters) m["chapters"].push_back({{"id", ch}, {"title", title}});
  int everywhere = 0, differ_count = 0, refuted = 0;
  for (auto& [cid, row] : rows) {
    while (row["cells"].size() < inputs.size()) row["cells"].push_back(nullptr);
    std::map<std::string, int> statuses;
    std::map<std::string, std::vector<std::string>> by_status, by_variant;
    int ran = 0, holds = 0;
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const json& cell = row["cells"][k];
      if (cell.is_null()) continue;
      const std::string st = cell["status"];
      ++statuses[st];
      if (st == "skip") continue;
      ++ran;
      if (st == "pass") ++holds;
      by_status[st].push_back(m["machines"][k]["label"]);
      std::string v;
      for (const auto& [stmt, when] : cell["variant"].items())
        v += (v.empty() ? "" : "; ") + stmt + ": " + when.get<std::string>();
      if (!cell["chosen_by"].empty()) {
        std::string facts;
        for (const auto& f : cell["chosen_by"]) facts += (facts.empty() ? "" : ", ") + f.get<std::string>();
        v += " (" + facts + ")";
      }
      by_variant[v.empty() ? "the default statements" : v].push_back(m["machines"][k]["label"]);
    }
    row["ran"] = ran;
    row["holds"] = holds;
    row["of"] = inputs.size();
    row["statuses"] = statuses;
    row["differ"] = by_status.size() > 1;
    std::string sep;
    if (by_status.size() > 1) {
      if (by_variant.size() > 1) {
        for (const auto& [v, ms] : by_variant) {
          std::string names;
          for (const auto& n : ms) names += (names.empty() ? "" : ", ") + n;
          sep += (sep.empty() ? "" : " | ") + v + " on " + names;
        }
      } else {
        sep = "no property the claim declares separates them (the same statements applied): see the figures";
      }
    }
    row["separated_by"] = sep;
    // The expected file between reports of different commits.
    // The files' hashes where every report has them, else the figures the reports show.
    bool hashed = true;
    for (const auto& [sha, s] : row["signatures"].items()) hashed = hashed && !s[0].get<std::string>().empty();
    std::set<std::string> sigs;
    for (const auto& [sha, s] : row["signatures"].items()) sigs.insert(s[hashed ? 0 : 1].get<std::string>());
    std::string changed;
    if (sigs.size() > 1) {
      std::string shas;
      for (const auto& [sha, s] : row["signatures"].items()) shas += (shas.empty() ? "" : ", ") + short_sha(sha);
      changed = std::string(hashed ? "its expected file differs" : "its statements or stated figures differ") +
                " between the reports' commits (" + shas + "): the verdicts were judged against different files";
    }
    row["expected_changed"] = changed;
    row.erase("signatures");
    everywhere += ran > 0 && holds == ran;
    differ_count += by_status.size() > 1;
    refuted += statuses.count("xfail") > 0;
    m["claims"].push_back(row);
  }
  std::sort(m["claims"].begin(), m["claims"].end(), [](const json& a, const json& b) {
    return std::make_pair(a["chapter"].get<std::string>(), a["id"].get<std::string>()) <
           std::make_pair(b["chapter"].get<std::string>(), b["id"].get<std::string>());
  });
  m["summary"] = {{"machines", inputs.size()},
                  {"claims", rows.size()},
                  {"hold_everywhere_they_ran", everywhere},
                  {"refuted_somewhere", refuted},
                  {"verdicts_differ", differ_count}};
  return m;
}

std::string matrix_holds_text(const json& row) {
  std::string s =
      "holds on " + std::to_string(row["holds"].get<int>()) + " of " + std::to_string(row["ran"].get<int>());
  if (row["statuses"].contains("xfail"))
    s += ", refuted on " + std::to_string(row["statuses"]["xfail"].get<int>()) + " (an expected failure)";
  const int skipped = row["of"].get<int>() - row["ran"].get<int>();
  if (skipped > 0) s += " (" + std::to_string(skipped) + " skipped or absent)";
  return s;
}

std::string matrix_figure_text(const json& cell) { return mx_figure_text(cell["value"], mx_text(cell, "unit")); }

std::string matrix_cell_text(const json& cell) {
  if (cell.is_null()) return "—";
  std::string s = cell["not_implemented"].get<bool>() ? "not implemented" : cell["status"].get<std::string>();
  const std::string fig = matrix_figure_text(cell);
  if (fig != "—") s += " " + fig;
  if (!cell["variant"].empty()) {
    std::string v;
    for (const auto& [stmt, when] : cell["variant"].items())
      v += (v.empty() ? "" : "; ") + stmt + " when " + when.get<std::string>();
    s += " [" + v + "]";
  }
  return s;
}

std::string matrix_card_text(const json& mc) {
  const json& c = mc["card"];
  std::ostringstream o;
  o << mx_text(c, "cpu") << " (" << mx_text(c, "vendor") << " family " << mx_text(c, "family") << " model "
    << mx_text(c, "model") << "), " << mx_text(c, "cpus") << " CPUs, " << sig3(c["memory_gib"].get<double>()) << " GiB";
  std::string isa;
  for (const auto& x : c["isa"]) isa += (isa.empty() ? "" : " ") + x.get<std::string>();
  if (!isa.empty()) o << "; ISA " << isa;
  for (const auto& e : c["engines"])
    if (e["peak_gflops"].is_number())
      o << "; " << mx_text(e, "engine") << " " << sig3(e["peak_gflops"].get<double>()) << " GFLOP/s";
  if (c["read_gb_s"].is_number()) o << "; read " << sig3(c["read_gb_s"].get<double>()) << " GB/s";
  o << "; GPU " << (c["gpu"].is_null() ? "none" : mx_text(c, "gpu"));
  if (!mx_text(c, "torch").empty()) o << "; PyTorch " << mx_text(c, "torch");
  if (!mx_text(c, "cpu_math").empty()) o << " (" << mx_text(c, "cpu_math") << ")";
  return o.str();
}

std::string matrix_markdown(const json& m) {
  std::ostringstream o;
  const json& s = m["summary"];
  o << "# Which claims hold where\n\n"
    << "Generated by `claimcheck matrix` from " << s["machines"].get<int>() << " report(s); do not edit by hand.\n\n"
    << s["claims"].get<int>() << " claims: " << s["hold_everywhere_they_ran"].get<int>()
    << " hold on every machine they ran on, " << s["refuted_somewhere"].get<int>()
    << " are refuted (an expected failure) on at least one, " << s["verdicts_differ"].get<int>()
    << " get different verdicts on different machines.\n\n## Machines\n\n| | machine | commit | card "
       "|\n|---|---|---|---|\n";
  for (const auto& mc : m["machines"])
    o << "| " << mx_text(mc, "id") << " | [" << md_cell(mx_text(mc, "label")) << "](" << mx_text(mc, "link") << ") | "
      << short_sha(mx_text(mc, "commit")) << (mc["dirty"].get<bool>() ? " (dirty)" : "") << " | "
      << md_cell(matrix_card_text(mc)) << " |\n";
  for (const auto& ch : m["chapters"]) {
    o << "\n## " << mx_text(ch, "id") << " — " << md_cell(mx_text(ch, "title"))
      << "\n\n| claim | the series | stated |";
    for (const auto& mc : m["machines"]) o << " " << md_cell(mx_text(mc, "label")) << " |";
    o << " holds |\n|---|---|---|";
    for (std::size_t k = 0; k < m["machines"].size(); ++k) o << "---|";
    o << "---|\n";
    for (const auto& row : m["claims"]) {
      if (row["chapter"] != ch["id"]) continue;
      const json& st = row["stated"];
      o << "| `" << mx_text(row, "id") << "` | " << md_cell(mx_text(row, "source"), 120) << " | "
        << (st.is_object() ? mx_figure_text(st.value("value", json()), mx_text(st, "unit")) : "—") << " |";
      for (const auto& cell : row["cells"]) o << " " << md_cell(matrix_cell_text(cell), 160) << " |";
      std::string h = matrix_holds_text(row);
      if (!mx_text(row, "separated_by").empty()) h += "; separated by: " + mx_text(row, "separated_by");
      if (!mx_text(row, "expected_changed").empty()) h += "; " + mx_text(row, "expected_changed");
      o << " " << md_cell(h) << " |\n";
    }
  }
  return o.str();
}

// The README's headline: the summary per chapter (claims, those that hold on every machine they ran on, those refuted
// on at least one, those whose verdicts differ, those no machine ran) and the machines, no links (the README's text
// around it links).
std::string matrix_headline_markdown(const json& m) {
  struct Counts {
    int claims = 0, everywhere = 0, refuted = 0, differ = 0, nowhere = 0;
  };
  auto count = [](const json& row, Counts* c) {
    ++c->claims;
    c->everywhere += row["ran"].get<int>() > 0 && row["holds"] == row["ran"];
    c->refuted += row["statuses"].contains("xfail");
    c->differ += row["differ"].get<bool>();
    c->nowhere += row["ran"].get<int>() == 0;
  };
  std::ostringstream o;
  std::string machines;
  for (const auto& mc : m["machines"])
    machines += (machines.empty() ? "" : ", ") + mx_text(mc, "label") + " (" + short_sha(mx_text(mc, "commit")) + ")";
  o << "Measured on " << m["machines"].size() << " machine(s): " << md_cell(machines) << ".\n\n"
    << "| chapter | claims | hold on every machine they ran on | refuted on at least one (an expected failure) | "
       "verdicts differ between machines | ran on none (skipped) |\n|---|---|---|---|---|---|\n";
  Counts all;
  auto line = [&](const std::string& name, const Counts& c) {
    o << "| " << name << " | " << c.claims << " | " << c.everywhere << " | " << c.refuted << " | " << c.differ << " | "
      << c.nowhere << " |\n";
  };
  for (const auto& ch : m["chapters"]) {
    Counts c;
    for (const auto& row : m["claims"])
      if (row["chapter"] == ch["id"]) count(row, &c), count(row, &all);
    line(mx_text(ch, "id") + " — " + md_cell(mx_text(ch, "title")), c);
  }
  line("**all**", all);
  return o.str();
}

}  // namespace claimcheck
