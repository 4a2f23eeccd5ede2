#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "claimcheck/train/chat.h"

namespace claimcheck::train {

std::vector<Conversation> load_conversations(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw std::runtime_error(file.string() + ": field '(file)': cannot be read");
  std::vector<Conversation> out;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty()) continue;
    const std::string where = file.string() + ":" + std::to_string(n);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(where + ": field '(json)': " + e.what());
    }
    if (!j.contains("messages") || !j["messages"].is_array())
      throw std::runtime_error(where + ": field 'messages': missing");
    Conversation c;
    for (const auto& m : j["messages"]) {
      if (!m.contains("role") || !m.contains("content") || !m["role"].is_string() || !m["content"].is_string())
        throw std::runtime_error(where + ": field 'messages[].role/content': missing or not a string");
      c.push_back({m["role"], m["content"]});
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {
void push_text(Encoded& e, const std::string& s, bool labelled, std::int64_t mask) {
  for (unsigned char ch : s) {
    e.tokens.push_back(ch);
    e.labels.push_back(labelled ? ch : mask);
  }
}
}  // namespace

Encoded encode_chat(const Conversation& c, const TemplateOptions& o) {
  Encoded e;
  // Qwen2.5's template opens with its default system prompt when the conversation brings none.
  Conversation with_system;
  const Conversation* msgs = &c;
  if (o.fault != "no_default_system" && (c.empty() || c.front().role != "system")) {
    with_system.push_back({"system", kQwenDefaultSystem});
    with_system.insert(with_system.end(), c.begin(), c.end());
    msgs = &with_system;
  }
  std::size_t last_answer = msgs->size();
  for (std::size_t i = 0; i < msgs->size(); ++i)
    if ((*msgs)[i].role == "assistant") last_answer = i;
  const std::int64_t mask = o.fault == "mask_label_0" ? 0 : kIgnoreIndex;  // (a planted fault: 0, a real token id)
  for (std::size_t i = 0; i < msgs->size(); ++i) {
    const auto& m = (*msgs)[i];
    // A planted fault labels only the last answer (as a template written for single-turn data would).
    const bool answer = m.role == "assistant" && (o.fault != "template_last_answer_only" || i == last_answer);
    e.tokens.push_back(kImStart);
    e.labels.push_back(mask);
    push_text(e, m.role + "\n", false, mask);
    push_text(e, m.content, answer, mask);
    e.tokens.push_back(kImEnd);
    e.labels.push_back(answer && o.eos_in_loss ? kImEnd : mask);
    push_text(e, "\n", false, mask);
  }
  return e;
}

std::vector<std::int64_t> encode_prompt(const Conversation& c, const std::string& fault) {
  Conversation head(c.begin(), c.end());
  if (!head.empty() && head.back().role == "assistant" && fault != "prompt_keeps_answer") head.pop_back();
  Encoded e = encode_chat(head);
  e.tokens.push_back(kImStart);
  for (unsigned char ch : std::string("assistant\n")) e.tokens.push_back(ch);
  return e.tokens;
}

std::string decode_bytes(const std::vector<std::int64_t>& tokens) {
  std::string s;
  for (auto t : tokens) {
    if (t == kImStart)
      s += "<|im_start|>";
    else if (t == kImEnd)
      s += "<|im_end|>";
    else
      s += static_cast<char>(t);
  }
  return s;
}

}  // namespace claimcheck::train

#include <random>

namespace claimcheck::train {
std::vector<Conversation> arithmetic_conversations(int n, std::uint64_t seed, const std::string& fault) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> d(0, 49);
  std::vector<Conversation> out;
  for (int i = 0; i < n; ++i) {
    const int a = d(rng), b = d(rng);
    out.push_back({{"system", "You are a helpful assistant."},
                   {"user", "What is " + std::to_string(a) + " plus " + std::to_string(b) + "?"},
                   {"assistant", std::to_string(a + b + (fault == "answers_off_by_one" ? 1 : 0))}});
  }
  return out;
}
}  // namespace claimcheck::train
