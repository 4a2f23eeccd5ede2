#include "claimcheck/ref/profiler.h"

#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/ledger.h"

namespace claimcheck::ref {

BucketTable load_bucket_table(const std::filesystem::path& file) {
  const std::string where = file.string();
  std::ifstream in(file);
  if (!in) throw SpecError(where + ": field '(file)': cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw SpecError(where + ": field '(json)': " + e.what());
  }
  auto strings = [&](const nlohmann::json& a, const std::string& field) {
    std::vector<std::string> v;
    if (!a.is_array()) throw SpecError(where + ": field '" + field + "': expected a list of strings");
    for (const auto& x : a) {
      if (!x.is_string() || x.get<std::string>().empty())
        throw SpecError(where + ": field '" + field + "': expected non-empty strings");
      v.push_back(x.get<std::string>());
    }
    return v;
  };
  if (!j.is_object() || !j.contains("buckets") || !j["buckets"].is_object())
    throw SpecError(where + ": field 'buckets': missing or not an object");
  if (!j.contains("otherwise") || !j["otherwise"].is_string())
    throw SpecError(where + ": field 'otherwise': missing or not a string");
  BucketTable t;
  t.otherwise = j["otherwise"].get<std::string>();
  std::set<std::string> seen;
  for (const auto& name : strings(j.value("order", nlohmann::json()), "order")) {
    if (!j["buckets"].contains(name)) throw SpecError(where + ": field 'order': '" + name + "' is not under buckets");
    if (!seen.insert(name).second) throw SpecError(where + ": field 'order': '" + name + "' twice");
    const auto& b = j["buckets"][name];
    BucketRule r;
    r.bucket = name;
    if (b.contains("frame_contains"))
      r.frame_contains = strings(b["frame_contains"], "buckets." + name + ".frame_contains");
    if (b.contains("operator")) r.operators = strings(b["operator"], "buckets." + name + ".operator");
    if (r.frame_contains.empty() && r.operators.empty())
      throw SpecError(where + ": field 'buckets." + name + "': neither frame_contains nor operator");
    t.rules.push_back(std::move(r));
  }
  for (const auto& [name, b] : j["buckets"].items())
    if (!seen.count(name)) throw SpecError(where + ": field 'order': bucket '" + name + "' is missing from it");
  return t;
}

std::string bucket_of(const BucketTable& table, const std::vector<std::string>& frames) {
  if (frames.empty()) return table.otherwise;
  for (const auto& r : table.rules) {
    for (const auto& f : frames)
      for (const auto& s : r.frame_contains)
        if (f.find(s) != std::string::npos) return r.bucket;
    if (std::find(r.operators.begin(), r.operators.end(), frames.back()) != r.operators.end()) return r.bucket;
  }
  return table.otherwise;
}

}  // namespace claimcheck::ref
