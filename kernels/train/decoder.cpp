// The decoder's config reader and its gradient checkpointing (LibTorch C++ ships none).
#include "decoder.h"

#include <fstream>
#include <stdexcept>

#include <ATen/autocast_mode.h>
#include <nlohmann/json.hpp>

namespace claimcheck::train {

DecoderConfig read_decoder_config(const std::filesystem::path& file) {
  const std::string f = file.string();
  auto bad = [&](const std::string& key, const std::string& why) {
    throw std::invalid_argument(f + ": field '" + key + "': " + why);
  };
  std::ifstream in(file);
  if (!in) bad("(file)", "cannot be read");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    bad("(json)", std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) bad("(json)", "expected an object (a config.json)");
  auto need = [&](const char* k) -> std::int64_t {
    if (!j.contains(k) || j.at(k).is_null()) bad(k, "missing");
    const auto& v = j.at(k);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() != std::floor(v.get<double>()))
      bad(k, "expected an integer, got " + v.dump());
    const double d = v.get<double>();
    if (d < 1 || d > 1e7) bad(k, "must be between 1 and 10^7, got " + v.dump());
    return static_cast<std::int64_t>(d);
  };
  DecoderConfig c;
  c.model_type = j.contains("model_type") && j["model_type"].is_string() ? j["model_type"].get<std::string>() : "";
  c.vocab = need("vocab_size");
  c.hidden = need("hidden_size");
  c.intermediate = need("intermediate_size");
  c.layers = need("num_hidden_layers");
  c.heads = need("num_attention_heads");
  c.kv_heads =
      j.contains("num_key_value_heads") && !j["num_key_value_heads"].is_null() ? need("num_key_value_heads") : c.heads;
  if (j.contains("head_dim") && !j["head_dim"].is_null()) {
    c.head_dim = need("head_dim");
  } else {
    if (c.hidden % c.heads)
      bad("num_attention_heads",
          std::to_string(c.heads) + " heads do not divide hidden_size " + std::to_string(c.hidden));
    c.head_dim = c.hidden / c.heads;
  }
  if (c.head_dim % 2) bad("head_dim", "RoPE needs an even head dimension, got " + std::to_string(c.head_dim));
  c.tie = j.value("tie_word_embeddings", false);
  c.rms_eps = j.value("rms_norm_eps", 1e-6);
  if (j.contains("initializer_range") && j["initializer_range"].is_number())
    c.init_std = j["initializer_range"].get<double>();
  if (j.contains("rope_theta") && !j["rope_theta"].is_null()) {
    if (!j["rope_theta"].is_number()) bad("rope_theta", "expected a number, got " + j["rope_theta"].dump());
    c.rope_theta = j["rope_theta"].get<double>();
  }
  // rope_scaling as transformers 4 writes it, or rope_parameters as 5 does (which also carries rope_theta).
  const char* rope_key =
      j.contains("rope_parameters") && j["rope_parameters"].is_object() ? "rope_parameters" : "rope_scaling";
  if (j.contains(rope_key) && !j[rope_key].is_null()) {
    const auto& r = j[rope_key];
    const std::string k = rope_key;
    if (!r.is_object()) bad(k, "expected an object or null, got " + r.dump());
    auto number = [&](const char* name, bool required, double fallback) {
      if (!r.contains(name) || r[name].is_null()) {
        if (required) bad(k + "." + name, "missing");
        return fallback;
      }
      if (!r[name].is_number() || !std::isfinite(r[name].get<double>()) || r[name].get<double>() <= 0)
        bad(k + "." + name, "expected a positive number, got " + r[name].dump());
      return r[name].get<double>();
    };
    const char* type_key = r.contains("rope_type") ? "rope_type" : "type";  // "type": transformers' older spelling
    if (r.contains(type_key) && !r[type_key].is_string()) bad(k + "." + type_key, "expected a string");
    c.rope_type = r.value(type_key, std::string("default"));
    if (r.contains("rope_theta")) c.rope_theta = number("rope_theta", true, 0);
    if (c.rope_type == "linear") {
      c.rope_factor = number("factor", true, 0);
    } else if (c.rope_type == "llama3") {
      c.rope_factor = number("factor", true, 0);
      c.rope_low_freq_factor = number("low_freq_factor", true, 0);
      c.rope_high_freq_factor = number("high_freq_factor", true, 0);
      c.rope_original_max = number("original_max_position_embeddings", true, 0);
      if (c.rope_high_freq_factor <= c.rope_low_freq_factor)
        bad(k + ".high_freq_factor", "must exceed low_freq_factor");
    } else if (c.rope_type != "default") {
      bad(k + "." + type_key, "'" + c.rope_type + "' is not a RoPE this decoder builds (default, linear, llama3)");
    }
  }
  if (!std::isfinite(c.rope_theta) || c.rope_theta <= 1) bad("rope_theta", "must be a number above 1");
  if (c.model_type == "qwen2") {
    c.qkv_bias = true;  // Qwen2Attention: q, k, v with bias; o_proj without; MLP without
  } else if (c.model_type == "llama") {
    c.qkv_bias = c.o_bias = j.value("attention_bias", false);
    c.mlp_bias = j.value("mlp_bias", false);
  } else if (c.model_type != "mistral") {
    bad("model_type", "'" + c.model_type + "' is not a decoder this code builds (qwen2, llama, mistral)");
  }
  if (c.heads % c.kv_heads)
    bad("num_key_value_heads",
        std::to_string(c.kv_heads) + " must divide num_attention_heads " + std::to_string(c.heads));
  return c;
}

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct CheckpointFn : torch::autograd::Function<CheckpointFn> {
  // Runs with autograd off (Function::apply turns it off): nothing inside the layer is saved.
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor x, torch::Tensor cos, torch::Tensor sin,
                               std::int64_t layer, std::string fault) {
    auto* l = reinterpret_cast<DecoderLayerImpl*>(layer);
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(at::kCPU);
    ctx->saved_data["fault"] = fault;
    if (fault == "ckpt_saves_layer") {  // planted: keeps the layer's whole graph, as if not checkpointed
      c10::AutoGradMode on(true);
      auto xi = x.detach().requires_grad_(true);
      auto y = l->forward(xi, cos, sin);
      ctx->saved_data["x"] = xi;
      ctx->saved_data["y"] = y;
      return y.detach();
    }
    ctx->save_for_backward({x, cos, sin});
    return l->forward(x, cos, sin);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grad_out) {
    auto* l = reinterpret_cast<DecoderLayerImpl*>(ctx->saved_data["layer"].toInt());
    const std::string fault = ctx->saved_data["fault"].toStringRef();
    if (fault == "ckpt_no_recompute") return {grad_out[0], {}, {}, {}, {}};  // planted: passes the gradient through
    torch::Tensor xi, y;
    if (fault == "ckpt_saves_layer") {
      xi = ctx->saved_data["x"].toTensor();
      y = ctx->saved_data["y"].toTensor();
    } else {
      const auto saved = ctx->get_saved_variables();
      xi = saved[0].detach().requires_grad_(true);
      const bool was = at::autocast::is_autocast_enabled(at::kCPU);
      const bool in_forward = ctx->saved_data["autocast"].toBool();
      c10::AutoGradMode on(true);
      // Recompute exactly as the forward ran (a planted fault recomputes without autocast: fp32 where it was bf16).
      at::autocast::set_autocast_enabled(at::kCPU, fault == "ckpt_recompute_without_autocast" ? false : in_forward);
      y = l->forward(xi, saved[1], saved[2]);
      at::autocast::set_autocast_enabled(at::kCPU, was);
      if (!was) at::autocast::clear_cache();
    }
    torch::autograd::backward({y}, {grad_out[0]});  // accumulates the layer's parameter gradients
    return {xi.grad(), {}, {}, {}, {}};
  }
};

}  // namespace

torch::Tensor checkpointed_layer(DecoderLayerImpl& layer, const torch::Tensor& x, const torch::Tensor& cos,
                                 const torch::Tensor& sin, const DecoderRun& run) {
  return CheckpointFn::apply(x, cos, sin, reinterpret_cast<std::int64_t>(&layer), run.checkpoint_fault);
}

}  // namespace claimcheck::train
