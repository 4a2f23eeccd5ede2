// LoRA as peft 0.21 places it: the modules of a layer as peft sees them, parsing a target_modules spelling, and the
// trainable parameters of the adapters it selects (claimcheck/ref/ledger.h says what is matched and what refused).
#include "claimcheck/ref/ledger.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>

#include "ledger_internal.h"

namespace claimcheck::ref {

std::vector<std::string> all_linear_targets() {
  return {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
}

// ---- LoRA ---------------------------------------------------------------------
namespace {
// A module of the model as peft sees it: name within the layer (or full name at top level), whether peft can adapt
// it by name, its LoRA parameters per rank, whether "all-linear" takes it.
struct Module {
  std::string name;
  bool adaptable = false;
  std::int64_t lora_per_rank = 0;
  bool all_linear = false;
  const char* what = "";
};

std::vector<Module> layer_modules(const ModelConfig& c, bool sparse) {
  std::vector<Module> m;
  const auto lin = layer_linears(c);
  for (const auto& l : lin)
    if (l.block == "self_attn") m.push_back({"self_attn." + l.name, true, l.in + l.out, true, "Linear"});
  m.push_back({"self_attn", false, 0, false, "the attention block"});
  m.push_back({"mlp", false, 0, false, "the MLP block"});
  for (const auto& n : c.layer_norms) m.push_back({n, false, 0, false, c.norm_kind.c_str()});
  if (c.qk_norm) {
    m.push_back({"self_attn.q_norm", false, 0, false, "an RMSNorm"});
    m.push_back({"self_attn.k_norm", false, 0, false, "an RMSNorm"});
  }
  if (!sparse) {
    for (const auto& l : lin)
      if (l.block == "mlp") m.push_back({"mlp." + l.name, true, l.in + l.out, true, "Linear"});
    return m;
  }
  const std::int64_t h = c.hidden, e = c.experts, I = c.moe_intermediate;
  // The router ("gate"): peft adapts it, by name or under "all-linear", only where it converts the family's
  // experts (Mixtral); Qwen2-MoE's Qwen2MoeTopKRouter it refuses.
  m.push_back({"mlp.gate", c.peft_all_linear_experts, h + e, c.peft_all_linear_experts, "the router"});
  m.push_back({"mlp.experts", false, 0, false, "fused expert tensors (peft adapts them only under all-linear)"});
  if (c.peft_all_linear_experts) {
    // peft 0.21 converts Mixtral's w1, w3 (fused into gate_up_proj) and w2: A (2r*E x h), B (2I x 2r*E) on
    // gate_up_proj (w1 and w3 each r per expert), A (r*E x I), B (h x r*E) on down_proj.
    m.push_back({"mlp.experts#gate_up_proj", false, 2 * e * (h + 2 * I), true, "fused experts"});
    m.push_back({"mlp.experts#down_proj", false, e * (I + h), true, "fused experts"});
  }
  if (c.model_type == "qwen2_moe") {
    const std::int64_t s = c.shared_expert_intermediate;
    m.push_back({"mlp.shared_expert", false, 0, false, "the shared expert's MLP block"});
    m.push_back({"mlp.shared_expert.gate_proj", true, h + s, true, "Linear"});
    m.push_back({"mlp.shared_expert.up_proj", true, h + s, true, "Linear"});
    m.push_back({"mlp.shared_expert.down_proj", true, s + h, true, "Linear"});
    m.push_back({"mlp.shared_expert_gate", true, h + 1, true, "Linear"});
  }
  return m;
}

bool suffix_match(const std::string& key, const std::string& t) {
  return key == t || (key.size() > t.size() && key.compare(key.size() - t.size(), t.size(), t) == 0 &&
                      key[key.size() - t.size() - 1] == '.');
}
}  // namespace

LoraTargets parse_lora_targets(const std::string& s) {
  LoraTargets t;
  if (s == "all-linear") {
    t.all_linear = true;
    return t;
  }
  if (s.find_first_of("*+?()[]{}|^$\\") != std::string::npos) {
    t.regex = s;
    return t;
  }
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');) {
    while (!x.empty() && x.front() == ' ') x.erase(x.begin());
    while (!x.empty() && x.back() == ' ') x.pop_back();
    if (!x.empty()) t.names.push_back(x);
  }
  if (t.names.empty())
    throw SpecError("lora: field 'target_modules': empty (give module names, all-linear or a regex)");
  return t;
}

LoraCount lora_count(const ModelConfig& c, int rank, const LoraTargets& spec) {
  if (rank <= 0) throw SpecError("lora: field 'r': must be positive, got " + std::to_string(rank));
  LoraTargets t = spec;
  if (ledger_fault("ledger_lora_qv_only")) t = LoraTargets{false, {"q_proj", "v_proj"}, ""};
  for (const auto& n : t.names)
    if (n == "all-linear")
      throw SpecError(
          "lora: field 'target_modules': 'all-linear' is a spelling of its own, not a module name in a list");
  std::regex re;
  if (!t.regex.empty()) {
    try {
      re = std::regex(t.regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw SpecError("lora: field 'target_modules': '" + t.regex + "' is not a regular expression (" + e.what() + ")");
    }
  }
  LoraCount out;
  std::vector<bool> name_used(t.names.size(), false);
  // peft 0.21's conversion of Mixtral's transformers-4 names (utils/transformers_weight_conversion.py): a listed
  // name that is, or ends in ".", the router `gate` or an expert's w1, w3, w2 becomes a target parameter of every
  // sparse layer (the router's weight, the fused gate_up_proj, down_proj) and no longer a module name; w1 and w3 are
  // fused, so one without the other is refused.
  std::set<std::string> converted;  // "mlp.gate", "mlp.experts#gate_up_proj", "mlp.experts#down_proj"
  std::vector<bool> is_converted(t.names.size(), false);
  if (c.peft_all_linear_experts) {
    bool w1 = false, w3 = false;
    for (std::size_t i = 0; i < t.names.size(); ++i) {
      for (const char* old : {"gate", "w1", "w3", "w2"}) {
        if (!suffix_match(t.names[i], old)) continue;
        const std::string o = old;
        converted.insert(o == "gate" ? "mlp.gate" : o == "w2" ? "mlp.experts#down_proj" : "mlp.experts#gate_up_proj");
        w1 = w1 || o == "w1";
        w3 = w3 || o == "w3";
        is_converted[i] = name_used[i] = true;
        break;
      }
    }
    if (w1 != w3)
      throw SpecError(std::string("lora: field 'target_modules': ") + (w1 ? "w1 without w3" : "w3 without w1") +
                      ": peft fuses Mixtral's w1 and w3 into the experts' gate_up_proj and refuses one alone");
  }
  auto select = [&](const std::string& full, const std::string& shown, const Module& m) {
    bool hit = false;
    if (t.all_linear) {
      hit = m.all_linear;
    } else if (!t.regex.empty()) {
      // The whole name, as peft's re.fullmatch (a planted fault searches it: a match anywhere in the name).
      hit = m.name.find('#') == std::string::npos &&
            (ledger_fault("ledger_regex_search") ? std::regex_search(full, re) : std::regex_match(full, re));
    } else if (converted.count(m.name)) {
      hit = true;  // a converted name: this parameter in every sparse layer
    } else if (m.name.find('#') == std::string::npos) {
      for (std::size_t i = 0; i < t.names.size(); ++i)
        if (!is_converted[i] && suffix_match(full, t.names[i])) {
          hit = true;
          name_used[i] = true;
        }
    }
    if (!hit) return;
    if (!t.all_linear && !m.adaptable && !converted.count(m.name))
      throw SpecError("lora: field 'target_modules': selects " + full + ", " + m.what +
                      ", which peft cannot adapt by name (Linear and Embedding modules only)");
    // r x (in + out) in a double first: a rank of 2^31 on a wide layer passes int64 (a typo, not a config).
    const double add = static_cast<double>(rank) * static_cast<double>(m.lora_per_rank);
    if (!(add + static_cast<double>(out.trainable) < std::ldexp(1.0, 50)))
      throw SpecError("lora: field 'r': " + std::to_string(rank) + " gives more than 2^50 trainable parameters");
    out.trainable += static_cast<std::int64_t>(add);
    ++out.adapted_modules;
    std::string name = shown;
    std::replace(name.begin(), name.end(), '#', '.');  // fused expert tensors: parameters, not modules
    if (std::find(out.modules.begin(), out.modules.end(), name) == out.modules.end()) out.modules.push_back(name);
  };
  for (std::int64_t i = 0; i < c.layers; ++i) {
    const bool sparse = !c.sparse_layer.empty() && c.sparse_layer[static_cast<std::size_t>(i)];
    const std::string prefix = "model.layers." + std::to_string(i) + ".";
    for (const auto& m : layer_modules(c, sparse)) select(prefix + m.name, m.name, m);
  }
  const std::vector<Module> top = {
      {"model.embed_tokens", true, c.vocab + c.hidden, false, "Embedding"},
      // (A planted fault counts lm_head among "all-linear", which peft leaves out.)
      {"lm_head", true, c.hidden + c.vocab, ledger_fault("ledger_all_linear_lm_head"), "Linear"},
      {"model.norm", false, 0, false, c.norm_kind.c_str()},
      {"model", false, 0, false, "the decoder"},
      {"model.layers", false, 0, false, "the list of layers"}};
  for (const auto& m : top) select(m.name, m.name, m);
  // peft skips a name that matches nothing as long as another one matches (a Qwen2-MoE without sparse layers has
  // no shared_expert): the ledger does the same and lists them.
  for (std::size_t i = 0; i < t.names.size(); ++i)
    if (!name_used[i] && std::find(out.unmatched.begin(), out.unmatched.end(), t.names[i]) == out.unmatched.end())
      out.unmatched.push_back(t.names[i]);
  if (!t.names.empty() && out.adapted_modules == 0)
    throw SpecError("lora: field 'target_modules': no name matches a module of this " + c.model_type +
                    " model (names such as q_proj, self_attn.q_proj, layers.0.self_attn.q_proj, lm_head)");
  if (!t.regex.empty() && out.adapted_modules == 0)
    throw SpecError("lora: field 'target_modules': the regex '" + t.regex +
                    "' matches no full module name (e.g. model.layers.0.self_attn.q_proj)");
  if (t.all_linear && out.adapted_modules == 0)
    throw SpecError("lora: field 'target_modules': all-linear selects nothing");
  return out;
}

LoraTargets lora_targets_of(const std::vector<std::string>& targets) {
  LoraTargets t;
  if (targets.size() == 1 && targets[0] == "all-linear")
    t.all_linear = true;
  else
    t.names = targets;
  if (!t.all_linear && t.names.empty()) throw SpecError("lora: field 'target_modules': empty");
  return t;
}

std::int64_t lora_trainable(const ModelConfig& c, int rank, const std::vector<std::string>& targets) {
  return lora_count(c, rank, lora_targets_of(targets)).trainable;
}

}  // namespace claimcheck::ref
