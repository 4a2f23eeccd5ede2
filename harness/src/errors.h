// Errors the user can act on: bad input files, unknown ids or labels.
// The message is one line naming the file and the field.
#pragma once
#include <stdexcept>
#include <string>

namespace claimcheck {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<file>: field '<field>': <what>"
[[noreturn]] void input_error(const std::string& file, const std::string& field, const std::string& what);

}  // namespace claimcheck
