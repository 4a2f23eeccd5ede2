#include "claimcheck/ref/chat.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/ledger.h"  // SpecError

namespace claimcheck::ref {

namespace {
const std::string kStart = "<|im_start|>", kEnd = "<|im_end|>";
constexpr std::int64_t kStartId = kChatStartId, kEndId = kChatEndId, kIgnore = -100;

// Renders one conversation, remembering the assistant contents' character spans; tokenises by scanning the string
// and labels by offset.
ChatTargets render(std::vector<std::pair<std::string, std::string>> messages) {
  if (messages.empty() || messages.front().first != "system")
    messages.insert(messages.begin(), {"system", kQwenDefaultSystem});
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> answers;
  for (const auto& [role, content] : messages) {
    text += kStart + role + "\n";
    const std::size_t begin = text.size();
    text += content;
    if (role == "assistant") answers.emplace_back(begin, text.size());
    text += kEnd + "\n";
  }
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
  return t;
}
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
    std::vector<std::pair<std::string, std::string>> messages;
    for (const auto& m : j["messages"]) {
      if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
          !m["content"].is_string())
        throw SpecError(where + ": field 'messages[].role/content': missing or not a string");
      messages.emplace_back(m["role"].get<std::string>(), m["content"].get<std::string>());
    }
    ChatTargets t = render(messages);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<ChatTargets> chatml_targets(const std::vector<std::vector<std::pair<std::string, std::string>>>& convs) {
  std::vector<ChatTargets> out;
  out.reserve(convs.size());
  for (const auto& c : convs) out.push_back(render(c));
  return out;
}

AnswerEntropy answer_entropy(const std::vector<ChatTargets>& convs) {
  std::map<std::vector<std::int64_t>, std::int64_t> answers;  // each conversation's targets, in order
  std::map<std::int64_t, std::int64_t> tokens;
  AnswerEntropy e;
  for (const auto& c : convs) {
    std::vector<std::int64_t> a;
    for (std::int64_t t : c.targets)
      if (t != kIgnore) a.push_back(t), ++tokens[t];
    e.tokens += static_cast<std::int64_t>(a.size());
    ++answers[a];
  }
  e.answers = static_cast<std::int64_t>(convs.size());
  if (e.tokens == 0)
    throw SpecError("answer_entropy: field 'targets': no target token in " + std::to_string(convs.size()) +
                    " conversations");
  auto entropy = [](const auto& counts, double n) {
    double h = 0;
    for (const auto& [k, c] : counts) h -= static_cast<double>(c) / n * std::log(static_cast<double>(c) / n);
    return h;
  };
  e.unigram = entropy(tokens, static_cast<double>(e.tokens));
  e.prompt_blind =
      entropy(answers, static_cast<double>(e.answers)) * static_cast<double>(e.answers) / static_cast<double>(e.tokens);
  return e;
}

MaskedNll masked_mean_nll(const std::vector<float>& logits, std::int64_t rows, std::int64_t positions,
                          std::int64_t vocab, const std::vector<std::vector<std::int64_t>>& targets) {
  if (rows < 0 || positions < 0 || vocab <= 0 || static_cast<std::int64_t>(logits.size()) != rows * positions * vocab)
    throw SpecError("masked_mean_nll: " + std::to_string(logits.size()) + " logits for " + std::to_string(rows) +
                    " x " + std::to_string(positions) + " x " + std::to_string(vocab));
  if (static_cast<std::int64_t>(targets.size()) != rows)
    throw SpecError("masked_mean_nll: " + std::to_string(targets.size()) + " target rows for " + std::to_string(rows));
  MaskedNll r;
  double sum = 0;
  for (std::int64_t i = 0; i < rows; ++i) {
    r.looks.emplace_back(static_cast<std::size_t>(positions), false);
    for (std::int64_t t = 0; t < positions; ++t) {
      const auto next = static_cast<std::size_t>(t + 1);
      if (next >= targets[i].size() || targets[i][next] == kIgnore) continue;
      const std::int64_t y = targets[i][next];
      if (y < 0 || y >= vocab)
        throw SpecError("masked_mean_nll: target " + std::to_string(y) + " outside the vocabulary");
      const float* z = logits.data() + (i * positions + t) * vocab;
      double m = z[0];
      for (std::int64_t v = 1; v < vocab; ++v) m = std::max(m, static_cast<double>(z[v]));
      double s = 0;
      for (std::int64_t v = 0; v < vocab; ++v) s += std::exp(static_cast<double>(z[v]) - m);
      sum += m + std::log(s) - static_cast<double>(z[y]);
      ++r.count;
      r.looks.back()[static_cast<std::size_t>(t)] = true;
    }
  }
  r.mean = r.count ? sum / static_cast<double>(r.count) : std::nan("");
  return r;
}

std::vector<double> masked_nll_head_grad(const std::vector<float>& logits, const std::vector<float>& hidden,
                                         std::int64_t rows, std::int64_t positions, std::int64_t vocab,
                                         std::int64_t width, const std::vector<std::vector<std::int64_t>>& targets) {
  if (width <= 0 || static_cast<std::int64_t>(hidden.size()) != rows * positions * width)
    throw SpecError("masked_nll_head_grad: " + std::to_string(hidden.size()) + " hidden values for " +
                    std::to_string(rows) + " x " + std::to_string(positions) + " x " + std::to_string(width));
  const MaskedNll n = masked_mean_nll(logits, rows, positions, vocab, targets);  // (checks the other shapes)
  std::vector<double> g(static_cast<std::size_t>(vocab * width), 0.0), p(static_cast<std::size_t>(vocab));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t t = 0; t < positions; ++t) {
      if (!n.looks[static_cast<std::size_t>(i)][static_cast<std::size_t>(t)]) continue;
      const float* z = logits.data() + (i * positions + t) * vocab;
      const float* h = hidden.data() + (i * positions + t) * width;
      double m = z[0], s = 0;
      for (std::int64_t v = 1; v < vocab; ++v) m = std::max(m, static_cast<double>(z[v]));
      for (std::int64_t v = 0; v < vocab; ++v) s += (p[static_cast<std::size_t>(v)] = std::exp(z[v] - m));
      p[static_cast<std::size_t>(targets[i][static_cast<std::size_t>(t + 1)])] -= s;  // softmax - onehot, times s
      for (std::int64_t v = 0; v < vocab; ++v) {
        const double coef = p[static_cast<std::size_t>(v)] / s;
        double* row = g.data() + v * width;
        for (std::int64_t k = 0; k < width; ++k) row[k] += coef * h[k];
      }
    }
  for (double& x : g) x /= static_cast<double>(n.count);
  return g;
}

}  // namespace claimcheck::ref
