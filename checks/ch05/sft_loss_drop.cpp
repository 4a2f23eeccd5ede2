// ch05.sft_loss_drop — 「20 步 loss 5.3 → 1.7」
// 20 SFT steps of a small decoder on ChatML-rendered conversations: the loss over answer tokens falls steeply.
#include "claimcheck/check.h"
#include "claimcheck/io.h"
#include "claimcheck/ref/chat.h"
#include "claimcheck/train/chat.h"
#include "claimcheck/train/experiments.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

#if CLAIMCHECK_WITH_TORCH
#include "../decoder_vs_transformers.h"
#include "qwen_lora.h"

// Chapter 5's six-line LoRA SFT: the project's SFT loop with its LoRA on the Qwen2 decoder (inputs.lora_config
// scaled by inputs.lora_overrides; inputs.lora's r, alpha and targets) over inputs.lora_conversations rendered with
// its template, against get_peft_model + Trainer(...).train() on the same start and rows (reference/python/
// hf_reference.py lora_sft): the rows against Qwen2.5's own template, each step's loss, the adapters after the last
// step, the trained adapter reloaded by peft.
static void six_line_lora_sft(claimcheck::Context& ctx) {
  namespace T = claimcheck::train;
  claimcheck::ScratchDir dir("lora_sft_vs_trainer");
  const auto scaled = checks::scaled_config(ctx, "lora_config", "lora_overrides", dir.path()).first;
  const auto spec = ch05::lora_spec(ctx);
  const nlohmann::json& run = ctx.input("lora_sft");
  auto number = [&](const char* key, double least, const char* says) {
    if (!run.is_object() || !run.contains(key) || !run[key].is_number() || !(run[key].get<double>() >= least) ||
        !std::isfinite(run[key].get<double>()))
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.lora_sft." + key + "': expected " + says);
    return run[key].get<double>();
  };
  const int steps = static_cast<int>(number("steps", 1, "a count >= 1")),
            batch = static_cast<int>(number("batch", 1, "a count >= 1"));
  const double lr = number("lr", 1e-300, "a number > 0"), clip = number("clip", 1e-300, "a number > 0"),
               weight_decay = number("weight_decay", 0, "a number >= 0");
  const auto convs = T::load_conversations(ctx.input_path("lora_conversations"));
  const auto e = T::export_lora_sft_run(scaled, spec, convs, steps, batch, lr, weight_decay, clip, ctx.seed(),
                                        dir.path() / "run", ctx.planted_fault());
  // What the project's own loop learned: the first step's rows, their loss after the last step over before it (the
  // same rows: no other data in the ratio).
  ctx.measure("lora_sft_loss_ratio", e.first_rows_after / e.losses.front(), "ratio");
  std::string targets;
  for (const auto& t : spec.targets) targets += (targets.empty() ? "" : ",") + t;
  const nlohmann::json r = claimcheck::run_python_driver(ctx, "reference/python/hf_reference.py",
                                                         {"lora_sft",
                                                          "--config",
                                                          scaled.string(),
                                                          "--dir",
                                                          (dir.path() / "run").string(),
                                                          "--template",
                                                          ctx.input_path("template").string(),
                                                          "--conversations",
                                                          ctx.input_path("lora_conversations").string(),
                                                          "--r",
                                                          std::to_string(spec.r),
                                                          "--alpha",
                                                          ch05::exact(spec.alpha),
                                                          "--targets",
                                                          targets,
                                                          "--batch",
                                                          std::to_string(batch),
                                                          "--lr",
                                                          ch05::exact(lr),
                                                          "--weight-decay",
                                                          ch05::exact(weight_decay),
                                                          "--clip",
                                                          ch05::exact(clip)});
  if (r.contains("skip"))
    ctx.pending("the six-line LoRA SFT against Trainer and peft: " + r["skip"].get<std::string>());
  else
    claimcheck::forward_driver_result(ctx, r);
  ctx.detail("lora_sft_export", {{"rows", e.rows}, {"length", e.length}, {"losses", e.losses}});
}
#endif

static void sft_loss_drop(claimcheck::Context& ctx) {
#if CLAIMCHECK_WITH_TORCH
  if (ctx.wants_any({"lora_sft_loss_ratio", "lora_sft_rows_mismatch", "lora_sft_optimizer_mismatch",
                     "lora_sft_losses_vs_trainer", "lora_sft_adapters_vs_trainer_over_lr", "lora_sft_saved_adapter",
                     "lora_sft_start_b_max_abs", "lora_sft_start_a_over_bound"}))
    six_line_lora_sft(ctx);
  namespace T = claimcheck::train;
  const auto train =
      T::arithmetic_conversations(ctx.input("conversations").get<int>(), ctx.seed(), ctx.planted_fault());
  // The data are what they say: each answer the sum the question asks for, read back from the text here (the
  // answer key's PyTorch loop below trains on these very conversations, so it cannot see wrong ones).
  long wrong = 0;
  for (const auto& c : train) {
    int a = -1, b = -1;
    long answer = -1;
    for (const auto& m : c) {
      if (m.role == "user" && std::sscanf(m.content.c_str(), "What is %d plus %d?", &a, &b) != 2) a = b = -1;
      if (m.role == "assistant") answer = std::strtol(m.content.c_str(), nullptr, 10);
    }
    wrong += a < 0 || b < 0 || answer != a + b;
  }
  ctx.measure("answers_wrong", static_cast<double>(wrong), "count");
  if (!ctx.wants_any({"value", "first_over_ln_v", "prompt_sensitivity", "uses_the_prompt", "learns_answer_shape",
                      "sft_batches_mismatch", "sft_loop_vs_pytorch", "sft_weights_vs_pytorch_over_lr",
                      "sft_optimizer_mismatch", "other_seed_init_differs"}))
    return;  // (a planted-fault run that judges the data alone)
  T::SftOptions o;
  // The model's sizes from the inputs, handed to the code under test and, apart, to the answer key's reference (the
  // vocabulary its own: the chat tokenizer's 258): a model built otherwise than asked shows as a parameter mismatch.
  const nlohmann::json& model = ctx.input("model");
  auto size = [&](const char* key) {
    if (!model.is_object() || !model.contains(key) || !model[key].is_number_integer() || model[key].get<long>() < 1 ||
        model[key].get<long>() > 65536)
      throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.model." + key +
                                  "': expected an integer from 1 to 65536");
    return model[key].get<int>();
  };
  o.model.n_layer = size("layers");
  o.model.n_head = size("heads");
  o.model.d_model = size("d_model");
  o.model.d_ff = size("d_ff");
  o.model.context = size("context");
  o.steps = ctx.input("steps").get<int>();
  o.lr = ctx.input("lr").get<double>();
  o.fault = ctx.planted_fault();
  o.seed = ctx.seed();
  // Does the trained model see its prompt at all? The same answers after the same prompts with every digit of the
  // question changed (d -> d+5 mod 10: the same lengths and positions, other numbers): a model that reads its prompt
  // gives the answers another loss, however little it has learned from it; one blind to it gives the same loss to
  // the last bit (the same inputs reach it). This tells a model that has not yet learned the mapping (the refuted
  // statement below) from one that cannot.
  const std::size_t n_eval = std::min<std::size_t>(64, train.size());
  std::vector<T::Conversation> right(train.begin(), train.begin() + static_cast<long>(n_eval)), other = right;
  for (auto& conv : other)
    for (auto& m : conv)
      if (m.role == "user")
        for (char& ch : m.content)
          if (ch >= '0' && ch <= '9') ch = static_cast<char>('0' + (ch - '0' + 5) % 10);
  o.evaluate = {right, other};
  // The loop against the answer key's PyTorch loop (reference/python/sft_reference.py): the project exports its
  // parameters before step 0, each step's batch, loss and gradient norm, and the parameters after the last step; the
  // reference renders the same conversations with Qwen2.5's own template, batches them as a collator does and runs
  // the series' twenty lines (clip_grad_norm_ at inputs.reference_loop.clip, AdamW, zero_grad(set_to_none=True)).
  claimcheck::ScratchDir dir("sft_vs_pytorch");
  o.export_dir = dir.path() / "run";
  const auto r = T::sft_train(train, {}, o);
  {  // the model as the next seed draws it (no step): another seed, other weights
    T::SftOptions next = o;
    next.seed = o.seed + 1;
    next.steps = 0;
    next.evaluate.clear();
    next.generate = 0;
    next.export_dir.clear();
    const auto r2 = T::sft_train(train, {}, next);
    ctx.measure_bool("other_seed_init_differs", r2.init_sha256 != r.init_sha256 && !r.init_sha256.empty());
  }
  {
    const auto file = dir.path() / "conversations.jsonl";
    std::ofstream out(file);
    for (const auto& c : train) {
      nlohmann::json msgs = nlohmann::json::array();
      for (const auto& m : c) msgs.push_back({{"role", m.role}, {"content", m.content}});
      out << nlohmann::json{{"messages", msgs}}.dump() << "\n";
    }
    out.close();
    const nlohmann::json& loop = ctx.input("reference_loop");
    auto num = [&](const char* key) {
      if (!loop.is_object() || !loop.contains(key) || !loop[key].is_number())
        throw std::invalid_argument(ctx.claim_id() + ": field 'inputs.reference_loop." + key + "': expected a number");
      return ch05::exact(loop[key].get<double>());
    };
    const std::string lr = ch05::exact(o.lr);
    const nlohmann::json ref = claimcheck::run_python_driver(ctx, "reference/python/sft_reference.py",
                                                             {"--dir",
                                                              o.export_dir.string(),
                                                              "--template",
                                                              ctx.input_path("template").string(),
                                                              "--conversations",
                                                              file.string(),
                                                              "--batch",
                                                              std::to_string(o.batch),
                                                              "--lr",
                                                              lr,
                                                              "--weight-decay",
                                                              num("weight_decay"),
                                                              "--clip",
                                                              num("clip"),
                                                              "--vocab",
                                                              std::to_string(claimcheck::ref::kChatVocab),
                                                              "--context",
                                                              std::to_string(size("context")),
                                                              "--d-model",
                                                              std::to_string(size("d_model")),
                                                              "--d-ff",
                                                              std::to_string(size("d_ff")),
                                                              "--layers",
                                                              std::to_string(size("layers")),
                                                              "--heads",
                                                              std::to_string(size("heads"))});
    if (ref.contains("skip"))
      ctx.pending("the SFT loop against PyTorch: " + ref["skip"].get<std::string>());
    else
      claimcheck::forward_driver_result(ctx, ref);
  }
  ctx.measure(r.losses.back(), "nats");
  ctx.measure("first", r.losses.front(), "nats");
  // Where the fall starts: a fresh model's first loss is about ln V (chapter 3's law), V the answer key's byte-level
  // vocabulary; the band relative to the first loss below means something only if the first loss is that.
  ctx.measure("first_over_ln_v", r.losses.front() / std::log(static_cast<double>(claimcheck::ref::kChatVocab)),
              "ratio");
  ctx.derive("first_loss", r.losses.front(), "nats");
  // The baseline, from the answer key's own rendering of the same conversations: the loss a model reaches without
  // looking at the prompt. Below it, the model has learned the mapping (here: the sum), not only what answers look
  // like. Compared with the mean of the last five steps (each step's loss is one batch of 8).
  std::vector<std::vector<std::pair<std::string, std::string>>> convs;
  for (const auto& c : train) {
    convs.emplace_back();
    for (const auto& m : c) convs.back().emplace_back(m.role, m.content);
  }
  const auto h = claimcheck::ref::answer_entropy(claimcheck::ref::chatml_targets(convs));
  const std::size_t k = std::min<std::size_t>(5, r.losses.size());
  const double tail =
      std::accumulate(r.losses.end() - static_cast<long>(k), r.losses.end(), 0.0) / static_cast<double>(k);
  ctx.measure_bool("uses_the_prompt", tail < h.prompt_blind);
  // What the refuted statement's reason rests on: below the targets' unigram entropy the model has learned what
  // answers look like (a run that learns less, or nothing, stays above it).
  ctx.measure_bool("learns_answer_shape", tail < h.unigram);
  ctx.measure("last_steps_mean", tail, "nats");
  ctx.measure("prompt_blind_entropy", h.prompt_blind, "nats");
  ctx.measure("unigram_entropy", h.unigram, "nats");
  ctx.measure("prompt_sensitivity", std::abs(r.evaluated.at(1) - r.evaluated.at(0)), "nats");
  ctx.detail("answer_loss_right_prompts", r.evaluated.at(0));
  ctx.detail("answer_loss_other_prompts", r.evaluated.at(1));
  ctx.detail("curve", {{"title", "ch05 SFT: loss over answer tokens"},
                       {"x_label", "step"},
                       {"y_label", "loss (nats)"},
                       {"log_x", false},
                       {"statement", "value"},
                       {"series", {{{"name", "SFT loss"}, {"y", r.losses}}}}});
  ctx.assumption(
      "a 2-layer decoder trained from scratch on generated Q&A (the series fine-tunes Qwen2.5-0.5B); "
      "byte vocabulary of 258, so the first loss is about ln 258 = 5.55 (the series: 5.3)");
#endif
}
CLAIMCHECK_REGISTER(sft_loss_drop).claim("ch05.sft_loss_drop").derives("first_loss", claimcheck::Source::under_test);
