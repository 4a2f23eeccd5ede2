#include "claimcheck/ref/chat.h"

#include <fstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/ledger.h"  // SpecError

namespace claimcheck::ref {

namespace {
const std::string kStart = "<|im_start|>", kEnd = "<|im_end|>";
constexpr std::int64_t kStartId = 256, kEndId = 257, kIgnore = -100;
}  // namespace

std::vector<ChatTargets> chatml_targets(const std::filesystem::path& jsonl) {
  std::ifstream in(jsonl);
  if (!in) throw SpecError(jsonl.string() + ": field '(file)': cannot be read");
  std::vector<ChatTargets> out;
  int line_no = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_no;
    if (line.empty()) continue;
    const std::string where = jsonl.string() + ":" + std::to_string(line_no);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      throw SpecError(where + ": field '(json)': " + e.what());
    }
    if (!j.is_object() || !j.contains("messages") || !j["messages"].is_array())
      throw SpecError(where + ": field 'messages': missing");
    // Render, remembering the assistant contents' character spans.
    std::string text;
    std::vector<std::pair<std::size_t, std::size_t>> answers;
    for (const auto& m : j["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string())
        throw SpecError(where + ": field 'messages[].role/content': missing or not a string");
      text += kStart + m["role"].get<std::string>() + "\n";
      const std::size_t begin = text.size();
      text += m["content"].get<std::string>();
      if (m["role"] == "assistant") answers.emplace_back(begin, text.size());
      text += kEnd + "\n";
    }
    // Tokenise by scanning the string; label by offset.
    ChatTargets t;
    auto in_answer = [&](std::size_t at) {
      for (const auto& [b, e] : answers)
        if (at >= b && at < e) return true;
      return false;
    };
    auto closes_answer = [&](std::size_t at) {
      for (const auto& [b, e] : answers)
        if (at == e) return true;
      return false;
    };
    for (std::size_t at = 0; at < text.size();) {
      if (text.compare(at, kStart.size(), kStart) == 0 && !in_answer(at)) {
        t.tokens.push_back(kStartId);
        t.targets.push_back(kIgnore);
        at += kStart.size();
      } else if (text.compare(at, kEnd.size(), kEnd) == 0 && !in_answer(at)) {
        t.tokens.push_back(kEndId);
        t.targets.push_back(closes_answer(at) ? kEndId : kIgnore);
        at += kEnd.size();
      } else {
        const auto byte = static_cast<std::int64_t>(static_cast<unsigned char>(text[at]));
        t.tokens.push_back(byte);
        t.targets.push_back(in_answer(at) ? byte : kIgnore);
        ++at;
      }
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace claimcheck::ref
