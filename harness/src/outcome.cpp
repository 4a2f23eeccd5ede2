#include "outcome.h"

#include <algorithm>

namespace claimcheck {
using nlohmann::json;

const char* to_string(Status s) {
  switch (s) {
    case Status::pass:
      return "pass";
    case Status::partial:
      return "partial";
    case Status::fail:
      return "fail";
    case Status::skip:
      return "skip";
    case Status::xfail:
      return "xfail";
    case Status::xpass:
      return "xpass";
    case Status::error:
      return "error";
  }
  return "?";
}

bool parse_status(const std::string& s, Status* out) {
  for (Status v : kAllStatuses)
    if (s == to_string(v)) {
      *out = v;
      return true;
    }
  return false;
}

Summary summarize(const std::vector<ClaimResult>& results) {
  Summary s;
  for (const auto& r : results) {
    ++s.by_status[static_cast<std::size_t>(r.status)];
    if (r.not_implemented) ++s.not_implemented;
    s.pending_parts += static_cast<int>(r.pending_parts.size());
    ++s.total;
  }
  return s;
}

int exit_status(const std::vector<ClaimResult>& results) {
  bool any_error = false, any_fail = false, all_skip = !results.empty();
  for (const auto& r : results) {
    any_error |= r.status == Status::error;
    any_fail |= r.status == Status::fail || r.status == Status::xpass;
    all_skip &= r.status == Status::skip;
  }
  if (any_error) return 2;
  if (any_fail) return 1;
  if (all_skip) return 77;
  return 0;
}

void fold_outcome(ClaimResult& r) {
  bool all_ok = true;                          // every comparison not marked as an expected failure held
  std::string first_bad, xfails, first_xpass;  // every expected failure is named, each with the variant that chose it
  int compared = 0;
  for (const auto& m : r.measurements) {
    if (!m.compared) continue;
    ++compared;
    const std::string label = (m.name == "value" ? "" : m.name + ": ") + m.verdict;
    if (m.expected_failure) {  // a part the evidence refutes: it must fail, with its measured reason
      if (m.ok && first_xpass.empty())
        first_xpass = m.name + " was expected to fail (" + m.xfail_reason + ") but held: " + m.verdict;
      if (!m.ok)
        xfails += (xfails.empty() ? "" : "; ") +
                  ("expected failure of " + m.name + ": " + m.xfail_reason + " — " + m.verdict +
                   (m.variant.empty() ? "" : " [variant '" + m.variant + "': " + m.variant_because + "]"));
      continue;
    }
    if (!m.ok && first_bad.empty()) first_bad = label;
    all_ok &= m.ok;
  }
  if (compared == 0) {
    r.status = Status::error;
    r.reason = "nothing was compared";
    return;
  }
  // The claim's own figure: the compared measurement named "value" (checks may measure others before it), else the
  // first compared one (a run judging some statements only); printed unnamed only when it is the value.
  auto value = std::find_if(r.measurements.begin(), r.measurements.end(),
                            [](const auto& m) { return m.compared && m.name == "value"; });
  if (value == r.measurements.end())
    value = std::find_if(r.measurements.begin(), r.measurements.end(), [](const auto& m) { return m.compared; });
  const auto& primary = *value;  // (compared > 0: one exists)
  const std::string primary_label = (primary.name == "value" ? "" : primary.name + ": ") + primary.verdict;
  if (!all_ok) {
    r.status = Status::fail;
    r.reason = first_bad;
  } else if (!first_xpass.empty()) {
    r.status = Status::xpass;
    r.reason = first_xpass;
  } else {
    r.status = xfails.empty() ? Status::pass : Status::xfail;
    if (xfails.empty()) {
      r.reason = primary_label;
    } else {
      // The comparisons not marked as expected failures, the primary first (unnamed if it is the value).
      std::string held = !primary.expected_failure ? primary_label : "";
      for (const auto& m : r.measurements)
        if (m.compared && !m.expected_failure && &m != &primary)
          held += (held.empty() ? "" : "; ") + m.name + ": " + m.verdict;
      r.reason = xfails + "; the other comparisons held: " + held;
    }
  }
}

json to_json(const ClaimResult& r) {
  json ms = json::array();
  for (const auto& m : r.measurements) {
    json o = {{"name", m.name}, {"value", m.value}, {"unit", m.unit}, {"compared", m.compared}};
    if (m.compared) {
      o["ok"] = m.ok;
      o["verdict"] = m.verdict;
      if (!m.against.empty()) o["against"] = m.against;
      if (!m.part.empty()) o["part"] = m.part;
      if (!std::isnan(m.accept_lo) && !std::isnan(m.accept_hi))  // in the stated unit; null: an open end
        o["accepted"] = {std::isfinite(m.accept_lo) ? json(m.accept_lo) : json(),
                         std::isfinite(m.accept_hi) ? json(m.accept_hi) : json()};
      o["stated"] = m.stated;
      o["why"] = m.why;
      if (!m.evidence.empty()) o["evidence"] = m.evidence;
      if (!m.basis.empty()) o["basis"] = m.basis;
      if (m.expected_failure) o["expected_failure"] = m.xfail_reason;
      if (!m.variant.empty()) o["variant"] = {{"when", m.variant}, {"because", m.variant_because}};
    }
    ms.push_back(o);
  }
  json details = r.details;
  details["measurements"] = ms;
  details["assumptions"] = r.assumptions;
  details["alternatives"] = r.alternatives;
  details["pending"] = r.pending_parts;
  details["check"] = r.check_location;
  details["seconds"] = r.seconds;
  return {{"id", r.id},
          {"chapter", r.chapter},
          {"chapter_title", r.chapter_title},
          {"title", r.title},
          {"source", r.source},
          {"kind", r.kinds},
          {"requires", r.requirements},
          {"setup_specific", r.setup_specific},
          {"status", to_string(r.status)},
          {"reason", r.reason},
          {"not_implemented", r.not_implemented},
          {"stated", r.stated},
          {"measured", r.measured},
          {"details", details}};
}

ClaimResult claim_from_json(const json& j) {
  ClaimResult r;
  r.id = j.at("id");
  r.chapter = j.at("chapter");
  r.chapter_title = j.value("chapter_title", "");
  r.title = j.value("title", "");
  r.source = j.value("source", "");
  r.kinds = j.at("kind").get<std::vector<std::string>>();
  r.requirements = j.value("requires", std::vector<std::string>{});
  r.setup_specific = j.value("setup_specific", false);
  if (!parse_status(j.at("status").get<std::string>(), &r.status))
    throw std::runtime_error("unknown status " + j.at("status").dump());
  r.reason = j.at("reason");
  r.not_implemented = j.value("not_implemented", false);
  r.stated = j.at("stated");
  r.measured = j.at("measured");
  json d = j.at("details");
  for (const auto& m : d.value("measurements", json::array())) {
    Measurement x;
    x.name = m.at("name");
    x.value = m.at("value");
    x.unit = m.at("unit");
    x.compared = m.at("compared");
    if (x.compared) {
      x.ok = m.at("ok");
      x.verdict = m.at("verdict");
      x.against = m.value("against", "");
      x.part = m.value("part", "");
      if (m.contains("accepted") && m["accepted"].is_array() && m["accepted"].size() == 2) {
        const json& a = m["accepted"];
        x.accept_lo = a[0].is_number() ? a[0].get<double>() : -INFINITY;
        x.accept_hi = a[1].is_number() ? a[1].get<double>() : INFINITY;
      }
      x.stated = m.at("stated");
      x.why = m.at("why");
      x.evidence = m.value("evidence", "");
      x.basis = m.value("basis", "");
      if (m.contains("expected_failure") && m["expected_failure"].is_string()) {
        x.expected_failure = true;
        x.xfail_reason = m["expected_failure"];
      }
      if (m.contains("variant") && m["variant"].is_object()) {
        x.variant = m["variant"].value("when", "");
        x.variant_because = m["variant"].value("because", "");
      }
    }
    r.measurements.push_back(x);
  }
  r.assumptions = d.value("assumptions", std::vector<std::string>{});
  r.alternatives = d.value("alternatives", json::array());
  r.pending_parts = d.value("pending", std::vector<std::string>{});
  r.check_location = d.value("check", "");
  r.seconds = d.value("seconds", 0.0);
  for (const char* k : {"measurements", "assumptions", "alternatives", "pending", "check", "seconds"}) d.erase(k);
  r.details = d;
  return r;
}

json to_json(const Summary& s) {
  json j = json::object();
  for (Status v : kAllStatuses) j[to_string(v)] = s[v];
  j["not_implemented"] = s.not_implemented;
  j["pending_parts"] = s.pending_parts;
  j["total"] = s.total;
  return j;
}

std::string headline_basis(const ClaimResult& r) {
  for (const auto& m : r.measurements)
    if (m.name == "value" && m.compared) return m.basis;
  return "";
}

}  // namespace claimcheck
