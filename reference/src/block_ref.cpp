// The reference decoder layers' spec from a Hugging Face config (claimcheck/ref/block.h); the layers themselves
// are in src/torch/block_torch.cpp.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/block.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/ref/stats.h"
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

AdamWUpdateComparison compare_adamw_update_fp64(const std::vector<TensorRef>& weights,
                                                const std::vector<TensorRef>& grads,
                                                const std::vector<TensorRef>& exp_avg,
                                                const std::vector<TensorRef>& exp_avg_sq,
                                                const std::vector<TensorRef>& updated, const AdamWSettingsAt& s) {
  const auto count = [](const TensorRef& t) {
    std::size_t n = 1;
    for (const auto d : t.shape) n *= static_cast<std::size_t>(d);
    return n;
  };
  const auto find = [&](const std::vector<TensorRef>& v, const TensorRef& w, const char* what) -> const TensorRef* {
    for (const auto& t : v)
      if (t.name == w.name) {
        if (t.shape != w.shape || !t.values)
          throw std::invalid_argument("compare_adamw_update_fp64: " + std::string(what) + " of " + w.name +
                                      ": another shape than the weight's");
        return &t;
      }
    return nullptr;
  };
  if (s.step < 1) throw std::invalid_argument("compare_adamw_update_fp64: the step count must be at least 1");
  const double bias1 = 1 - std::pow(s.beta1, static_cast<double>(s.step));
  const double bias2 = 1 - std::pow(s.beta2, static_cast<double>(s.step));
  AdamWUpdateComparison c;
  double err_x = 0, x_x = 0;  // the decay's slope: sum of error x w, of w^2
  for (const auto& w : weights) {
    const TensorRef* g = find(grads, w, "the gradient");
    if (!g) continue;  // (a weight the step does not train)
    const TensorRef* m = find(exp_avg, w, "exp_avg");
    const TensorRef* v = find(exp_avg_sq, w, "exp_avg_sq");
    const TensorRef* after = find(updated, w, "the update");
    if (!m || !v || !after)
      throw std::invalid_argument("compare_adamw_update_fp64: " + w.name + ": no " +
                                  (!m   ? "exp_avg"
                                   : !v ? "exp_avg_sq"
                                        : "weight after the step"));
    double err = 0, scale = 0;
    for (std::size_t i = 0, n = count(w); i < n; ++i) {
      const double x = w.values[i], gi = g->values[i];
      const double mi = s.beta1 * m->values[i] + (1 - s.beta1) * gi;
      const double vi = s.beta2 * v->values[i] + (1 - s.beta2) * gi * gi;
      const double want = x * (1 - s.lr * s.weight_decay) - s.lr / bias1 * mi / (std::sqrt(vi / bias2) + s.eps) - x;
      const double e = (static_cast<double>(after->values[i]) - x) - want;
      err = worse(err, std::fabs(e));
      err_x += e * x, x_x += x * x;
      scale = std::max(scale, std::fabs(want));
    }
    const double e = scale > 0 ? err / scale : (err > 0 ? INFINITY : 0);
    if (c.tensors == 0 || worse(c.update_error, e) != c.update_error) {
      c.update_error = worse(c.update_error, e);
      c.worst = w.name;
    }
    ++c.tensors;
  }
  const double decay = s.lr * s.weight_decay;
  c.decay_error = decay > 0 && x_x > 0 ? err_x / x_x / decay : 0;
  return c;
}

}  // namespace claimcheck::ref
