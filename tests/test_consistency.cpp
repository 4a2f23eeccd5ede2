// The catalogue, the expected files and the registered checks agree:
// every catalogue id has an expected file and either a registered check or a pending marker,
// and nothing else exists.
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "expected.h"
#include "module.h"
#include "registry.h"

using namespace claimcheck;
namespace fs = std::filesystem;

#ifdef CLAIMCHECK_TORCH_MANIFEST
namespace claimcheck {
const std::vector<ModuleCheck>& torch_module_manifest();
}
// The LibTorch checks as the executable knows them before it loads the module (its stubs): with them the registry
// holds every check, as `list` sees it, without LibTorch in this process.
[[maybe_unused]] static const bool module_declared =
    (declare_module("claimcheck_torch_checks.so", torch_module_manifest()), true);
#endif

namespace {
std::set<std::string> ids_in_claims_md(const fs::path& p) {
  std::ifstream in(p);
  std::set<std::string> ids;
  static const std::regex row(R"(^\| (ch0[1-6]\.[a-z0-9_]+) \|)");
  std::smatch m;
  for (std::string line; std::getline(in, line);)
    if (std::regex_search(line, m, row)) ids.insert(m[1]);
  return ids;
}
std::set<std::string> registered_claim_ids() {
  std::set<std::string> ids;
  for (const auto& c : registry())
    if (c.id.rfind("test.", 0) != 0) ids.insert(c.id);  // test-only checks live in the unit tests
  return ids;
}
}  // namespace

TEST(Consistency, CatalogueExpectedFilesAndChecksAgree) {
  validate_registry();
  const auto catalogue = ids_in_claims_md(fs::path(CLAIMCHECK_SOURCE_DIR) / "docs/claims.md");
  ASSERT_EQ(catalogue.size(), 57u);
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  std::set<std::string> expected_ids;
  for (const auto& [id, e] : expected) expected_ids.insert(id);
  EXPECT_EQ(expected_ids, catalogue);

  const auto registered = registered_claim_ids();
  for (const auto& [id, e] : expected) {
    const bool has_check = registered.count(id) > 0;
    EXPECT_NE(has_check, e.pending.has_value())
        << id << (has_check ? ": has a check and a pending marker" : ": has neither a check nor a pending marker");
  }
  for (const auto& id : registered) EXPECT_TRUE(expected_ids.count(id)) << id << ": a check without an expected file";
}

// What a check needs is said once, in its expected file: the registry takes it from there, a measured part
// registered apart from `parts.measured.requires`.
TEST(Consistency, ChecksNeedWhatTheirExpectedFilesSay) {
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  require_from_expected(expected);
  for (const auto& c : registry()) {
    if (c.id.rfind("test.", 0) == 0) continue;
    const Expected& e = expected.at(c.id);
    const auto& said = c.part.empty() ? e.requirements : e.measured_requirements;
    std::set<std::string> needs, says(said.begin(), said.end());
    for (Requirement r : c.needs) needs.insert(to_string(r));
    EXPECT_EQ(needs, says) << c.id << " (" << c.file << ")";
    if (!c.part.empty()) EXPECT_TRUE(e.raw.contains("parts")) << c.id << ": a measured part without parts.measured";
  }
}

TEST(Consistency, OneFilePerClaimWhereTheIdSays) {
  for (const auto& c : registry()) {
    if (c.id.rfind("test.", 0) == 0) continue;
    const std::string chapter = c.id.substr(0, 4), name = c.id.substr(5);
    const std::string suffix = c.part.empty() ? ".cpp" : "." + c.part + ".cpp";  // kv_cache.measured.cpp
    EXPECT_NE(c.file.find("checks/" + chapter + "/" + name + suffix), std::string::npos) << c.id << " in " << c.file;
  }
}

// One assumption set per quantity across the catalogue: every claim that needs "4-bit" reads the same format
// (inputs.quant): the series' figures that need two formats are expected failures with the reason, not two assumptions.
TEST(Consistency, OneFourBitFormatAcrossTheCatalogue) {
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  std::set<std::string> formats;
  for (const auto& [id, e] : expected)
    if (e.inputs.contains("quant")) formats.insert(e.inputs["quant"].get<std::string>());
  EXPECT_EQ(formats.size(), 1u) << "claims read different 4-bit formats: " << ::testing::PrintToString(formats);
}
