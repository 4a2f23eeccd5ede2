// ch05.lora_delta, measured part: the project's LoRA linear against peft's (reference/python/hf_reference.py) for
// each (r, alpha, rsLoRA) case of inputs.peft_cases, with the same base weight, A and B: outputs at init and trained,
// the merged weight, A and B after one AdamW step; and a fresh adapter (the project's initialisation) against a
// fresh peft adapter (peft's), one step each from zero B: the norms of their delta weights.
#include "claimcheck/check.h"
#include "claimcheck/io.h"

#include <string>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "claimcheck/train/experiments.h"
#endif

static void lora_delta_vs_peft(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  claimcheck::ScratchDir dir("vs_peft");
  std::vector<std::string> args{"lora", "--seed", std::to_string(ctx.seed() % 1000003)};
  nlohmann::json cases = nlohmann::json::array();
  int i = 0;
  for (const auto& c : ctx.input("peft_cases")) {
    claimcheck::train::LoraCase k;
    k.r = c.at("r").get<int>();
    k.alpha = c.at("alpha").get<double>();
    k.rslora = c.value("use_rslora", false);
    const std::string name = "r" + std::to_string(k.r) + "_alpha" + c.at("alpha").dump() + (k.rslora ? "_rslora" : "");
    const auto file = dir.path() / (name + ".safetensors");
    claimcheck::train::export_lora_run(k, ctx.seed() + static_cast<std::uint64_t>(i++), file, ctx.planted_fault());
    char spec[512];
    std::snprintf(spec, sizeof spec, "%s:%d:%.17g:%d:%.17g:%.17g:%s", name.c_str(), k.r, k.alpha, k.rslora ? 1 : 0,
                  k.lr, k.weight_decay, file.c_str());
    args.insert(args.end(), {"--case", spec});
    cases.push_back({{"name", name},
                     {"r", k.r},
                     {"alpha", k.alpha},
                     {"alpha_over_r", k.alpha / k.r},
                     {"use_rslora", k.rslora},
                     {"in", k.in},
                     {"out", k.out},
                     {"adamw_lr", k.lr}});
  }
  const nlohmann::json r = claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py", args);
  if (r.contains("skip")) {
    ctx.pending("LoRA against peft: " + r["skip"].get<std::string>());
    return;
  }
  claimcheck::forward_driver_result(ctx, r);
  ctx.detail("peft_cases", cases);
  ctx.assumption(
      "against peft: one nn.Linear with bias, LoraConfig(r, lora_alpha, use_rslora, dropout 0) per case; "
      "AdamW on A and B only, the base frozen");
#else
  (void)ctx;
#endif
}
CLAIMCHECK_REGISTER(lora_delta_vs_peft).claim("ch05.lora_delta").part("measured");
