// The answer key of chapter 6's profiler buckets: which bucket an operator's self time belongs to, from its place in
// the call tree (its ancestors' names and its own), by the table in reference/data/profiler/buckets.json. Written
// apart from the project's bucketing (kernels/train/perf.cpp), which is held against it event by event.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace claimcheck::ref {

struct BucketRule {
  std::string bucket;
  std::vector<std::string> frame_contains;  // any frame (ancestor or the operator) whose name contains one of these
  std::vector<std::string> operators;       // the operator's own name, exactly
};
struct BucketTable {
  std::vector<BucketRule> rules;  // tried in order; the first that takes the event names its bucket
  std::string otherwise;
};
// Throws SpecError naming the file and the field.
BucketTable load_bucket_table(const std::filesystem::path& file);
// frames: outermost first, the operator last (non-empty).
std::string bucket_of(const BucketTable& table, const std::vector<std::string>& frames);

}  // namespace claimcheck::ref
