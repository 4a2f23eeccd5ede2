// Outcomes of checks and their folding into an exit status (design.md).
#pragma once
#include <array>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace claimcheck {

// partial: every statement judged held, and a part of the claim was not judged (pending: a measured part the run
// did not select or cannot run here); never counted as a pass, never a failure.
enum class Status { pass, partial, fail, skip, xfail, xpass, error };
inline constexpr Status kAllStatuses[] = {Status::pass,  Status::partial, Status::fail, Status::skip,
                                          Status::xfail, Status::xpass,   Status::error};
const char* to_string(Status s);
struct ClaimResult;
// The basis of the claim's compared headline statement (tolerance.h: "definition", ...), "" where it has none.
std::string headline_basis(const ClaimResult& r);
bool parse_status(const std::string& s, Status* out);

struct Measurement {
  std::string name;      // "value" for the primary figure
  nlohmann::json value;  // number or bool
  std::string unit;
  bool compared = false;  // an expected statement judged it
  bool ok = false;
  std::string verdict;                      // one line: the comparison and its result
  std::string against;                      // what the figure was held to (tolerance.h Verdict::against), when compared
  double accept_lo = NAN, accept_hi = NAN;  // the values it accepts, in the stated unit (Verdict::accept_lo / _hi)
  std::string part;               // "analytic" / "measured" where the claim has both parts (the statement's), else ""
  nlohmann::json stated;          // the stated value (when compared)
  std::string why;                // the tolerance's why (when compared)
  std::string evidence;           // the measurements behind the tolerance, where its expected file gives them
  std::string basis;              // a figure no bug in a model or kernel can move (tolerance.h): its kind, else ""
  bool expected_failure = false;  // its statement is an expected failure ("expect": "xfail")
  std::string xfail_reason;
  std::string variant;          // the `when` of the variant that applied ("" where the statement has none)
  std::string variant_because;  // the machine's property or the figure that chose it (runner.h variant_because)
};

struct ClaimResult {
  std::string id, chapter, title, source;
  std::string chapter_title;  // expected/chapters.json
  std::vector<std::string> kinds, requirements;
  bool setup_specific = false;
  Status status = Status::error;
  std::string reason;
  bool not_implemented = false;                        // skip because the check has not arrived yet
  nlohmann::json stated = nlohmann::json::object();    // {value, unit}
  nlohmann::json measured = nlohmann::json::object();  // {value, unit} of the primary, or null
  std::vector<Measurement> measurements;
  std::vector<std::string> assumptions;
  nlohmann::json alternatives = nlohmann::json::array();
  nlohmann::json details = nlohmann::json::object();
  std::vector<std::string> pending_parts;
  std::string check_location;  // file:line of the registration
  double seconds = 0;
};

struct Summary {
  std::array<int, std::size(kAllStatuses)> by_status{};  // claims per status, indexed by Status
  int not_implemented = 0;                               // among skip: checks not arrived yet
  int operator[](Status v) const { return by_status[static_cast<std::size_t>(v)]; }
  int skipped() const { return (*this)[Status::skip] - not_implemented; }  // skips that are not checks to come
  int pending_parts = 0;                                                   // parts of claims listed as pending
  int total = 0;
};
Summary summarize(const std::vector<ClaimResult>& results);

// 0: nothing failed, errored or passed unexpectedly (and something ran or was an xfail);
// 1: a fail or an xpass; 2: an error; 77: everything selected was skipped.
int exit_status(const std::vector<ClaimResult>& results);

// Decide pass/fail/xfail/xpass from the comparisons: every statement not marked as an expected failure must hold,
// every marked one must fail (each statement carries its own expectation: nothing claim-wide can hide a failure).
void fold_outcome(ClaimResult& r);

nlohmann::json to_json(const ClaimResult& r);
ClaimResult claim_from_json(const nlohmann::json& j);
nlohmann::json to_json(const Summary& s);

}  // namespace claimcheck
