#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "claimcheck/ref/ledger.h"
#include "claimcheck/ref/roofline.h"
#include "claimcheck/ref/stats.h"

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
  EXPECT_EQ(ref::lora_trainable(l, 8, {"q_proj", "v_proj"}), 3407872);       // PEFT default targets, r=8
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

TEST(Stats, WaldWilsonAndTheTest) {
  EXPECT_NEAR(ref::wald_halfwidth(0.5, 80), 1.96 * std::sqrt(0.25 / 80), 1e-15);
  const auto w = ref::wilson_interval(0.5, 80);
  EXPECT_NEAR((w.lo + w.hi) / 2, 0.5, 1e-12);
  const auto z = ref::wilson_interval(0.0, 80);  // Wilson stays inside [0, 1] where Wald collapses
  EXPECT_GE(z.lo, -1e-15);
  EXPECT_GT(z.hi, 0.0);
  const double exact = ref::exact_coverage(0.5, 80, false);
  EXPECT_NEAR(ref::simulated_coverage(0.5, 80, false, 20000, 1), exact, 0.01);
  EXPECT_NEAR(ref::two_proportion_p_value(0.5, 80, 0.55, 80), 0.527, 0.01);
  EXPECT_LT(ref::two_proportion_p_value(0.5, 1000, 0.6, 1000), 1e-4);
}

// ---- the roofline's answer key ------------------------------------------------------------------------------------
TEST(Roofline, TheoreticalPeakIsCoresClockUnitsLanesTwo) {
  const ref::FmaUnits zen3{2, 256, ""};
  EXPECT_DOUBLE_EQ(ref::theoretical_peak_flops(2, 3.0e9, zen3, 256), 2 * 3.0e9 * 2 * 8 * 2);
  // an AVX-512 ISA on 256-bit units runs at the units' width; a portable build at one lane
  EXPECT_DOUBLE_EQ(ref::theoretical_peak_flops(1, 1e9, zen3, 512), 1e9 * 2 * 8 * 2);
  EXPECT_DOUBLE_EQ(ref::theoretical_peak_flops(1, 1e9, zen3, 32), 1e9 * 2 * 1 * 2);
}

TEST(Roofline, FmaUnitsFollowTheTableAndRejectMalformedOnes) {
  const auto table = std::filesystem::path(CLAIMCHECK_SOURCE_DIR) / "reference/data/hardware/cpu-fma.json";
  ref::CpuIdentity milan{"AuthenticAMD", 25, 1, "AMD EPYC 7B13", 2.45e9, ""};
  EXPECT_EQ(ref::fma_units(milan, {"avx2", "fma"}, table).vector_bits, 256);
  ref::CpuIdentity zen1{"AuthenticAMD", 23, 1, "", 0, ""};
  EXPECT_EQ(ref::fma_units(zen1, {"avx2", "fma"}, table).vector_bits, 128);
  ref::CpuIdentity skx{"GenuineIntel", 6, 85, "", 0, ""};
  EXPECT_EQ(ref::fma_units(skx, {"avx2", "fma", "avx512f"}, table).vector_bits, 512);
  EXPECT_EQ(ref::fma_units(skx, {"avx2", "fma"}, table).vector_bits, 256);
  EXPECT_EQ(ref::fma_units(ref::CpuIdentity{"Other", 1, 1, "", 0, ""}, {}, table).units, 1);
  const auto bad = std::filesystem::temp_directory_path() / "claimcheck-bad-fma.json";
  std::ofstream(bad) << R"({"rules": [{"fma_units": 0, "vector_bits": 256}]})";
  try {
    ref::fma_units(milan, {}, bad);
    FAIL() << "a rule with 0 FMA units was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("rules[0].fma_units"), std::string::npos) << e.what();
  }
  std::filesystem::remove(bad);
}

TEST(Roofline, KneeIsWhereTheMemoryFloorMeetsTheComputeRoof) {
  // a machine with a 10 ms floor and 1 ms per token of compute: max(10, B) ms per step -> knee at B = 10
  const std::vector<int> b = {1, 2, 4, 8, 16, 32, 64};
  std::vector<double> t;
  for (int x : b) t.push_back(std::max(10.0, 1.0 * x) * 1e-3);
  EXPECT_DOUBLE_EQ(ref::sweep_knee(b, t).batch, 10.0);
  EXPECT_THROW(ref::sweep_knee({1}, {1.0}), std::invalid_argument);
}

// Gini's mean difference and its bootstrap: exact on a small case, zero for identical values, and an interval
// whose coverage of the true value (2 sigma / sqrt(pi) for a normal) is near its level at n = 16.
TEST(Stats, MeanAbsDifferenceAndItsBootstrap) {
  EXPECT_NEAR(ref::mean_abs_difference({0, 1, 2}), 4.0 / 3.0, 1e-15);
  EXPECT_THROW(ref::mean_abs_difference({1.0}), std::invalid_argument);
  const auto same = ref::bootstrap_mean_abs_difference(std::vector<double>(8, 3.0), 500, 0.95, 1);
  EXPECT_EQ(same.estimate, 0);
  EXPECT_EQ(same.interval.hi, 0);
  EXPECT_THROW(ref::bootstrap_mean_abs_difference({1, 2, NAN}, 500, 0.95, 1), std::invalid_argument);
  EXPECT_THROW(ref::bootstrap_mean_abs_difference({1, 2, 3}, 10, 0.95, 1), std::invalid_argument);
  std::mt19937_64 rng(7);
  std::normal_distribution<double> n01(0, 0.1);
  const double truth = 2 * 0.1 / std::sqrt(M_PI);
  int covered = 0;
  const int datasets = 200;
  for (int d = 0; d < datasets; ++d) {
    std::vector<double> x(16);
    for (auto& v : x) v = n01(rng);
    const auto b = ref::bootstrap_mean_abs_difference(x, 1000, 0.95, d);
    EXPECT_LE(b.interval.lo, b.estimate);
    EXPECT_GE(b.interval.hi, b.estimate);
    covered += b.interval.lo <= truth && truth <= b.interval.hi;
  }
  EXPECT_GE(covered, 0.85 * datasets) << covered << " of " << datasets;  // percentile bootstrap at n = 16
  EXPECT_LE(covered, 0.99 * datasets) << covered << " of " << datasets;
}
