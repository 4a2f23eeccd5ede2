// What the ledger's sources (ledger_config.cpp, ledger_lora.cpp, ledger_memory.cpp, ledger_specs.cpp) share and the
// public header (claimcheck/ref/ledger.h) does not show: the answer key's planted faults, the SpecError naming a file
// and field, reading a file and parsing its JSON (defined in ledger_specs.cpp), and the bound on a config's integers.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "fault.h"

namespace claimcheck::ref {

inline bool ledger_fault(const char* name) { return answer_key_fault(name); }

// Throws SpecError "<file>: field '<field>': <what>".
[[noreturn]] void fail(const std::string& file, const std::string& field, const std::string& what);
// The JSON of `text`; malformed JSON (or a number beyond a double) is a SpecError naming `file`.
nlohmann::json parse_text(const std::string& text, const std::string& file);
// The whole file; one that cannot be read is a SpecError naming it.
std::string read_file(const std::filesystem::path& p);

// No config dimension of a real model comes near 2^31; beyond it the byte counts would overflow.
inline constexpr std::int64_t kMaxConfigInt = std::int64_t{1} << 31;

}  // namespace claimcheck::ref
