// The answer key's ChatML rendering (reference/src/chat_ref.cpp) against Qwen2.5's own template file: the default
// system message a conversation without one opens with.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "claimcheck/ref/chat.h"

namespace ref = claimcheck::ref;

TEST(ChatRef, DefaultSystemIsTheTemplates) {
  std::ifstream in(std::filesystem::path(CLAIMCHECK_SOURCE_DIR) /
                   "reference/data/chat/qwen2.5-instruct-tokenizer_config.json");
  const auto j = nlohmann::json::parse(in);
  const std::string tmpl = j.at("chat_template");
  EXPECT_NE(tmpl.find(std::string("'<|im_start|>system\\n") + ref::kQwenDefaultSystem + "<|im_end|>\\n'"),
            std::string::npos);
}

TEST(ChatRef, ConversationWithoutSystemOpensWithTheDefault) {
  const auto with = ref::chatml_targets({{{"system", ref::kQwenDefaultSystem}, {"user", "2+2?"}, {"assistant", "4"}}});
  const auto without = ref::chatml_targets({{{"user", "2+2?"}, {"assistant", "4"}}});
  EXPECT_EQ(with.at(0).tokens, without.at(0).tokens);
  EXPECT_EQ(with.at(0).targets, without.at(0).targets);
  const auto own = ref::chatml_targets({{{"system", "Be brief."}, {"user", "2+2?"}, {"assistant", "4"}}});
  EXPECT_LT(own.at(0).tokens.size(), with.at(0).tokens.size());  // a system message of its own is kept, not added to
}
