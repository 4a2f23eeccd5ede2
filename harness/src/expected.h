// A claim's expected file (expected/chNN/<name>.json), parsed and validated.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "claimcheck/check.h"
#include "tolerance.h"

namespace claimcheck {

inline constexpr int kExpectedSchema = 1;
// The longest `why` (characters): one line beside a verdict (expected/schema.json says the same).
inline constexpr std::size_t kWhyMaxChars = 200;

// A feature expression (LLVM lit's REQUIRES style), one vocabulary for what a machine or a run has:
//   atom:  gpu | libtorch | python | numpy | isa:FLAG (the hardware record's instruction sets)
//          | derived:NAME<X | derived:NAME>X (a value the check derived on this machine)
//   term:  atom | !atom        and: term && term ...        expr: and || and ...   (&& binds tighter; no parentheses)
// "default" alone always holds. Parsed when an expected file is loaded; a malformed one is an error naming the field.
struct FeatureTerm {
  bool negated = false;
  std::string atom;  // as written: "gpu", "isa:avx512_bf16", "derived:ratio>0.325"
};
struct FeatureExpr {
  std::vector<std::vector<FeatureTerm>> any_of;  // OR of ANDs; empty: "default"
  std::string text;
};
// Throws std::invalid_argument with what is wrong.
FeatureExpr parse_feature_expr(const std::string& text);
// Whether `expr` holds, `atom_holds` telling each atom: true, false, or nullopt where it cannot tell (a value the
// check did not derive, no hardware record). A term whose atom cannot be told is false, negated or not: `!gpu`
// without a hardware record, or `!derived:x>1` where x was not derived, does not pick its variant.
template <class AtomHolds>
bool feature_holds(const FeatureExpr& expr, AtomHolds atom_holds) {
  if (expr.any_of.empty()) return true;
  for (const auto& all : expr.any_of) {
    bool ok = true;
    for (const auto& t : all) {
      if (!ok) break;
      const std::optional<bool> v = atom_holds(t.atom);
      ok = v.has_value() && *v != t.negated;
    }
    if (ok) return true;
  }
  return false;
}
struct Variant {
  // When this variant applies: a feature expression (above), e.g. "isa:avx512_bf16 || isa:amx_bf16",
  // "derived:nf4_predicted_time_over_bytes>1.25", "default" (the last variant); its text is the file's `when`.
  FeatureExpr condition;
  Comparison compare;
  bool xfail = false;        // "expect": "xfail": on machines of this variant the evidence refutes the statement
  std::string xfail_reason;  // its measured reason (on such a machine); "{NAME}" stands for a figure of this run
};

struct Statement {
  std::string name;      // "value" for the primary figure, else the key under "also"
  nlohmann::json value;  // number or bool
  std::string unit;
  Comparison compare;  // or, when the expectation depends on the machine, the first matching variant
  std::vector<Variant> variants;
  bool measured_part = false;  // "part": "measured" — may be missing while the check lists it as pending
  // "applies": where the statement is judged, a feature expression of the machine alone (no derived values): a
  // statement about a form of the check that runs elsewhere (the CPU form's threads on a GPU host). Empty: always.
  FeatureExpr applies;
  bool xfail = false;        // "expect": "xfail" on an `also` statement: the evidence refutes this part
  std::string xfail_reason;  // its measured reason
  // "untimed": true on a statement of a timed claim: it judges what the timed run computed, not how fast (its output
  // against the answer key), so no neighbour can turn it, and its failure is never put down to interference.
  bool untimed = false;
};

// A check that is a Python driver and nothing more (`driver`): the harness runs the script with its arguments and
// forwards its result protocol (checks/pydriver.py), as a check registered in C++ would (claimcheck/io.h).
struct Driver {
  std::string script;                     // relative to the repository root
  std::vector<std::string> args;          // literal, or "{seed}", or "{inputs.NAME}" (a string or a number)
  std::map<std::string, Source> derives;  // the values it derives and where they come from (check.h Source)
};

struct Expected {
  std::filesystem::path file;
  std::string id, chapter, title, source, source_en;
  std::string chapter_title;  // from chapters.json beside the chapter folders ("" without one)
  std::vector<std::string> kinds, requirements;
  std::vector<std::string> optional;               // used where the build has it (libtorch: the checks module)
  std::vector<std::string> measured_requirements;  // parts.measured.requires: the measured part's own needs
  std::string establishes;                         // what a check must establish (docs/claims.md)
  bool setup_specific = false;
  // A figure of the claim is a time or a speed on this machine: another process taking the cores moves it, so the
  // runner watches the machine's load while it runs (runner.h run_claim_watched).
  bool timed = false;
  std::vector<Statement> statements;  // [0] is the primary
  // The faults planted in the code under test or the answer key that the check must see, each with the statements it
  // must turn (`faults`; read by tests/cli/cli_faults.py, which runs them with `run --statement`).
  std::map<std::string, std::vector<std::string>> faults;
  std::optional<Driver> driver;        // the claim's check is this Python driver (no C++ registration)
  std::optional<std::string> pending;  // the check has not arrived yet: why / which issue
  nlohmann::json inputs = nlohmann::json::object();
  nlohmann::json raw;
};

// Parses one file. Throws InputError "<file>: field '<f>': ..." on anything malformed.
Expected load_expected_file(const std::filesystem::path& file);
// The same from text already read; `file` names it in errors and gives its place (chNN/<name>.json) for the id.
Expected parse_expected_file(const std::string& json_text, const std::filesystem::path& file);
// All of expected/ch*/ *.json, by id, with their chapters' titles from expected/chapters.json when the folder has
// one (a user's own folder of expected files may not). Throws InputError on the first bad file.
std::map<std::string, Expected> load_expected_dir(const std::filesystem::path& dir);
// Gives each registered check the requirements its expected file names (`requires`; a measured part registered
// apart, `parts.measured.requires`): the expected file is the one place they are said.
void require_from_expected(const std::map<std::string, Expected>& catalogue);

inline const std::vector<std::string>& known_kinds() {
  static const std::vector<std::string> k = {"analytic", "numeric", "measured", "phenomenon"};
  return k;
}

}  // namespace claimcheck
