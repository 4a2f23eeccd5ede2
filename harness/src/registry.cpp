#include "registry.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "errors.h"

namespace claimcheck {

void input_error(const std::string& file, const std::string& field, const std::string& what) {
  throw InputError(file + ": field '" + field + "': " + what);
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& known) {
  // Levenshtein distance, case-insensitive; a known word that ends with the typed one (an id without its chapter)
  // counts as one edit.
  auto lower = [](std::string x) {
    for (auto& c : x) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return x;
  };
  const std::string w = lower(word);
  std::string best;
  std::size_t best_d = std::max<std::size_t>(1, w.size() / 3) + 1;
  for (const auto& k0 : known) {
    const std::string k = lower(k0);
    std::size_t d;
    if (!w.empty() && k.size() > w.size() && k.compare(k.size() - w.size(), w.size(), w) == 0 &&
        k[k.size() - w.size() - 1] == '.') {
      d = 1;
    } else {
      std::vector<std::size_t> prev(k.size() + 1), cur(k.size() + 1);
      for (std::size_t j = 0; j <= k.size(); ++j) prev[j] = j;
      for (std::size_t i = 1; i <= w.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= k.size(); ++j)
          cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (w[i - 1] == k[j - 1] ? 0 : 1)});
        std::swap(prev, cur);
      }
      d = prev[k.size()];
    }
    if (d < best_d) best_d = d, best = k0;
  }
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

const char* to_string(Requirement r) {
  switch (r) {
    case Requirement::libtorch:
      return "libtorch";
    case Requirement::python:
      return "python";
    case Requirement::gpu:
      return "gpu";
    case Requirement::numpy:
      return "numpy";
  }
  return "?";
}

const char* to_string(Source s) {
  switch (s) {
    case Source::probe:
      return "probe";
    case Source::reference:
      return "reference";
    case Source::under_test:
      return "under_test";
  }
  return "?";
}

const Source* derived_source(const std::string& id, const std::string& name) {
  for (const auto& c : registry())
    if (c.id == id)
      if (auto it = c.derives.find(name); it != c.derives.end()) return &it->second;
  return nullptr;
}

bool parse_requirement(const std::string& s, Requirement* out) {
  for (Requirement r : {Requirement::libtorch, Requirement::python, Requirement::gpu, Requirement::numpy}) {
    if (s == to_string(r)) {
      *out = r;
      return true;
    }
  }
  return false;
}

std::string location(const CheckInfo& c) { return c.line > 0 ? c.file + ":" + std::to_string(c.line) : c.file; }

std::vector<CheckInfo>& registry() {
  static std::vector<CheckInfo> checks;
  return checks;
}

CheckBuilder::CheckBuilder(CheckFn fn, const char* fn_name, const char* file, int line) : index_(registry().size()) {
  CheckInfo info;
  info.fn = fn;
  info.fn_name = fn_name;
  info.file = file;
  info.line = line;
  registry().push_back(std::move(info));
}

CheckBuilder& CheckBuilder::claim(const std::string& id) {
  registry()[index_].id = id;
  return *this;
}

CheckBuilder& CheckBuilder::part(const std::string& kind) {
  registry()[index_].part = kind;
  return *this;
}

CheckBuilder& CheckBuilder::derives(const std::string& name, Source source) {
  registry()[index_].derives[name] = source;
  return *this;
}

namespace detail {
CheckBuilder& make_check(CheckFn fn, const char* fn_name, const char* file, int line) {
  // Registrars live for the whole program, like googletest's TestInfo objects.
  return *new CheckBuilder(fn, fn_name, file, line);
}
}  // namespace detail

void validate_registry() {
  std::map<std::pair<std::string, std::string>, const CheckInfo*> seen;
  for (const auto& c : registry()) {
    const std::string where = location(c);
    if (c.id.empty()) input_error(where, "claim", "check '" + c.fn_name + "' is registered without .claim(id)");
    if (!c.part.empty() && c.part != "measured")
      input_error(where, "part", "'" + c.part + "' is not a part a check registers apart (measured)");
    auto [it, fresh] = seen.emplace(std::make_pair(c.id, c.part), &c);
    if (!fresh)
      input_error(where, "claim",
                  "'" + c.id + "'" + (c.part.empty() ? "" : " (its " + c.part + " part)") +
                      " is already registered at " + location(*it->second));
  }
  for (const auto& c : registry())
    if (!c.part.empty() && !seen.count({c.id, ""}))
      input_error(location(c), "claim",
                  "the " + c.part + " part of '" + c.id + "' is registered without a check of the claim");
}

const CheckInfo* find_check(const std::string& id) { return find_part(id, ""); }

const CheckInfo* find_part(const std::string& id, const std::string& kind) {
  for (const auto& c : registry())
    if (c.id == id && c.part == kind) return &c;
  return nullptr;
}

}  // namespace claimcheck
