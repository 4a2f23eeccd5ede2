// Fuzz target: a Hugging Face config.json (ref::parse_model_config), then the ledger's arithmetic on what it accepts.
// Expected: a ref::SpecError naming the file and field. A finding: any other exception, a crash, undefined behaviour
// (an integer overflow included), or a size that is negative or not finite for a config the loader accepted.
#include <climits>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "claimcheck/ref/ledger.h"
#include "fuzz_check.h"

using namespace claimcheck;
using fuzz::need_positive;
using fuzz::need_size;

namespace {

const std::vector<ref::QuantFormat>& formats() {
  static const std::vector<ref::QuantFormat> f = [] {
    std::vector<ref::QuantFormat> out;
    for (const char* n : {"flat-4bit", "nf4-absmax64", "nf4-bnb-default"})
      out.push_back(
          ref::load_quant_format(std::string(CLAIMCHECK_SOURCE_DIR) + "/reference/data/quant/" + n + ".json"));
    return out;
  }();
  return f;
}

void ledger(const ref::ModelConfig& c) {
  for (auto [name, v] : {std::pair{"vocab_size", c.vocab},
                         {"hidden_size", c.hidden},
                         {"intermediate_size", c.intermediate},
                         {"num_hidden_layers", c.layers},
                         {"num_attention_heads", c.heads},
                         {"num_key_value_heads", c.kv_heads},
                         {"head_dim", c.head_dim}})
    need_positive(name, static_cast<double>(v));
  need_size("max_position_embeddings", c.max_position);
  for (const auto& l : ref::layer_linears(c)) need_size(l.name + ".params()", l.params());
  const ref::ParamCount p = ref::count_params(c);
  need_positive("params.total()", static_cast<double>(p.total()));
  need_size("params.linear_total()", p.linear_total());
  need_size("params.per_layer()", p.per_layer());
  need_size("params.embedding", p.embedding);
  need_size("params.lm_head", p.lm_head);
  need_size("params.active()", p.active());
  need_size("params.sparse_block()", p.sparse_block());
  // The ranks `claimcheck account --lora-r` accepts go up to INT_MAX. "all-linear" fits every family; a list of names
  // may be refused (SpecError naming target_modules), never miscounted. Each call names every module of every layer
  // (65536 layers: about 2 s here), so the lists are asked of the smaller configs only.
  try {
    const ref::LoraCount all = ref::lora_count(c, INT_MAX, ref::parse_lora_targets("all-linear"));
    need_positive("lora(r=INT_MAX, all-linear).trainable", static_cast<double>(all.trainable));
    need_size("lora(r=INT_MAX, all-linear).adapted_modules", all.adapted_modules);
  } catch (const ref::SpecError& e) {
    // A rank whose count passes 2^50 is refused with one line naming 'r' (what account prints): not a finding.
    if (std::string(e.what()).find("field 'r'") == std::string::npos) throw;
  }
  if (c.layers <= 256)
    for (const char* names : {"q_proj,v_proj", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj",
                              "lm_head,embed_tokens", ".*layers\\.0\\..*_proj"}) {
      try {
        need_size(std::string("lora(r=16, ") + names + ").trainable",
                  ref::lora_count(c, 16, ref::parse_lora_targets(names)).trainable);
      } catch (const ref::SpecError&) {
      }
    }
  for (int bpe : {1, 2, 4})
    need_size("kv_cache_bytes_per_token(" + std::to_string(bpe) + ")", ref::kv_cache_bytes_per_token(c, bpe));
  for (const auto& q : formats())
    need_size("quantized_weight_bytes(" + q.name + ")", ref::quantized_weight_bytes(c, q));
  for (const auto& t : ref::saved_per_layer(c)) need_size("saved " + t.name, t.elements_per_token);
  // `account` takes --tokens and --batch up to 2^63 - 1.
  for (std::int64_t tokens : {std::int64_t{1}, std::int64_t{4096}, std::int64_t{INT64_MAX}}) {
    for (std::int64_t batch : {std::int64_t{1}, std::int64_t{INT64_MAX}}) {
      need_size("activation_bytes", ref::activation_bytes(c, batch, tokens, {}));
      need_size("activation_bytes(eager)", ref::activation_bytes(c, batch, tokens, {4, true, true}));
      need_size("checkpointed_activation_bytes", ref::checkpointed_activation_bytes(c, batch, tokens, 2));
    }
    need_size("prefill_flops", ref::prefill_flops(p.total(), tokens));
  }
  need_positive("decode_bytes_per_token", ref::decode_bytes_per_token(c, {}));
  need_positive("decode_bytes_per_token(one row, 128K context)",
                ref::decode_bytes_per_token(c, {false, 131072, 0.5625}));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  formats();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  ref::ModelConfig c;
  try {
    c = ref::parse_model_config(std::string(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
  } catch (const ref::SpecError&) {
    return 0;  // rejected with a one-line error naming the field: what a bad config should get
  } catch (const std::exception& e) {
    fuzz::finding(std::string("parse_model_config threw an untyped exception: ") + e.what());
  }
  try {
    ledger(c);
  } catch (const std::exception& e) {
    fuzz::finding(std::string("the ledger threw on a config the loader accepted: ") + e.what());
  }
  return 0;
}
