// claimcheck account: the memory and latency ledger of a Hugging Face decoder config.json (the answer key's ledger,
// claimcheck/ref/ledger.h) with a hardware spec, a LoRA rank and targets and a quantisation format, printed as text
// or (--json) as JSON. The command line that declares its options and calls it is cli.cpp.
#include <cstdint>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "claimcheck/ref/ledger.h"
#include "cli_internal.h"
#include "errors.h"
#include "tolerance.h"

namespace claimcheck {
namespace fs = std::filesystem;
using nlohmann::json;

namespace cli {
namespace {

// As a config's sizes: a rank, a sequence or a batch beyond an int is a typo, not a workload (2^63 tokens' activations
// read 1e19 GiB).
int positive(const Args& a, const std::string& k, int dflt) {
  const std::string s = one(a, k);
  const long long v = s.empty() ? dflt : std::stoll(s);  // CLI11 has checked it is a positive integer
  if (v > std::numeric_limits<int>::max())
    throw InputError(k + ": " + s + " is implausibly large (the ledger accepts up to 2^31 - 1)");
  return static_cast<int>(v);
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw InputError(p.string() + ": field '(file)': cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int cmd_account(const Args& a) {
  const fs::path root = repo_root(a);
  const std::string config = one(a, "--config");
  const ref::ModelConfig c = ref::load_model_config(config);
  const ref::HardwareSpec hw =
      ref::load_hardware_spec(one(a, "--hardware", (root / "reference/data/hardware/h100-sxm.json").string()));
  const int r = positive(a, "--lora-r", 16);
  // Default: peft's "all-linear" (for a dense model, the seven projections of every layer).
  const std::string spelling = one(a, "--lora-targets", "all-linear");
  const ref::LoraTargets targets = ref::parse_lora_targets(spelling);
  const std::string qpath = one(a, "--quant", (root / "reference/data/quant/nf4-bnb-default.json").string());
  const ref::QuantFormat q = ref::parse_quant_format(read_all(qpath), qpath);
  const std::int64_t tokens = positive(a, "--tokens", 4096), batch = positive(a, "--batch", 1);

  const ref::ParamCount p = ref::count_params(c);
  const std::int64_t params = p.total(), active = p.active();  // equal for a dense model
  const ref::LoraCount lc = ref::lora_count(c, r, targets);
  const std::int64_t lora = lc.trainable;
  const std::int64_t full_bpp = ref::bytes_per_param(ref::mixed_precision_adamw_state());
  const std::int64_t lora_bpp = ref::bytes_per_param(ref::lora_adapter_state());
  const double full = static_cast<double>(params) * full_bpp;
  const double base_bf16 = static_cast<double>(params) * 2;
  const double lora_bytes = base_bf16 + static_cast<double>(lora) * lora_bpp;
  const double qbase = ref::quantized_weight_bytes(c, q);
  const double decode_bytes = ref::decode_bytes_per_token(c, {});
  const double decode_s = decode_bytes / hw.bandwidth;
  const double pf = ref::prefill_flops(active, tokens);
  const double act = ref::activation_bytes(c, batch, tokens, {});
  const double act_ckpt = ref::checkpointed_activation_bytes(c, batch, tokens, 2);
  const std::int64_t kv = ref::kv_cache_bytes_per_token(c, 2);

  json j = {{"config", config},
            {"model_type", c.model_type},
            {"params", params},
            {"params_active", active},
            {"params_breakdown",
             {{"embedding", p.embedding},
              {"lm_head", p.lm_head},
              {"tied_embeddings", c.tie_embeddings},
              {"per_layer", p.per_layer()},
              {"attention_per_layer", p.attention_per_layer},
              {"mlp_per_layer", p.mlp_per_layer},
              {"norms_per_layer", p.norms_per_layer},
              {"layers", p.layers},
              {"final_norm", p.final_norm}}},
            {"lora",
             {{"r", r},
              {"targets", spelling},
              {"modules", lc.modules},
              {"adapted_modules", lc.adapted_modules},
              {"unmatched_targets", lc.unmatched},
              {"trainable", lora},
              {"fraction_of_base", static_cast<double>(lora) / params},
              {"fraction_of_total", static_cast<double>(lora) / (params + lora)}}},
            {"training_bytes",
             {{"bytes_per_trainable_param", full_bpp},
              {"full_finetune", full},
              {"lora", lora_bytes},
              {"lora_bytes_per_trainable_param", lora_bpp},
              {"qlora", qbase + static_cast<double>(lora) * lora_bpp},
              {"qlora_base", qbase},
              {"quant_format",
               {{"file", qpath},
                {"name", q.name},
                {"bits", q.bits},
                {"block_size", q.block_size},
                {"scale_bytes", q.scale_bytes},
                {"double_quant", q.double_quant},
                {"keep_bf16", q.keep_bf16},
                {"bits_per_param", q.bits_per_param()}}},
              {"excludes", "activations, KV cache, framework overhead"}}},
            {"kv_cache_bytes_per_token", kv},
            {"kv_cache_dtype", "bf16"},
            {"activations",
             {{"batch", batch},
              {"tokens", tokens},
              {"bytes", act},
              {"checkpointed_bytes", act_ckpt},
              {"model", "FlashAttention-style, bf16, saved tensors per layer per token (see reference/ledger.h)"}}},
            {"hardware",
             {{"file", hw.file},
              {"name", hw.name},
              {"bandwidth_bytes_per_s", hw.bandwidth},
              {"bf16_dense_flops", hw.peak_flops}}},
            {"decode",
             {{"bytes_per_token", decode_bytes},
              {"ms_per_token", decode_s * 1e3},
              {"tokens_per_s", 1 / decode_s},
              {"intensity_flop_per_byte", 2.0 * active / decode_bytes}}},
            {"prefill",
             {{"tokens", tokens},
              {"flops", pf},
              {"ms", pf / hw.peak_flops * 1e3},
              {"intensity_flop_per_byte", pf / base_bf16}}},
            {"ridge_flop_per_byte", hw.ridge()}};
  j["config_keys"] = {{"defaults", json::array()}, {"ignored", json::array()}};
  for (const auto& d : c.defaults)
    j["config_keys"]["defaults"].push_back({{"key", d.key}, {"value", d.value}, {"from", d.why}});
  for (const auto& k : c.ignored)
    j["config_keys"]["ignored"].push_back({{"key", k.key}, {"known", k.known}, {"why", k.why}});
  j["kv_heads"] = c.kv_heads;
  j["head_dim"] = c.head_dim;
  if (p.sparse_layers > 0)
    j["moe"] = {{"experts", p.experts},
                {"experts_per_token", p.experts_per_token},
                {"sparse_layers", p.sparse_layers},
                {"expert_params", p.expert_params},
                {"router_per_layer", p.router_per_layer},
                {"shared_expert_per_layer", p.shared_expert_per_layer},
                {"sparse_block", p.sparse_block()},
                {"sparse_block_active", p.sparse_block_active()}};
  if (a.flags.count("--json")) {
    std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  auto gb = [](double b) { return fmt(b / 1e9) + " GB"; };
  std::cout << "config            " << config << " (" << c.model_type << ")\n"
            << "parameters        " << params << "  (" << fmt(params / 1e9) << " B; embedding " << p.embedding
            << (c.tie_embeddings ? ", tied" : ", lm_head " + std::to_string(p.lm_head)) << ", " << p.layers
            << (p.sparse_layers > 0 ? " layers: " + std::to_string(p.layers - p.sparse_layers) + " dense, " +
                                          std::to_string(p.sparse_layers) + " sparse"
                                    : " x " + std::to_string(p.per_layer()) + " per layer")
            << ")\n";
  if (p.sparse_layers > 0)
    std::cout << "active per token  " << active << "  (" << fmt(active / 1e9) << " B; " << p.experts_per_token << " of "
              << p.experts << " experts of " << p.expert_params << ", router " << p.router_per_layer
              << (p.shared_expert_per_layer ? ", shared expert " + std::to_string(p.shared_expert_per_layer) : "")
              << " per sparse layer)\n";
  std::string lora_modules;
  for (const auto& m : lc.modules) lora_modules += (lora_modules.empty() ? "" : ",") + m;
  std::cout << "LoRA r=" << r << "        " << lora << " trainable (" << fmt(100.0 * lora / params) << "% of the base; "
            << spelling << " -> " << lora_modules
            << (lc.unmatched.empty() ? ""
                                     : "; matching nothing, skipped as peft does: " +
                                           [&] {
                                             std::string u;
                                             for (const auto& n : lc.unmatched) u += (u.empty() ? "" : ",") + n;
                                             return u;
                                           }())
            << ")\n"
            << "full fine-tune    " << gb(full) << "  (" << full_bpp << " B/param, without activations)\n"
            << "LoRA              " << gb(lora_bytes) << "  (bf16 base " << gb(base_bf16) << " + " << lora_bpp
            << " B x trainable)\n"
            << "QLoRA             " << gb(qbase + static_cast<double>(lora) * lora_bpp) << "  (" << q.name << ": "
            << fmt(q.bits_per_param()) << " bits/param → base " << gb(qbase) << ")\n"
            << "activations       " << fmt(act / 1073741824.0) << " GiB at B=" << batch << ", T=" << tokens
            << "; checkpointed " << fmt(act_ckpt / 1073741824.0) << " GiB\n"
            << "KV cache          " << kv << " B/token (bf16)\n"
            << "decode on " << hw.name << "  " << fmt(decode_s * 1e3) << " ms/token (" << fmt(1 / decode_s)
            << " token/s; " << gb(decode_bytes) << " read per token)\n"
            << "prefill " << tokens << "      " << fmt(pf / 1e12) << " TFLOP → " << fmt(pf / hw.peak_flops * 1e3)
            << " ms\n"
            << "ridge             " << fmt(hw.ridge()) << " FLOP/byte\n";
  std::string defaults, known, unknown;
  for (const auto& d : c.defaults) defaults += (defaults.empty() ? "" : ", ") + d.key + "=" + d.value;
  for (const auto& k : c.ignored)
    (k.known ? known : unknown) += ((k.known ? known : unknown).empty() ? "" : ", ") + k.key;
  std::cout << "defaults          "
            << (defaults.empty() ? "none (every key given)"
                                 : defaults + " (transformers' " + c.model_type + " defaults)")
            << "\n"
            << "ignored, harmless " << (known.empty() ? "none" : known) << "\n"
            << "ignored, unknown  " << (unknown.empty() ? "none" : unknown) << "\n";
  return 0;
}

}  // namespace cli
}  // namespace claimcheck
