// The catalogue (docs/claims.md, generated from the expected files), the expected files and the registered checks
// agree: every catalogue id has an expected file and either a registered check or a pending marker, and nothing
// else exists.
#include <algorithm>
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
  static const std::regex row(
      R"(^\| (?:<a id="[^"]*"></a>)?(ch0[1-9]\.[a-z0-9_]+) \|)");  // the row's anchor, then its id
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
  ASSERT_GE(catalogue.size(), 57u);  // the series' 57 ids: a contract, never dropped (claims may be added)
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  std::set<std::string> expected_ids;
  for (const auto& [id, e] : expected) expected_ids.insert(id);
  EXPECT_EQ(expected_ids, catalogue);

  const auto registered = registered_claim_ids();
  for (const auto& [id, e] : expected) {
    const bool has_check = registered.count(id) > 0 || e.driver.has_value();  // C++, or a driver the file names
    EXPECT_FALSE(registered.count(id) > 0 && e.driver.has_value()) << id << ": a C++ check and a driver";
    EXPECT_NE(has_check, e.pending.has_value())
        << id << (has_check ? ": has a check and a pending marker" : ": has neither a check nor a pending marker");
  }
  for (const auto& id : registered) EXPECT_TRUE(expected_ids.count(id)) << id << ": a check without an expected file";
}

// A measured part registered apart says what it needs in its expected file (parts.measured.requires).
TEST(Consistency, EveryMeasuredPartSaysWhatItNeeds) {
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  for (const auto& c : registry()) {
    if (c.id.rfind("test.", 0) == 0 || c.part.empty()) continue;
    EXPECT_TRUE(expected.at(c.id).raw.contains("parts")) << location(c) << ": a measured part without parts.measured";
  }
}

// The series' ids are a contract: each keeps its expected file under its name (a rename or a drop fails here; a
// claim added beside them does not need this list).
TEST(Consistency, TheSeriesIdsStay) {
  std::ifstream in(fs::path(CLAIMCHECK_SOURCE_DIR) / "tests/data/series_ids.txt");
  ASSERT_TRUE(in) << "tests/data/series_ids.txt";
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  std::size_t n = 0;
  for (std::string id; std::getline(in, id);) {
    if (id.empty() || id[0] == '#') continue;
    ++n;
    EXPECT_TRUE(expected.count(id)) << id << ": a series id without its expected file (renamed or dropped)";
  }
  EXPECT_EQ(n, 57u);
}

// The LibTorch checks module holds exactly the checks whose expected file names libtorch (CMake's split, read
// against the expected files here): a check in the wrong place either fails to link or loads LibTorch for nothing.
TEST(Consistency, TheModuleHoldsTheChecksThatSayLibtorch) {
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  std::size_t in_module = 0;
  for (const auto& c : registry()) {
    if (c.id.rfind("test.", 0) == 0) continue;
    const Expected& e = expected.at(c.id);
    const auto has = [](const std::vector<std::string>& v) { return std::count(v.begin(), v.end(), "libtorch") > 0; };
    const bool says = c.part.empty() ? has(e.requirements) || has(e.optional) : has(e.measured_requirements);
#ifdef CLAIMCHECK_TORCH_MANIFEST
    EXPECT_EQ(c.in_module, says) << location(c)
                                 << (says ? ": says libtorch, built outside the module"
                                          : ": in the module, its expected file names no libtorch");
#else
    (void)says;
#endif
    in_module += c.in_module;
  }
#ifdef CLAIMCHECK_TORCH_MANIFEST
  EXPECT_GT(in_module, 0u);
#endif
}

// A claim whose check is a Python driver (its expected file's `driver`): checks/<chapter>/<name>.py, which exists.
TEST(Consistency, EveryDriverWhereTheIdSays) {
  const auto expected = load_expected_dir(fs::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  std::size_t n = 0;
  for (const auto& [id, e] : expected) {
    if (!e.driver) continue;
    ++n;
    EXPECT_EQ(e.driver->script, "checks/" + id.substr(0, 4) + "/" + id.substr(5) + ".py") << id;
    EXPECT_TRUE(fs::exists(fs::path(CLAIMCHECK_SOURCE_DIR) / e.driver->script)) << id << ": " << e.driver->script;
  }
  EXPECT_GE(n, 6u);  // chapter 1's six
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
