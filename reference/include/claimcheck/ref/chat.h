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
#include <utility>
#include <vector>

namespace claimcheck::ref {

// The byte-level stand-in's vocabulary: 256 bytes and the two ChatML markers <|im_start|> (256) and <|im_end|> (257).
inline constexpr std::int64_t kChatVocab = 256 + 2;
inline constexpr std::int64_t kChatStartId = 256, kChatEndId = 257;
// The system message Qwen2.5's template opens a conversation with where the conversation has none (the chat_template
// of reference/data/chat/qwen2.5-instruct-tokenizer_config.json; a unit test holds the two equal).
inline constexpr const char* kQwenDefaultSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

struct ChatTargets {
  std::vector<std::int64_t> tokens;
  std::vector<std::int64_t> targets;  // -100 where the loss must not look
};
// One entry per non-empty line of `jsonl`; throws SpecError naming the file, the line and the field.
std::vector<ChatTargets> chatml_targets(const std::filesystem::path& jsonl);
// The same for conversations in memory: each a list of (role, content).
std::vector<ChatTargets> chatml_targets(const std::vector<std::vector<std::pair<std::string, std::string>>>& convs);

// What a model that never looks at the prompt can reach on these targets, in nats per target token:
// `prompt_blind` = the entropy of the answers' empirical distribution (each conversation's target tokens in order, as
// one outcome) x answers / target tokens: the lowest mean loss of any model that predicts an answer without its
// prompt (it may learn which answers occur, their lengths and their digits' order); `unigram` = the entropy of the
// target tokens' marginal, what a model knowing only token frequencies reaches. A training loss below `prompt_blind`
// on these conversations means the model used the prompt: it learned the mapping.
struct AnswerEntropy {
  double prompt_blind = 0, unigram = 0;
  std::int64_t answers = 0, tokens = 0;
};
AnswerEntropy answer_entropy(const std::vector<ChatTargets>& convs);

// The masked next-token loss from the targets alone (fp64): logits laid out [rows][positions][vocab], row r
// conversation r right-padded, position t predicting token t + 1 (the causal shift, as transformers' loss does it);
// the mean of -log softmax(logits[r][t])[targets[r][t + 1]] over the (r, t) whose target is not -100. `looks[r][t]`
// says which positions the loss must see (all others, padding included, must get no gradient).
struct MaskedNll {
  double mean = 0;
  std::int64_t count = 0;
  std::vector<std::vector<bool>> looks;
};
MaskedNll masked_mean_nll(const std::vector<float>& logits, std::int64_t rows, std::int64_t positions,
                          std::int64_t vocab, const std::vector<std::vector<std::int64_t>>& targets);
// The gradient of that mean with respect to a bias-free output layer's weight W [vocab][width], where the logits are
// H W^T and H [rows][positions][width] the layer's input (fp64): the sum over the counted (r, t) of
// (softmax(z) - onehot(y)) h^T, over the count. Laid out [vocab][width].
std::vector<double> masked_nll_head_grad(const std::vector<float>& logits, const std::vector<float>& hidden,
                                         std::int64_t rows, std::int64_t positions, std::int64_t vocab,
                                         std::int64_t width, const std::vector<std::vector<std::int64_t>>& targets);

}  // namespace claimcheck::ref
