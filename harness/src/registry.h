// The registry of checks (internal). Checks register through check.h.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "claimcheck/check.h"

namespace claimcheck {

struct CheckInfo {
  std::string id;  // claim id, e.g. ch04.full_finetune_gb
  CheckFn fn = nullptr;
  std::string fn_name;
  std::string file;
  int line = 0;
  std::vector<Requirement> needs;  // from the claim's expected file (require_from_expected in expected.h)
  bool in_module = false;          // a check of the LibTorch module (module.h): fn stays null until it is loaded
  std::string part;  // "" for a claim's check; "measured" for its measured part registered apart (check.h)
  std::map<std::string, Source> derives;  // the values it derives and their sources (CheckBuilder::derives)
};

std::vector<CheckInfo>& registry();
// Where a check is registered: "file:line", or the file alone for a stub of the LibTorch module not loaded yet (its
// manifest, written from the expected files, knows the file only).
std::string location(const CheckInfo& c);
// The check registered for `id` (its `part` empty), or nullptr.
const CheckInfo* find_check(const std::string& id);
// The part `kind` of `id` registered apart from its check (.part("measured")), or nullptr.
const CheckInfo* find_part(const std::string& id, const std::string& kind);
// Throws InputError naming file:line for a check registered without .claim() or twice, a part other than
// "measured", or a part without a check of its claim.
void validate_registry();

// Where `name`, derived by claim `id`'s check or its measured part, comes from; nullptr where neither declares it.
const Source* derived_source(const std::string& id, const std::string& name);

bool parse_requirement(const std::string& s, Requirement* out);

}  // namespace claimcheck
