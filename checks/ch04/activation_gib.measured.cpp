// ch04.activation_gib, measured part: saved bytes per token per layer of the Llama-shaped decoder
// (inputs.measure_config) under the counting allocator, per op, as k x hidden; k carried to the claim's model
// (inputs.config: Llama-3-8B's hidden size and layers) at B x T; and that model, scaled down, against transformers'
// LlamaForCausalLM (checks/decoder_vs_transformers.h).
#include "claimcheck/check.h"
#include "claimcheck/ref/ledger.h"
#include "claimcheck/ref/stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "../decoder_vs_transformers.h"
#include "claimcheck/train/memory.h"
#endif

namespace ref = claimcheck::ref;

#if CLAIMCHECK_WITH_TORCH
// The statements of the saved bytes at the measured lengths (all but wide_heads_itemised, measured apart).
static const std::initializer_list<const char*> kSavedBytesStatements = {
    "lora_over_full_activations",
    "lora_activations_itemised",
    "measured_k",
    "measured_k_itemised",
    "measured_k_ledger_model",
    "measured_extrapolated",
    "measured_k_growth_with_T",
    "measured_k_batch_invariant",
    "ledger_at_batch_vs_measured",
    "measured_eager_k_growth_with_T",
    "measured_autocast_k",
    "autocast_matmul_outputs_over_fp32",
    "autocast_saved_over_fp32",
    "measured_eager_probability_bytes_per_context_token",
    "eager_probabilities_vs_ledger",
    "eager_vs_fused_attention"};

// The answer key's bytes per token that eager PyTorch modules keep in a plain decoder layer of `c` beyond the minimal
// list.
static double plain_layer_extra(const ref::ModelConfig& c) {
  double b = 0;
  for (const auto& t : ref::plain_layer_extra_bytes(c)) b += static_cast<double>(t.elements_per_token);
  return b;
}

// The answer key's bytes per token that a plain decoder layer of `c` saves in bf16: the minimal list (2 bytes an
// element) and what eager PyTorch modules keep beyond it.
static double itemised_plain_layer_bytes(const ref::ModelConfig& c) {
  double b = plain_layer_extra(c);
  for (const auto& t : ref::saved_per_layer(c)) b += 2.0 * static_cast<double>(t.elements_per_token);
  return b;
}

// The bytes saved on heads wider than the hidden size (heads x head_dim != hidden: Gemma's, Qwen3's), where the query
// and the attention output are as wide as the heads, against the answer key's itemised list: a ledger or a layer that
// takes them as hidden-wide shows.
static void wide_heads_itemised(claimcheck::Context& ctx, int mb, int tokens) {
  claimcheck::ScratchDir dir("activation_wide_heads");
  const auto [wide, wc] = checks::wide_heads_config(ctx, "measure_config", "wide_heads_overrides", dir.path());
  const auto w1 =
      claimcheck::train::saved_activations(wide, ctx.seed(), mb, tokens, false, false, "bf16", ctx.planted_fault());
  ctx.measure("wide_heads_itemised", w1.bytes_per_token_layer / itemised_plain_layer_bytes(wc), "ratio");
}

static void activation_gib_bytes(claimcheck::Context& ctx) {
  const ref::ModelConfig cfg = ref::load_model_config(ctx.input_path("config"));
  const auto batch = ctx.input("batch").get<std::int64_t>();
  const auto tokens = ctx.input("tokens").get<std::int64_t>();
  constexpr double GiB = 1073741824.0;
  namespace train = claimcheck::train;
  const auto small = ctx.input_path("measure_config");
  const ref::ModelConfig sc = ref::load_model_config(small);
  const auto lengths = ctx.input("measure_tokens").get<std::vector<int>>();
  if (lengths.size() != 2 || lengths[0] <= 0 || lengths[1] <= lengths[0])
    throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.measure_tokens': expected two increasing lengths");
  const int mb = ctx.input("measure_batch").get<int>();
  if (!ctx.wants_any(kSavedBytesStatements)) {  // a run that judges only the wide heads (a planted fault's)
    wide_heads_itemised(ctx, mb, lengths[0]);
    return;
  }
  // Measured: the series' setting (bf16 model, fused attention) at two lengths, eager attention at both, autocast.
  const auto f1 = train::saved_activations(small, ctx.seed(), mb, lengths[0], false, true, "bf16", ctx.planted_fault());
  const auto f2 =
      train::saved_activations(small, ctx.seed(), mb, lengths[1], false, false, "bf16", ctx.planted_fault());
  // The same at twice the batch: bytes per token do not depend on how many rows carry the tokens (a count that
  // divides by one row's tokens, or a layer that saves per row what it should per token, reads 2 here; at batch 1 it
  // cannot show).
  const auto fb =
      train::saved_activations(small, ctx.seed(), 2 * mb, lengths[0], false, false, "bf16", ctx.planted_fault());
  const auto e1 = train::saved_activations(small, ctx.seed(), mb, lengths[0], true, false, "bf16", ctx.planted_fault());
  const auto e2 = train::saved_activations(small, ctx.seed(), mb, lengths[1], true, false, "bf16", ctx.planted_fault());
  const auto a1 =
      train::saved_activations(small, ctx.seed(), mb, lengths[0], false, true, "autocast", ctx.planted_fault());
  // 「autocast 不把参数变成 bf16：减半的是矩阵乘的中间结果」: the same fp32 model without autocast, segment by
  // segment. What the matmuls produce and what is computed from their outputs before the next matmul (attention's
  // output, gate and up and SiLU x up, down_proj's) is kept in bf16: half its fp32 bytes; the norms keep fp32, and
  // each projection also keeps its bf16 input copy (more than fp32 there).
  const auto p1 = train::saved_activations(small, ctx.seed(), mb, lengths[0], false, true, "fp32", ctx.planted_fault());
  {
    nlohmann::json seg = nlohmann::json::array();
    double half_a = 0, half_f = 0;
    for (std::size_t i = 0; i < a1.segments.size(); ++i) {
      const auto& name = a1.segments[i].first;
      seg.push_back({{"segment", name}, {"autocast", a1.segments[i].second}, {"fp32", p1.segments[i].second}});
      if (name == "attention" || name == "silu_times_up" || name == "down_proj_residual") {
        half_a += a1.segments[i].second;
        half_f += p1.segments[i].second;
      }
    }
    ctx.detail("autocast_vs_fp32_bytes_per_token_by_segment", seg);
    ctx.measure("autocast_matmul_outputs_over_fp32", half_a / half_f, "ratio");
    ctx.measure("autocast_saved_over_fp32", a1.bytes_per_token_layer / p1.bytes_per_token_layer, "ratio");
  }
  // The same at the longer length in a LoRA run (the base frozen, adapters on the seven projections): "activations
  // do not depend on the parameter count" (LoRA trains 0.5 % of them).
  const int lora_r = ctx.input("measure_lora_r").get<int>();
  const auto l2 =
      train::saved_activations(small, ctx.seed(), mb, lengths[1], false, false, "bf16", ctx.planted_fault(), lora_r);
  ctx.measure("lora_over_full_activations", l2.bytes_per_token_layer / f2.bytes_per_token_layer, "ratio");
  {  // and itemised by the answer key: the plain layer's list, less the frozen norms' outputs, plus each x A^T
    const double plain = itemised_plain_layer_bytes(sc);
    double change = 0;
    for (const auto& t : ref::lora_layer_saved_change_bytes(sc, lora_r, 7))
      change += static_cast<double>(t.elements_per_token);
    ctx.measure("lora_activations_itemised", l2.bytes_per_token_layer / (plain + change), "ratio");
  }
  const double h = static_cast<double>(sc.hidden);
  const double k = f2.bytes_per_token_layer / h;  // bytes per token per layer, in units of hidden
  const double k_model = 2.0 * static_cast<double>([&] {
                           std::int64_t e = 0;
                           for (const auto& t : ref::saved_per_layer(sc)) e += t.elements_per_token;
                           return e;
                         }()) /
                         h;
  // Carried to the stated model by the answer key's itemised bytes of each: the measured share of the scaled layer's
  // list times the stated model's list (its FFN and KV widths over hidden may differ from the scaled config's).
  const double extrapolated = f2.bytes_per_token_layer / itemised_plain_layer_bytes(sc) *
                              itemised_plain_layer_bytes(cfg) * static_cast<double>(cfg.layers) *
                              static_cast<double>(batch) * static_cast<double>(tokens) / GiB;
  ctx.measure("measured_k", k, "count");
  // The same bytes, itemised by the answer key for the plain layer the decoder is (ref::plain_layer_extra_bytes):
  // the minimal list and what eager PyTorch modules keep beyond it. A layer that keeps more than it should, or less,
  // moves this off 1 where the extrapolation's expected failure would not tell.
  const double k_itemised = itemised_plain_layer_bytes(sc) / h;
  ctx.measure("measured_k_itemised", k / k_itemised, "ratio");
  ctx.derive("ledger_plain_k", k_itemised, "count");
  wide_heads_itemised(ctx, mb, lengths[0]);
  ctx.measure("measured_k_ledger_model", k_model, "count");
  if (cfg.sparse_layers() == 0)
    ctx.measure("measured_extrapolated", extrapolated, "GiB");
  else  // (the measured layer is dense: its share is not carried to a mixture of experts' sparse layers)
    ctx.pending("measured_extrapolated: " + ctx.input("config").get<std::string>() +
                " is a mixture of experts; the measured layer is a dense one");
  ctx.measure("measured_k_growth_with_T", f2.bytes_per_token_layer / f1.bytes_per_token_layer, "ratio");
  ctx.measure("measured_k_batch_invariant", fb.bytes_per_token_layer / f1.bytes_per_token_layer, "ratio");
  {  // and the ledger's bytes at that batch (the figure above is its formula's at batch 1), itemised as above
    const double rows = 2.0 * mb, per_layer_token = rows * lengths[0] * static_cast<double>(sc.layers);
    ctx.measure("ledger_at_batch_vs_measured",
                (ref::activation_bytes(sc, 2 * mb, lengths[0], {}) / per_layer_token + plain_layer_extra(sc)) /
                    fb.bytes_per_token_layer,
                "ratio");
  }
  ctx.measure("measured_eager_k_growth_with_T", e2.bytes_per_token_layer / e1.bytes_per_token_layer, "ratio");
  ctx.measure("measured_autocast_k", a1.bytes_per_token_layer / h, "count");
  // Eager attention's T^2 term: the slope per token of context, against heads x 2 bytes (bf16 probabilities).
  const double slope = (e2.bytes_per_token_layer - e1.bytes_per_token_layer) / (lengths[1] - lengths[0]);
  ctx.measure("measured_eager_probability_bytes_per_context_token", slope / static_cast<double>(sc.heads), "B");
  // The eager path these bytes come from against the fused one (SDPA), on the same fp32 model and tokens: what the
  // layers computed, the largest difference over the largest |output|. A mask or a scale wrong in the eager path
  // leaves every byte above as it was.
  {
    const auto ef =
        train::saved_activations(small, ctx.seed(), mb, lengths[0], true, false, "fp32", ctx.planted_fault());
    const auto ff =
        train::saved_activations(small, ctx.seed(), mb, lengths[0], false, false, "fp32", ctx.planted_fault());
    double err = ef.output.size() == ff.output.size() && !ff.output.empty() ? 0 : 1e30, scale = 0;
    for (std::size_t i = 0; i < std::min(ef.output.size(), ff.output.size()); ++i) {
      const double d = std::fabs(static_cast<double>(ef.output[i]) - ff.output[i]);
      err = ref::worse(err, d);
      scale = std::max(scale, std::fabs(static_cast<double>(ff.output[i])));
    }
    ctx.measure("eager_vs_fused_attention", scale > 0 && err == err ? err / scale : 1e30, "ratio");  // (NaN: 1e30)
  }
  // The ledger's eager term (what the analytic part's eager alternative adds) on the measured model, per token of
  // context per head, against that slope: the alternative is printed, not judged; its term is judged here.
  {
    ref::ActivationOptions eager;
    eager.eager_attention_probs = true;
    const double T = lengths[1];
    const double ledger_per =
        (ref::activation_bytes(sc, 1, lengths[1], eager) - ref::activation_bytes(sc, 1, lengths[1], {})) /
        (T * static_cast<double>(sc.layers) * T * static_cast<double>(sc.heads));
    ctx.measure("eager_probabilities_vs_ledger", slope / static_cast<double>(sc.heads) / ledger_per, "ratio");
  }
  nlohmann::json seg = nlohmann::json::array();
  for (const auto& [name, b] : f1.segments) seg.push_back({{"segment", name}, {"bytes_per_token", b}, {"k", b / h}});
  ctx.detail("measured_segments_bf16", seg);
  // Where measured and modelled k differ: the layer in four blocks, the ledger's tensors beside the bytes measured
  // for the segments that save them (RoPE's shared cos, sin taken out).
  {
    const auto model = ref::saved_per_layer(sc);
    std::map<std::string, double> meas;
    for (const auto& [name, b] : f1.segments) meas[name] = b / h;
    meas["rope"] -= f1.shared_bytes / (static_cast<double>(mb) * lengths[0]) / h;
    struct Block {
      const char* name;
      std::vector<const char*> segments;
      std::vector<int> ledger;
    };
    const std::vector<Block> blocks = {
        {"input RMSNorm -> q/k/v inputs", {"input_rmsnorm", "q_k_v_proj"}, {0, 1}},
        {"RoPE, attention, o_proj", {"rope", "attention", "o_proj_residual"}, {2, 3, 4, 5}},
        {"post RMSNorm -> gate/up inputs", {"post_rmsnorm", "gate_up_proj"}, {6, 7}},
        {"SiLU x up, down_proj", {"silu_times_up", "down_proj_residual"}, {8, 9, 10}}};
    nlohmann::json table = nlohmann::json::array();
    for (const auto& b : blocks) {
      double m = 0, l = 0;
      nlohmann::json names = nlohmann::json::array();
      for (const char* sgm : b.segments) m += meas[sgm];
      for (int i : b.ledger) {
        l += 2.0 * static_cast<double>(model.at(i).elements_per_token) / h;
        names.push_back(model.at(i).name);
      }
      table.push_back(
          {{"block", b.name}, {"measured_k", m}, {"ledger_k", l}, {"difference_k", m - l}, {"ledger_tensors", names}});
    }
    ctx.detail("measured_vs_ledger_by_block", table);
  }
  ctx.detail("measured_shared_bytes", f2.shared_bytes);
  ctx.detail("measured_bytes_per_token_layer",
             {{"bf16_sdpa", {{"T", lengths}, {"bytes", {f1.bytes_per_token_layer, f2.bytes_per_token_layer}}}},
              {"bf16_eager", {{"T", lengths}, {"bytes", {e1.bytes_per_token_layer, e2.bytes_per_token_layer}}}},
              {"autocast_sdpa", {{"T", lengths[0]}, {"bytes", a1.bytes_per_token_layer}}}});
  ctx.assumption("measured on " + small.filename().string() + " (hidden " + std::to_string(sc.hidden) + ", " +
                 std::to_string(sc.layers) + " layers), batch " + std::to_string(mb) +
                 ", T = " + std::to_string(lengths[0]) + " and " + std::to_string(lengths[1]) +
                 ": bytes the forward leaves live with autograd minus without, autocast weight copies excluded, per "
                 "token per layer; k carries to Llama-3-8B because the shape ratios (FFN 3.5x, GQA 4) are the same");
}
#endif

static void activation_gib_saved(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  // The bytes under the counting allocator, unless the run judges only the comparison with transformers below (a
  // planted-fault test's run --statement).
  if (ctx.wants_any(kSavedBytesStatements) || ctx.wants_any({"wide_heads_itemised"})) activation_gib_bytes(ctx);
  // The model measured here (GQA 8 / 2, RoPE theta 500000), scaled down, against transformers' LlamaForCausalLM.
  // And at length: Llama-3.1's rope_scaling, T = 2,048, a left-padded row (issue 33).
  checks::decoder_vs_transformers(ctx, "measure_config", "reference_overrides", "reference_long");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(activation_gib_saved)
    .claim("ch04.activation_gib")
    .part("measured")
    .derives("ledger_plain_k", claimcheck::Source::reference);
