// A claim's expected file (expected/chNN/<name>.json), parsed and validated.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tolerance.h"

namespace claimcheck {

inline constexpr int kExpectedSchema = 1;

struct Variant {
  // Alternatives joined by '|', each a conjunction of terms joined by '&': "default", "gpu", "no-gpu", "isa:FLAG"
  // (the hardware record's instruction sets), "derived:NAME>X" or "derived:NAME<X" (a value the check derived on this
  // machine, e.g. "derived:nf4_predicted_time_ratio>0.325"). Checked when the file is loaded.
  std::string when;
  Comparison compare;
  bool xfail = false;         // "expect": "xfail": on machines of this variant the evidence refutes the statement
  std::string xfail_reason;   // its measured reason (on such a machine); "{NAME}" stands for a figure of this run
};

struct Statement {
  std::string name;       // "value" for the primary figure, else the key under "also"
  nlohmann::json value;   // number or bool
  std::string unit;
  Comparison compare;     // or, when the expectation depends on the machine, the first matching variant
  std::vector<Variant> variants;
  bool measured_part = false;  // "part": "measured" — may be missing while the check lists it as pending
  bool xfail = false;          // "expect": "xfail" on an `also` statement: the evidence refutes this part
  std::string xfail_reason;    // its measured reason
};

struct Expected {
  std::filesystem::path file;
  std::string id, chapter, title, source, source_en;
  std::vector<std::string> kinds, requirements;
  bool setup_specific = false;
  std::vector<Statement> statements;  // [0] is the primary
  bool xfail = false;
  std::string xfail_reason;
  std::optional<std::string> pending;  // the check has not arrived yet: why / which issue
  nlohmann::json inputs = nlohmann::json::object();
  nlohmann::json raw;
};

// Parses one file. Throws InputError "<file>: field '<f>': ..." on anything malformed.
Expected load_expected_file(const std::filesystem::path& file);
// The same from text already read; `file` names it in errors and gives its place (chNN/<name>.json) for the id.
Expected parse_expected_file(const std::string& json_text, const std::filesystem::path& file);
// All of expected/ch*/ *.json, by id. Throws InputError on the first bad file.
std::map<std::string, Expected> load_expected_dir(const std::filesystem::path& dir);

inline const std::vector<std::string>& known_kinds() {
  static const std::vector<std::string> k = {"analytic", "numeric", "measured", "phenomenon"};
  return k;
}

}  // namespace claimcheck
