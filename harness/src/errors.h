// Errors the user can act on: bad input files, unknown ids or labels.
// The message is one line naming the file and the field.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace claimcheck {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<file>: field '<field>': <what>"
[[noreturn]] void input_error(const std::string& file, const std::string& field, const std::string& what);

// "; did you mean 'X'?" for the known word closest to `word` (a few edits away, or an id without its chapter),
// "" where none is close.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& known);

}  // namespace claimcheck
