// The ledger (reference/src/ledger*.cpp): parameter counts of public configs against their published figures,
// LoRA, KV cache, state and quantisation arithmetic, transformers' defaults and refusals, bad configs named by field.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "claimcheck/ref/ledger.h"

namespace ref = claimcheck::ref;
namespace fs = std::filesystem;

namespace {
const fs::path kRoot = CLAIMCHECK_SOURCE_DIR;
ref::ModelConfig cfg(const std::string& rel) { return ref::load_model_config(kRoot / rel); }
}  // namespace

TEST(Ledger, ReferenceModelsCountExactly) {
  // Published parameter counts (safetensors metadata of the public checkpoints).
  EXPECT_EQ(ref::count_params(cfg("reference/data/configs/llama-3-8b.json")).total(), 8030261248);
  EXPECT_EQ(ref::count_params(cfg("reference/data/configs/qwen2.5-0.5b.json")).total(), 494032768);
}

TEST(Ledger, OtherFamiliesMatchTheirPublishedCounts) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(kRoot / "tests/data/configs")) {
    std::ifstream in(e.path());
    const auto j = nlohmann::json::parse(in);
    const ref::ModelConfig c = ref::load_model_config(e.path());
    EXPECT_EQ(ref::count_params(c).total(), j.at("_published_params").get<std::int64_t>()) << e.path();
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(Ledger, LoraCountsPerTarget) {
  const auto q = cfg("reference/data/configs/qwen2.5-0.5b.json");
  EXPECT_EQ(ref::lora_trainable(q, 16, ref::all_linear_targets()), 8798208);  // PEFT's count for r=16, all linear
  const auto l = cfg("reference/data/configs/llama-3-8b.json");
  EXPECT_EQ(ref::lora_trainable(l, 8, {"q_proj", "v_proj"}), 3407872);  // PEFT default targets, r=8
  EXPECT_THROW(ref::lora_trainable(l, 8, {"qkv"}), ref::SpecError);
  EXPECT_THROW(ref::lora_trainable(l, 0, {"q_proj"}), ref::SpecError);
}

TEST(Ledger, KvCacheAndGqa) {
  EXPECT_EQ(ref::kv_cache_bytes_per_token(cfg("reference/data/configs/llama-3-8b.json")), 131072);
  EXPECT_EQ(ref::kv_cache_bytes_per_token(cfg("reference/data/configs/qwen2.5-0.5b.json")), 12288);
  EXPECT_EQ(ref::kv_cache_bytes_per_token(cfg("tests/data/configs/llama-2-7b.json")), 524288);
}

TEST(Ledger, StateAndQuantisationArithmetic) {
  EXPECT_EQ(ref::bytes_per_param(ref::mixed_precision_adamw_state()), 16);
  EXPECT_EQ(ref::bytes_per_param(ref::lora_adapter_state()), 14);
  const auto flat = ref::load_quant_format(kRoot / "reference/data/quant/flat-4bit.json");
  const auto absmax = ref::load_quant_format(kRoot / "reference/data/quant/nf4-absmax64.json");
  const auto bnb = ref::load_quant_format(kRoot / "reference/data/quant/nf4-bnb-default.json");
  EXPECT_DOUBLE_EQ(flat.bits_per_param(), 4.0);
  EXPECT_DOUBLE_EQ(absmax.bits_per_param(), 4.5);
  EXPECT_DOUBLE_EQ(bnb.bits_per_param(), 4.0 + 8.0 / 64 + 32.0 / (64 * 256));
  const auto l = cfg("reference/data/configs/llama-3-8b.json");
  EXPECT_DOUBLE_EQ(ref::quantized_weight_bytes(l, flat), 8030261248 * 0.5);
  // bnb keeps the embedding and lm_head in bf16: more bytes than quantising everything.
  EXPECT_GT(ref::quantized_weight_bytes(l, bnb), ref::quantized_weight_bytes(l, absmax));
  EXPECT_THROW(ref::parse_quant_format(R"({"bits": 4, "block_size": 64})", "q.json"), ref::SpecError);
  EXPECT_THROW(ref::parse_quant_format(R"({"bits": 4, "keep_bf16": ["norm"]})", "q.json"), ref::SpecError);
}

TEST(Ledger, ActivationModelIsExplicit) {
  const auto l = cfg("reference/data/configs/llama-3-8b.json");
  std::int64_t elems = 0;
  for (const auto& t : ref::saved_per_layer(l)) elems += t.elements_per_token;
  EXPECT_EQ(elems, 17 * 4096);  // 4h (norms) + q h + k, v h/4 each + attn out h + 3 x 3.5h
  EXPECT_DOUBLE_EQ(ref::checkpointed_activation_bytes(l, 1, 4096, 2), 32.0 * 4096 * 4096 * 2);
  EXPECT_GT(ref::activation_bytes(l, 1, 4096, {2, true, false}), ref::activation_bytes(l, 1, 4096, {}));
}

TEST(Ledger, DecodePrefillRidge) {
  const auto l = cfg("reference/data/configs/llama-3-8b.json");
  const auto h = ref::load_hardware_spec(kRoot / "reference/data/hardware/h100-sxm.json");
  EXPECT_DOUBLE_EQ(ref::decode_bytes_per_token(l, {}), 2.0 * 8030261248);
  ref::DecodeModel row;
  row.whole_embedding_table = false;
  EXPECT_LT(ref::decode_bytes_per_token(l, row), ref::decode_bytes_per_token(l, {}));
  EXPECT_DOUBLE_EQ(ref::prefill_flops(10, 3), 60);
  EXPECT_DOUBLE_EQ(h.ridge(), 989e12 / 3.35e12);
}

TEST(Ledger, BadConfigsNameFileAndField) {
  auto expect_field = [](const std::string& file, const std::string& field) {
    const fs::path p = kRoot / "tests/data/bad" / file;
    try {
      ref::load_model_config(p);
      ADD_FAILURE() << file << " loaded";
    } catch (const ref::SpecError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find(p.string()), std::string::npos) << m;
      EXPECT_NE(m.find("field '" + field + "'"), std::string::npos) << m;
    }
  };
  expect_field("bert-base.json", "model_type");
  expect_field("negative-hidden.json", "hidden_size");
  expect_field("string-layers.json", "num_hidden_layers");
  expect_field("missing-vocab.json", "vocab_size");
  expect_field("truncated.json", "(json)");
  expect_field("bad-kv-heads.json", "num_key_value_heads");
  expect_field("../../../reference/data/hardware/h100-sxm.json", "model_type");  // a file that is not a config
}

// ---- issue 12: transformers' defaults, peft's target spellings, more families ------------------------------------
namespace {
ref::ModelConfig parse(const std::string& json_text) { return ref::parse_model_config(json_text, "t.json"); }
std::string field_of(const std::string& json_text) {
  try {
    parse(json_text);
  } catch (const ref::SpecError& e) {
    const std::string m = e.what();
    const auto a = m.find("field '"), b = m.find('\'', a + 7);
    return a == std::string::npos ? m : m.substr(a + 7, b - a - 7);
  }
  return "(accepted)";
}
const char* kDims =
    R"("vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4)";
std::string cfg_of(const std::string& type, const std::string& extra = "") {
  return "{\"model_type\": \"" + type + "\", " + kDims + (extra.empty() ? "" : ", " + extra) + "}";
}
}  // namespace

TEST(Ledger, MixtureOfExpertsMatchesPublishedCounts) {
  // Mixtral-8x7B: 46.7B in total, 12.9B active per token (Mistral AI); safetensors metadata 46,702,792,704.
  const auto m = ref::count_params(cfg("reference/data/configs/mixtral-8x7b.json"));
  EXPECT_EQ(m.total(), 46702792704);
  EXPECT_EQ(m.active(), 12879925248);
  EXPECT_EQ(m.sparse_layers, 32);
  // Qwen1.5-MoE-A2.7B: 14.3B in total, 2.7B activated (model card); 60 experts, top 4, a shared expert.
  const auto q = ref::count_params(cfg("reference/data/configs/qwen1.5-moe-a2.7b.json"));
  EXPECT_EQ(q.total(), 14315784192);
  EXPECT_EQ(q.active(), 2689173504);
  // Gemma-2B: 2,506,172,416, tied embeddings (GemmaConfig's default is tie_word_embeddings=True).
  EXPECT_EQ(ref::count_params(cfg("reference/data/configs/gemma-2b.json")).total(), 2506172416);
  // Decode reads the weights a token goes through: active, not total.
  const auto mx = cfg("reference/data/configs/mixtral-8x7b.json");
  EXPECT_DOUBLE_EQ(ref::decode_bytes_per_token(mx, {}), 2.0 * 12879925248);
  EXPECT_EQ(ref::kv_cache_bytes_per_token(mx), 131072);
  // Activations follow the routing: per token per sparse layer, the attention part (4 hidden-wide norms' tensors,
  // q and attention output 4096 each, k and v 1024 each) plus router logits and softmax (8 + 8), 2 routing weights,
  // and for each of the 2 experts its input copy and output (4096 each) and gate, up, product (14336 each).
  const std::int64_t attention = 4 * 4096 + 2 * 4096 + 2 * 1024;
  const std::int64_t moe = 8 + 8 + 2 + 2 * (4096 + 4096 + 3 * 14336);
  EXPECT_DOUBLE_EQ(ref::activation_bytes(mx, 1, 4096, {}), 2.0 * (attention + moe) * 4096 * 32);
  // Qwen1.5-MoE: every layer sparse; 4 of 60 experts of 1408, a shared expert of 5632 with its sigmoid gate.
  const auto qm = cfg("reference/data/configs/qwen1.5-moe-a2.7b.json");
  const std::int64_t q_attention = 4 * 2048 + 2 * 2048 + 2 * 2048;
  const std::int64_t q_moe = 60 + 60 + 4 + 4 * (2048 + 2048 + 3 * 1408) + 3 * 5632 + 2 + 2048;
  EXPECT_DOUBLE_EQ(ref::activation_bytes(qm, 1, 1000, {}), 2.0 * (q_attention + q_moe) * 1000 * 24);
}

TEST(Ledger, TransformersDefaultsOfAbsentKeys) {
  // Qwen3 without head_dim: Qwen3Config's 128, not hidden / heads (16).
  EXPECT_EQ(parse(cfg_of("qwen3", R"("num_key_value_heads": 2)")).head_dim, 128);
  // num_key_value_heads absent: Mistral 8, Qwen2 / Qwen3 32, Gemma and Qwen2-MoE 16, Llama the head count.
  EXPECT_EQ(parse(cfg_of("llama")).kv_heads, 4);
  const std::string heads32 =
      R"({"vocab_size": 100, "hidden_size": 256, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 32, "model_type": ")";
  EXPECT_EQ(parse(heads32 + "mistral\"}").kv_heads, 8);
  EXPECT_EQ(parse(heads32 + "qwen2\"}").kv_heads, 32);
  EXPECT_EQ(parse(heads32 + "gemma\"}").kv_heads, 16);
  EXPECT_EQ(field_of(cfg_of("qwen2")), "num_key_value_heads");  // the default 32 does not divide 4 heads
  // Gemma ties its embeddings unless told otherwise; Llama does not.
  EXPECT_TRUE(parse(cfg_of("gemma", R"("num_key_value_heads": 1)")).tie_embeddings);
  EXPECT_FALSE(parse(cfg_of("llama")).tie_embeddings);
  // Biases the family's modeling code never builds are ignored (and said to be).
  const auto mi = parse(cfg_of("mistral", R"("num_key_value_heads": 2, "mlp_bias": true, "attention_bias": true)"));
  EXPECT_FALSE(mi.mlp_bias || mi.qkv_bias || mi.o_bias);
  EXPECT_EQ(ref::count_params(mi).total(),
            ref::count_params(parse(cfg_of("mistral", R"("num_key_value_heads": 2)"))).total());
  int known = 0;
  for (const auto& k : mi.ignored) known += k.known && (k.key == "mlp_bias" || k.key == "attention_bias");
  EXPECT_EQ(known, 2);
  EXPECT_TRUE(parse(cfg_of("llama", R"("mlp_bias": true)")).mlp_bias);
  // Unknown keys are listed as such; harmless ones as known.
  const auto u = parse(cfg_of("llama", R"("rope_scaling": {"factor": 2.0}, "frobnicate": 3)"));
  ASSERT_EQ(u.ignored.size(), 2u);
  for (const auto& k : u.ignored) EXPECT_EQ(k.known, k.key == "rope_scaling") << k.key;
}

TEST(Ledger, TransformersRefusalsAreRefused) {
  // LlamaConfig.validate_architecture: heads must divide hidden_size, head_dim or not.
  EXPECT_EQ(
      field_of(
          R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 66, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4, "head_dim": 16})"),
      "hidden_size");
  EXPECT_EQ(
      field_of(
          R"({"model_type": "llama", "vocab_size": 1000, "hidden_size": 64.0, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4})"),
      "hidden_size");  // strict dataclass: an int field given a float
  EXPECT_EQ(field_of(cfg_of("llama", R"("tie_word_embeddings": "yes")")), "tie_word_embeddings");
  EXPECT_EQ(field_of(cfg_of("llama", R"("hidden_act": "foo")")), "hidden_act");
  EXPECT_EQ(field_of(cfg_of("llama", R"("hidden_act": "prelu")")), "hidden_act");  // learnable: changes the count
  EXPECT_EQ(field_of(cfg_of("llama", R"("quantization_config": {"quant_method": "awq"})")), "quantization_config");
  EXPECT_EQ(
      field_of(cfg_of("mixtral", R"("num_key_value_heads": 2, "num_local_experts": 2, "num_experts_per_tok": 3)")),
      "num_experts_per_tok");
  EXPECT_EQ(field_of(cfg_of("phi9")), "model_type");
  // Mistral (unlike Llama) accepts a hidden size that heads do not divide when head_dim is given.
  EXPECT_EQ(
      field_of(
          R"({"model_type": "mistral", "vocab_size": 10, "hidden_size": 66, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16})"),
      "(accepted)");
}

TEST(Ledger, LoraTargetsAsPeftSpellsThem) {
  const auto l = cfg("reference/data/configs/llama-3-8b.json");
  const auto all = ref::lora_trainable(l, 8, ref::all_linear_targets());
  EXPECT_EQ(ref::lora_trainable(l, 8, {"all-linear"}), all);
  EXPECT_EQ(ref::lora_trainable(l, 8, {"q_proj", "q_proj", "v_proj"}), 3407872);  // a duplicate counts once
  EXPECT_EQ(ref::lora_trainable(l, 8, {"self_attn.q_proj", "v_proj"}), 3407872);
  EXPECT_EQ(ref::lora_count(l, 8, ref::parse_lora_targets(R"(.*\.(q|v)_proj)")).trainable, 3407872);
  EXPECT_EQ(ref::lora_trainable(l, 8, {"layers.0.self_attn.q_proj"}), 8 * (4096 + 4096));  // layer 0 only
  EXPECT_EQ(ref::lora_trainable(l, 8, {"lm_head"}), 8 * (4096 + 128256));
  EXPECT_EQ(ref::lora_trainable(l, 8, {"embed_tokens"}), 8 * (128256 + 4096));
  EXPECT_THROW(ref::lora_trainable(l, 8, {"mlp"}), ref::SpecError);              // a block, not a Linear
  EXPECT_THROW(ref::lora_trainable(l, 8, {"input_layernorm"}), ref::SpecError);  // a norm
  EXPECT_THROW(ref::lora_trainable(l, 8, {"q_proj", "all-linear"}), ref::SpecError);
  EXPECT_THROW(ref::lora_count(l, 8, ref::parse_lora_targets("(")), ref::SpecError);
  // Mixtral under all-linear: attention, router and the fused experts as peft 0.21 adapts them (peft: 359,665,664).
  const auto mx = cfg("reference/data/configs/mixtral-8x7b.json");
  const std::int64_t attn = 16 * (2 * (4096 + 4096) + 2 * (4096 + 1024)), router = 16 * (4096 + 8);
  const std::int64_t experts = 16 * 8 * (2 * (4096 + 2 * 14336) + (14336 + 4096));  // w1 and w3 each r
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"all-linear"}), 32 * (attn + router + experts));
  EXPECT_THROW(ref::lora_trainable(mx, 16, {"experts"}), ref::SpecError);
  EXPECT_THROW(ref::lora_trainable(mx, 16, {"gate_proj"}), ref::SpecError);  // no such Linear in Mixtral
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"gate"}), 32 * router);             // peft converts Mixtral's router
  // Mixtral's transformers-4 names, as peft 0.21.2 converts them: w1 + w3 the fused gate_up_proj (rank doubled), w2
  // down_proj, each in every layer (a layer prefix too: the name becomes a parameter name); w1 alone refused.
  const std::int64_t gate_up = 16 * 8 * 2 * (4096 + 2 * 14336), down = 16 * 8 * (14336 + 4096);
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"w1", "w3"}), 32 * gate_up);
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"layers.0.mlp.experts.w2"}), 32 * down);
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"layers.0.mlp.gate"}), 32 * router);
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"q_proj", "k_proj", "v_proj", "o_proj", "w1", "w2", "w3", "gate"}),
            ref::lora_trainable(mx, 16, {"all-linear"}));
  EXPECT_EQ(ref::lora_trainable(mx, 16, {"w1", "w3", "gate_proj"}), 32 * gate_up);  // gate_proj skipped beside them
  EXPECT_THROW(ref::lora_trainable(mx, 16, {"w1"}), ref::SpecError);
  EXPECT_THROW(ref::lora_trainable(mx, 16, {"q_proj", "w3"}), ref::SpecError);
  const auto qm = cfg("reference/data/configs/qwen1.5-moe-a2.7b.json");
  EXPECT_THROW(ref::lora_trainable(qm, 16, {"gate"}), ref::SpecError);                // peft refuses Qwen2MoeTopKRouter
  const auto partly = ref::lora_count(qm, 16, ref::parse_lora_targets("q_proj,w1"));  // peft skips w1, keeps q_proj
  EXPECT_EQ(partly.unmatched, std::vector<std::string>{"w1"});
  EXPECT_EQ(partly.trainable, 24 * 16 * (2048 + 2048));
}

TEST(Ledger, Gemma2Phi3OlmoStarcoder2AsTransformersBuildThem) {
  // Published counts (safetensors metadata of the public checkpoints); transformers 5.24 builds the same.
  const auto g = cfg("tests/data/configs/gemma-2-2b.json");
  const auto gp = ref::count_params(g);
  EXPECT_EQ(gp.total(), 2614341888);
  EXPECT_EQ(gp.norms_per_layer, 4 * 2304);  // input, post_attention, pre_feedforward, post_feedforward
  EXPECT_EQ(gp.lm_head, 0);                 // Gemma2Config ties by default
  EXPECT_EQ(ref::kv_cache_bytes_per_token(g), 2 * 26 * 4 * 256 * 2);
  EXPECT_EQ(ref::lora_trainable(g, 16, {"all-linear"}), 20766720);  // peft 0.21.2
  EXPECT_THROW(ref::lora_trainable(g, 16, {"pre_feedforward_layernorm"}), ref::SpecError);

  const auto p = cfg("tests/data/configs/phi-3-mini-4k.json");
  EXPECT_EQ(ref::count_params(p).total(), 3821079552);
  EXPECT_EQ(ref::kv_cache_bytes_per_token(p), 2 * 32 * 32 * 96 * 2);
  EXPECT_EQ(ref::lora_trainable(p, 16, {"all-linear"}), 25165824);  // qkv_proj, o_proj, gate_up_proj, down_proj
  EXPECT_EQ(ref::lora_trainable(p, 8, {"qkv_proj"}), 32 * 8 * (3072 + 3 * 3072));
  EXPECT_EQ(ref::lora_trainable(p, 8, {"mlp.gate_up_proj", "q_proj"}), 32 * 8 * (3072 + 2 * 8192));  // q_proj: none
  EXPECT_THROW(ref::lora_trainable(p, 8, {"q_proj", "v_proj"}), ref::SpecError);                     // Phi-3 fuses them

  const auto o = cfg("tests/data/configs/olmo-1b.json");
  const auto op = ref::count_params(o);
  EXPECT_EQ(op.total(), 1176764416);
  EXPECT_EQ(op.norms_per_layer + op.final_norm, 0);  // OlmoLayerNorm has no parameters
  EXPECT_EQ(ref::lora_trainable(o, 16, {"all-linear"}), 12058624);
  EXPECT_THROW(ref::lora_trainable(o, 16, {"input_layernorm"}), ref::SpecError);

  const auto s = cfg("tests/data/configs/starcoder2-3b.json");
  const auto sp = ref::count_params(s);
  EXPECT_EQ(sp.total(), 3030371328);
  EXPECT_EQ(sp.norms_per_layer, 2 * 2 * 3072);  // LayerNorm: weight and bias
  EXPECT_EQ(sp.final_norm, 2 * 3072);
  EXPECT_EQ(sp.mlp_per_layer, 2 * 3072 * 12288 + 12288 + 3072);  // c_fc, c_proj with bias (use_bias)
  EXPECT_EQ(ref::kv_cache_bytes_per_token(s), 2 * 30 * 2 * 128 * 2);
  EXPECT_EQ(ref::lora_trainable(s, 16, {"all-linear"}), 23838720);
  EXPECT_EQ(ref::lora_trainable(s, 8, {"c_fc"}), 30 * 8 * (3072 + 12288));
  EXPECT_THROW(ref::lora_trainable(s, 8, {"gate_proj"}), ref::SpecError);
  EXPECT_THROW(ref::lora_trainable(s, 8, {"input_layernorm"}), ref::SpecError);
}

TEST(Ledger, NewFamiliesDefaultsAndRefusals) {
  // Defaults of absent keys: Gemma2 4 key/value heads and head_dim 256, tied; Starcoder2 2 key/value heads, tied,
  // biases on; Phi-3 and OLMo the head count.
  const std::string heads8 =
      R"({"vocab_size": 40000, "hidden_size": 64, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 8, "model_type": ")";
  const auto g = parse(heads8 + "gemma2\"}");
  EXPECT_EQ(g.kv_heads, 4);
  EXPECT_EQ(g.head_dim, 256);
  EXPECT_TRUE(g.tie_embeddings);
  const auto s = parse(heads8 + "starcoder2\"}");
  EXPECT_EQ(s.kv_heads, 2);
  EXPECT_TRUE(s.tie_embeddings && s.qkv_bias && s.o_bias && s.mlp_bias);
  EXPECT_FALSE(parse(heads8 + R"(starcoder2", "use_bias": false})").mlp_bias);
  EXPECT_EQ(parse(heads8 + "phi3\"}").kv_heads, 8);
  EXPECT_EQ(parse(heads8 + "olmo\"}").kv_heads, 8);
  // Gemma2 reads hidden_activation; hidden_act is a key it ignores (said to be).
  const auto ga = parse(heads8 + R"(gemma2", "hidden_act": "frobnicate"})");
  ASSERT_EQ(ga.ignored.size(), 1u);
  EXPECT_TRUE(ga.ignored[0].known);
  EXPECT_EQ(field_of(heads8 + R"(gemma2", "hidden_activation": "frobnicate"})"), "hidden_activation");
  // num_key_value_heads null: Qwen2Config's __post_init__ makes it the head count (absent: 32); Mistral refuses.
  EXPECT_EQ(parse(heads8 + R"(qwen2", "num_key_value_heads": null})").kv_heads, 8);
  EXPECT_EQ(field_of(heads8 + R"(mistral", "num_key_value_heads": null})"), "num_key_value_heads");
  EXPECT_EQ(field_of(heads8 + R"(phi3", "head_dim": null})"), "head_dim");     // None reaches Phi3Attention
  EXPECT_EQ(parse(heads8 + R"(starcoder2", "head_dim": null})").head_dim, 8);  // Starcoder2Attention's `or`
  EXPECT_EQ(field_of(heads8 + R"(llama", "tie_word_embeddings": null})"), "tie_word_embeddings");
  // What transformers refuses.
  EXPECT_EQ(field_of(cfg_of("gemma2", R"("num_key_value_heads": 2, "hidden_size": 66, "head_dim": 16)")),
            "hidden_size");
  EXPECT_EQ(field_of(cfg_of("gemma2", R"("num_key_value_heads": 2, "final_logit_softcapping": 30)")),
            "final_logit_softcapping");
  EXPECT_EQ(field_of(cfg_of("gemma2", R"("num_key_value_heads": 2, "query_pre_attn_scalar": 256.0)")),
            "query_pre_attn_scalar");
  EXPECT_EQ(field_of(cfg_of("olmo", R"("clip_qkv": 8)")), "clip_qkv");
  EXPECT_EQ(field_of(cfg_of("olmo", R"("clip_qkv": 8.0)")), "(accepted)");
  EXPECT_EQ(field_of(cfg_of("starcoder2", R"("num_key_value_heads": 2, "use_bias": 1)")), "use_bias");
  EXPECT_EQ(field_of(cfg_of("phi3")), "pad_token_id");  // Phi3Config's pad_token_id 32000 is past 1000 rows
  EXPECT_EQ(field_of(cfg_of("phi3", R"("pad_token_id": 999)")), "(accepted)");
  EXPECT_EQ(field_of(cfg_of("llama", R"("pad_token_id": 1000)")), "pad_token_id");
  EXPECT_EQ(field_of(cfg_of("llama", R"("pad_token_id": -1000)")), "(accepted)");
  EXPECT_EQ(field_of(cfg_of("llama", R"("pad_token_id": 1.0)")), "pad_token_id");
  // Parameter-free extras: soft-capping, clip_qkv change no count.
  EXPECT_EQ(ref::count_params(parse(cfg_of("olmo", R"("clip_qkv": 8.0)"))).total(),
            ref::count_params(parse(cfg_of("olmo"))).total());
}

TEST(Ledger, OddHeadUnderRopeRefusedAsTransformersDoes) {
  // transformers 5's validate_rope: a fully rotated head of odd width above 4 is refused where the config holds a
  // head_dim (the key, or Llama's and Mistral's hidden // heads); 3 is allowed, and so is a partly rotated head.
  const std::string h2 =
      R"({"vocab_size": 64, "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1, "model_type": ")";
  for (const char* fam :
       {"llama", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "olmo", "starcoder2", "mixtral", "qwen2_moe"})
    EXPECT_EQ(field_of(h2 + fam + R"(", "hidden_size": 16, "head_dim": 5})"), "head_dim") << fam;
  EXPECT_EQ(field_of(h2 + R"(llama", "hidden_size": 10})"), "head_dim");                      // 10 // 2 = 5, computed
  EXPECT_EQ(field_of(h2 + R"(mistral", "hidden_size": 14, "head_dim": null})"), "head_dim");  // null: computed
  EXPECT_EQ(field_of(h2 + R"(qwen2", "hidden_size": 10})"), "(accepted)");                    // Qwen2Config holds none
  EXPECT_EQ(field_of(h2 + R"(starcoder2", "hidden_size": 14})"), "(accepted)");
  EXPECT_EQ(field_of(h2 + R"(llama", "hidden_size": 6})"), "(accepted)");  // 3: at most 4
  EXPECT_EQ(field_of(h2 + R"(llama", "hidden_size": 16, "head_dim": 5, "partial_rotary_factor": 0.5})"), "(accepted)");
  EXPECT_EQ(
      field_of(
          h2 +
          R"(qwen2", "hidden_size": 16, "head_dim": 5, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}})"),
      "(accepted)");
  EXPECT_EQ(field_of(h2 + R"(llama", "hidden_size": 16, "head_dim": 7, "partial_rotary_factor": 1.0})"), "head_dim");
}

TEST(Ledger, GptShapeCountsAsGpt2IsPublished) {
  // GPT-2 small: 124,439,808 parameters with its lm_head tied to the token embedding (the ledger's shape is untied).
  const ref::GptShape g = ref::parse_gpt_shape(
      R"({"vocab": 50257, "d_model": 768, "n_layer": 12, "n_head": 12, "d_ff": 3072, "context": 1024})", "gpt2");
  EXPECT_EQ(ref::gpt_params(g) - g.vocab * g.d_model, 124439808);
  for (const char* bad : {R"({"vocab": 128, "d_model": 130, "n_layer": 4, "n_head": 4, "d_ff": 512, "context": 128})",
                          R"({"vocab": 128, "d_model": 128, "n_layer": 0, "n_head": 4, "d_ff": 512, "context": 128})",
                          R"({"vocab": 128, "d_model": 128, "n_head": 4, "d_ff": 512, "context": 128})", "[1]", "{"}) {
    try {
      ref::parse_gpt_shape(bad, "tiny.json");
      ADD_FAILURE() << bad << " accepted";
    } catch (const ref::SpecError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("tiny.json: field '", 0), 0u) << e.what();
    }
  }
}

// A LoRA run of the plain Llama layer keeps the plain list less the two frozen norms' bf16 outputs, plus each
// adapter's x A^T: on the scaled Llama (hidden 512), r = 16 on seven projections, 7 x 32 - 2 x 1024 bytes per token.
TEST(Ledger, LoraLayerSavedChange) {
  const auto c = cfg("reference/data/configs/llama-scaled-ch04.json");
  std::int64_t change = 0;
  for (const auto& t : ref::lora_layer_saved_change_bytes(c, 16, 7)) change += t.elements_per_token;
  EXPECT_EQ(change, 7 * 2 * 16 - 2 * 2 * 512);
  EXPECT_THROW(ref::lora_layer_saved_change_bytes(c, 0, 7), ref::SpecError);
  EXPECT_TRUE(ref::lora_layer_saved_change_bytes(cfg("reference/data/configs/mixtral-8x7b.json"), 16, 7).empty());
}

TEST(Ledger, ForwardFlopsCountLinearWeightsAndCausalPairs) {
  // Chapter 3's GPT (d 128, 4 layers, d_ff 512, V 128) at batch 2 x 128 tokens: per layer 2 x (4 d^2 + 2 d d_ff) x T
  // + 4 d T (T + 1) / 2, the lm_head 2 d V T; written out by hand: 444,858,368.
  const ref::GptShape g = ref::parse_gpt_shape(
      R"({"vocab": 128, "d_model": 128, "n_layer": 4, "n_head": 4, "d_ff": 512, "context": 128})", "tiny");
  EXPECT_DOUBLE_EQ(ref::gpt_forward_flops(g, 2, 128), 444858368.0);
  // A GQA Llama (hidden 64, 4 heads of 16, 2 KV heads, intermediate 128), 3 layers, batch 3 x 10 tokens: q and o
  // 64 x 64, k and v 64 x 32, gate / up / down 64 x 128 per layer: 6,762,240.
  const ref::ModelConfig c = parse(
      R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 3,
          "num_attention_heads": 4, "num_key_value_heads": 2})");
  EXPECT_DOUBLE_EQ(ref::decoder_forward_flops(c, 3, 3, 10), 6762240.0);
}
