// The answer key for chapter 5's loss mask, derived from the text rather than from the project's template code:
// each conversation of a JSONL file is rendered as the ChatML string Qwen's template prints
// ("<|im_start|>{role}\n{content}<|im_end|>\n" per message), the character spans of the assistant contents are
// found in that string, and the string is tokenised by scanning it: the two markers are the byte-level stand-in's
// special tokens (256, 257), every other byte is itself. A token is a target where it lies inside an assistant
// content, or is the <|im_end|> that closes one; every other position is -100.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace claimcheck::ref {

struct ChatTargets {
  std::vector<std::int64_t> tokens;
  std::vector<std::int64_t> targets;  // -100 where the loss must not look
};
// One entry per non-empty line of `jsonl`; throws SpecError naming the file, the line and the field.
std::vector<ChatTargets> chatml_targets(const std::filesystem::path& jsonl);

}  // namespace claimcheck::ref
