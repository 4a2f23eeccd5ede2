#include <filesystem>

#include <gtest/gtest.h>

#include "errors.h"
#include "expected.h"
#include "runner.h"

using namespace claimcheck;

namespace {
const std::map<std::string, Expected>& catalogue() {
  static const auto cat = load_expected_dir(std::filesystem::path(CLAIMCHECK_SOURCE_DIR) / "expected");
  return cat;
}
std::vector<std::string> pick(Selection s) { return select_claims(catalogue(), s); }
}  // namespace

TEST(Selection, EmptySelectsEverything) { EXPECT_EQ(pick({}).size(), catalogue().size()); }

TEST(Selection, ByChapter) {
  auto ids = pick({{"ch04"}, {}, {}});
  EXPECT_EQ(ids.size(), 12u);
  for (const auto& id : ids) EXPECT_EQ(id.rfind("ch04.", 0), 0u);
}

TEST(Selection, ByIdAndGlob) {
  EXPECT_EQ(pick({{}, {"ch06.ridge"}, {}}), std::vector<std::string>{"ch06.ridge"});
  auto ids = pick({{}, {"ch06.ridge*"}, {}});
  EXPECT_EQ(ids, (std::vector<std::string>{"ch06.ridge", "ch06.ridge_measured"}));
  EXPECT_EQ(pick({{}, {"ch0?.decode_*"}, {}}).size(), 4u);
}

TEST(Selection, ByLabelAndCombined) {
  auto analytic = pick({{}, {}, {"analytic"}});
  EXPECT_FALSE(analytic.empty());
  for (const auto& id : analytic) {
    const auto& k = catalogue().at(id).kinds;
    EXPECT_NE(std::find(k.begin(), k.end(), "analytic"), k.end()) << id;
  }
  // Different options AND; values of one option OR.
  auto both = pick({{"ch04"}, {}, {"analytic"}});
  for (const auto& id : both) EXPECT_EQ(id.rfind("ch04.", 0), 0u);
  auto either = pick({{"ch04", "ch05"}, {}, {}});
  EXPECT_EQ(either.size(), 12u + 9u);
  for (const auto& id : pick({{}, {}, {"gpu"}})) {
    const auto& r = catalogue().at(id).requirements;
    EXPECT_NE(std::find(r.begin(), r.end(), "gpu"), r.end());
  }
  for (const auto& id : pick({{}, {}, {"pending"}})) EXPECT_TRUE(catalogue().at(id).pending.has_value());
}

TEST(Selection, UnknownIdLabelChapterAreErrors) {
  EXPECT_THROW(pick({{}, {"ch04.no_such_claim"}, {}}), InputError);
  EXPECT_THROW(pick({{}, {"ch09.*"}, {}}), InputError);
  EXPECT_THROW(pick({{}, {}, {"tpu"}}), InputError);
  EXPECT_THROW(pick({{"ch07"}, {}, {}}), InputError);
  try {
    pick({{}, {"ch04.nope"}, {}});
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ch04.nope"), std::string::npos);
  }
}
