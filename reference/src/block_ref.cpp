// The reference decoder layers' spec from a Hugging Face config (claimcheck/ref/block.h); the layers themselves
// are in src/torch/block_torch.cpp.
#include <cmath>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/block.h"
#include "claimcheck/ref/ledger.h"
#include "ledger_internal.h"

namespace claimcheck::ref {

BlockSpec load_block_spec(const std::filesystem::path& file) {
  const ModelConfig c = load_model_config(file);
  const std::string f = file.string();
  if (c.model_type != "llama" && c.model_type != "mistral" && c.model_type != "qwen2")
    fail(f, "model_type", "'" + c.model_type + "': the reference decoder layer is Llama's (llama, mistral, qwen2)");
  if (c.experts > 0) fail(f, "num_local_experts", "a mixture of experts: the reference layer's MLP is dense");
  if (c.hidden_act != "silu") fail(f, "hidden_act", "'" + c.hidden_act + "': the reference layer's MLP is SwiGLU");
  const nlohmann::json j = parse_text(read_file(file), f);
  auto number = [&](const nlohmann::json& o, const std::string& key, const std::string& field, double fallback) {
    if (!o.contains(key) || o.at(key).is_null()) return fallback;
    if (!o.at(key).is_number()) fail(f, field, "not a number");
    const double v = o.at(key).get<double>();
    if (!(v > 0) || !std::isfinite(v)) fail(f, field, "must be a positive, finite number");
    return v;
  };
  BlockSpec s;
  s.file = f;
  s.model_type = c.model_type;
  s.layers = c.layers;
  s.hidden = c.hidden;
  s.intermediate = c.intermediate;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  s.head_dim = c.head_dim;
  s.qkv_bias = c.qkv_bias;
  s.o_bias = c.o_bias;
  s.mlp_bias = c.mlp_bias;
  s.rms_eps = number(j, "rms_norm_eps", "rms_norm_eps", 1e-6);
  s.rope_theta = number(j, "rope_theta", "rope_theta", 10000.0);
  for (const char* block : {"rope_scaling", "rope_parameters"}) {
    if (!j.contains(block) || j.at(block).is_null()) continue;
    const auto& o = j.at(block);
    if (!o.is_object()) fail(f, block, "not an object");
    s.rope_theta = number(o, "rope_theta", std::string(block) + ".rope_theta", s.rope_theta);
    for (const char* key : {"rope_type", "type"})
      if (o.contains(key) && !(o.at(key).is_string() && o.at(key).get<std::string>() == "default"))
        fail(f, std::string(block) + "." + key, "the reference layer computes the default RoPE only");
  }
  return s;
}

}  // namespace claimcheck::ref
