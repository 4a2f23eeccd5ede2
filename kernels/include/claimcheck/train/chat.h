// SFT mechanics without LibTorch: a byte-level tokenizer standing in for Qwen's, the ChatML template,
// and labels with -100 for every token that is not the assistant's answer (or its end token).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace claimcheck::train {

inline constexpr int kImStart = 256, kImEnd = 257, kChatVocab = 258;  // 256 bytes + two special tokens
inline constexpr std::int64_t kIgnoreIndex = -100;

struct Message {
  std::string role, content;
};
using Conversation = std::vector<Message>;

// Reads JSONL: {"messages": [{"role": ..., "content": ...}, ...]} per line. Throws naming file and line.
std::vector<Conversation> load_conversations(const std::filesystem::path& file);

struct Encoded {
  std::vector<std::int64_t> tokens;
  std::vector<std::int64_t> labels;  // kIgnoreIndex where the loss does not look
};

// What Qwen2.5's chat template writes as the system message when a conversation has none.
inline constexpr const char* kQwenDefaultSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

struct TemplateOptions {
  bool eos_in_loss = true;  // the <|im_end|> after each answer is a target
  // A fault planted by tests: "template_last_answer_only" (only the last answer labelled), "no_default_system",
  // "mask_label_0" (the masked positions labelled 0, a real token id, instead of -100).
  std::string fault;
};

// <|im_start|>role\ncontent<|im_end|>\n per message, Qwen2.5's chat template (ChatML) without tools: its default
// system message first when the conversation has none; only assistant contents (and, by default, their <|im_end|>)
// carry labels.
Encoded encode_chat(const Conversation& c, const TemplateOptions& o = {});
// The prompt for generation: every message but the last assistant one, then "<|im_start|>assistant\n". A planted
// fault (tests) "prompt_keeps_answer" keeps the answer before the assistant header.
std::vector<std::int64_t> encode_prompt(const Conversation& c, const std::string& fault = "");
std::string decode_bytes(const std::vector<std::int64_t>& tokens);

}  // namespace claimcheck::train

namespace claimcheck::train {
// Generated arithmetic conversations ("What is 17 plus 25?" -> "42"): short answers a small model learns
// in seconds, for the SFT and end-token experiments. Deterministic in seed. A planted fault (tests)
// "answers_off_by_one" answers a + b + 1.
std::vector<Conversation> arithmetic_conversations(int n, std::uint64_t seed, const std::string& fault = "");
}  // namespace claimcheck::train
