// Faults a test plants in the answer key itself ($CLAIMCHECK_FAULT, tests/cli/cli_faults.py): a wrong reference must
// make the claims built on it fail, as a wrong kernel does. Read on every call (a test sets it per process).
#pragma once
#include <cstdlib>
#include <cstring>

namespace claimcheck::ref {
inline bool answer_key_fault(const char* name) {
  const char* f = std::getenv("CLAIMCHECK_FAULT");
  return f != nullptr && std::strcmp(f, name) == 0;
}
}  // namespace claimcheck::ref
