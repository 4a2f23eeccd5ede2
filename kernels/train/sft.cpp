// Chapter 5's SFT mechanics in LibTorch: the loss mask, a short SFT run of a small decoder on chat data
// rendered with the ChatML template, and greedy generation that stops at <|im_end|> (or does not).
#include <chrono>
#include <cmath>
#include <limits>

#include "common.h"

namespace claimcheck::train {
namespace F = torch::nn::functional;

TinyConfig sft_model_config() {
  TinyConfig c;
  c.vocab = kChatVocab;
  c.context = 256;
  c.n_layer = 2;
  return c;
}

namespace {

// One batch: sequences padded to the longest with <|im_end|> tokens whose labels are -100; targets are
// labels shifted left (HF's convention: labels align with input_ids, the model shifts). A planted fault
// (unshifted_when_padded) forgets the shift in the rows that are padded; another (mask_inputs) applies the loss mask
// to the inputs as well.
std::pair<torch::Tensor, torch::Tensor> batch_of(const std::vector<Encoded>& enc, std::size_t first, int n, int context,
                                                 bool unshifted_when_padded = false, bool mask_inputs = false,
                                                 bool pad_learned = false, bool truncate_short = false) {
  std::size_t len = 0;
  for (int i = 0; i < n; ++i) len = std::max(len, enc[(first + i) % enc.size()].tokens.size());
  // A planted fault cuts one token short: context - 1 input positions.
  len = std::min<std::size_t>(len, context + (truncate_short ? 0 : 1));
  auto x = torch::full({n, static_cast<long>(len - 1)}, static_cast<long>(kImEnd), torch::kLong);
  // A planted fault labels the padding with the pad token itself: the model is taught to pad.
  auto y = torch::full({n, static_cast<long>(len - 1)}, pad_learned ? static_cast<long>(kImEnd) : kIgnoreIndex,
                       torch::kLong);
  for (int i = 0; i < n; ++i) {
    const auto& e = enc[(first + i) % enc.size()];
    const auto m = std::min(e.tokens.size(), len);
    const std::size_t shift = unshifted_when_padded && m < len ? 0 : 1;
    for (std::size_t t = 0; t + 1 < m; ++t) {
      x[i][static_cast<long>(t)] = mask_inputs && e.labels[t] == kIgnoreIndex ? kImEnd : e.tokens[t];
      y[i][static_cast<long>(t)] = e.labels[t + shift];
    }
  }
  return {x, y};
}

}  // namespace

LossMaskResult loss_mask(const std::vector<Conversation>& convs, std::uint64_t seed, const std::string& fault,
                         int context) {
  torch::manual_seed(seed);
  TemplateOptions o;
  o.fault = fault;
  std::vector<Encoded> enc;
  std::size_t longest = 0;
  for (const auto& c : convs) {
    enc.push_back(encode_chat(c, o));
    longest = std::max(longest, enc.back().tokens.size());
  }
  if (enc.empty()) throw std::invalid_argument("loss_mask: no conversations");
  // Every conversation in one batch, none cut: the shorter ones padded to the longest (or cut to the context given).
  auto [x, y] = batch_of(enc, 0, static_cast<int>(enc.size()), context > 0 ? context : static_cast<int>(longest),
                         fault == "pad_targets_unshifted", false, false, fault == "batch_cut_short");
  auto logits = torch::randn({y.size(0), y.size(1), kChatVocab}, torch::requires_grad());
  auto loss = lm_loss(logits, y, true);
  loss.backward();
  LossMaskResult r;
  r.loss = loss.item<double>();
  r.rows = logits.size(0);
  r.positions = logits.size(1);
  r.vocab = logits.size(2);
  auto flat = logits.detach().contiguous();
  r.logits.assign(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
  auto g = logits.grad().abs().amax(-1).contiguous();
  r.grad_max.assign(g.data_ptr<float>(), g.data_ptr<float>() + g.numel());
  for (const auto& e : enc) r.tokens.push_back(e.tokens), r.labels.push_back(e.labels);
  return r;
}

SftResult sft_train(const std::vector<Conversation>& train, const std::vector<Conversation>& held_out,
                    const SftOptions& o) {
  torch::manual_seed(o.fault == "sft_seed_ignored" ? 1 : o.seed);
  TinyConfig c = o.model;
  c.vocab = kChatVocab;
  if (o.fault == "sft_extra_layer") c.n_layer += 1;   // a planted fault: one block more than asked
  if (o.fault == "sft_large_init") c.init_std = 1.0;  // a planted fault: logits far from uniform at the start
  TinyGPT model(c);
  TemplateOptions t;
  t.eos_in_loss = o.eos_in_loss;
  std::vector<Encoded> enc;
  for (const auto& conv : train) enc.push_back(encode_chat(conv, t));
  torch::optim::AdamWOptions adamw(o.fault == "frozen" ? 0.0 : o.lr);
  adamw.weight_decay(0.0);
  if (o.fault == "sft_beta2_099") adamw.betas({0.9, 0.99});  // a planted fault: beta2 0.99 (PyTorch's is 0.999)
  torch::optim::AdamW opt(model->parameters(), adamw);
  const bool mask_inputs = o.fault == "mask_inputs";
  const bool exporting = !o.export_dir.empty();
  NamedTensors run;
  std::vector<double> norms, clipped;
  if (exporting) {
    NamedTensors before;
    for (const auto& p : model->named_parameters()) before.emplace_back(p.key(), p.value().detach().clone());
    std::filesystem::create_directories(o.export_dir);
    write_safetensors(o.export_dir / "model.safetensors", before);
  }
  SftResult r;
  r.init_sha256 = parameters_sha256(model->parameters());
  const auto t0 = std::chrono::steady_clock::now();
  for (int step = 0; step < o.steps; ++step) {
    // Batch s holds conversations s * batch .. s * batch + batch - 1 (wrapping around); a planted fault repeats the
    // first batch.
    const std::size_t first = o.fault == "sft_batch_repeats" ? 0 : static_cast<std::size_t>(step) * o.batch;
    auto [x, y] = batch_of(enc, first, o.batch, c.context, false, mask_inputs, o.fault == "sft_pad_learned",
                           o.fault == "batch_cut_short");
    auto loss = lm_loss(model->forward(x), y, true);
    loss.backward();
    double norm = 0;
    if (o.fault == "sft_no_clip")  // a planted fault: the norm measured, nothing clipped
      norm = torch::nn::utils::clip_grad_norm_(model->parameters(), std::numeric_limits<double>::infinity());
    else  // (a planted fault clips at half the series' 1.0)
      norm = torch::nn::utils::clip_grad_norm_(model->parameters(), o.fault == "sft_clip_half" ? 0.5 : 1.0);
    if (exporting && step < o.export_steps) clipped.push_back(grads_norm(model->parameters()));
    opt.step();
    compat::zero_grad_set_to_none(opt);
    r.losses.push_back(loss.item<double>());
    if (exporting && step < o.export_steps) {
      run.emplace_back("x." + std::to_string(step), x);
      run.emplace_back("y." + std::to_string(step), y);
      norms.push_back(norm);
      if (step + 1 == std::min(o.export_steps, o.steps)) {
        run.emplace_back("loss", torch::tensor(r.losses, torch::kDouble));
        run.emplace_back("grad_norm", torch::tensor(norms, torch::kDouble));
        run.emplace_back("grad_norm_clipped", torch::tensor(clipped, torch::kDouble));
        append_adamw_settings(run, opt);
        for (const auto& p : model->named_parameters())
          run.emplace_back("after." + p.key(), p.value().detach().clone());
        write_safetensors(o.export_dir / "run.safetensors", run);
        run.clear();
      }
    }
  }
  // Greedy generation from held-out prompts: does the answer end with <|im_end|>?
  torch::NoGradGuard ng;
  model->eval();
  for (const auto& set : o.evaluate) {
    if (set.empty()) throw std::invalid_argument("sft_train: an empty set to evaluate");
    std::vector<Encoded> e;
    for (const auto& conv : set) e.push_back(encode_chat(conv, t));
    auto [x, y] = batch_of(e, 0, static_cast<int>(e.size()), c.context, false, mask_inputs);
    r.evaluated.push_back(lm_loss(model->forward(x), y, true).item<double>());
  }
  int stopped = 0;
  for (int i = 0; i < o.generate && i < static_cast<int>(held_out.size()); ++i) {
    auto ids = encode_prompt(held_out[static_cast<std::size_t>(i)], o.fault);
    const auto prompt_len = ids.size();
    bool stop = false;
    for (int n = 0; n < o.max_new_tokens && static_cast<int>(ids.size()) < c.context; ++n) {
      auto in = torch::tensor(ids, torch::kLong).unsqueeze(0);
      const auto next = model->forward(in)[0][-1].argmax().item<std::int64_t>();
      ids.push_back(next);
      if (next == kImEnd) {
        stop = true;
        if (o.fault != "generation_past_end") break;  // (planted: generation goes on past the end token)
      }
    }
    // A planted fault: a generation that ran out of new tokens is counted as stopped too ("finished" for "stopped").
    if (o.fault == "length_limit_counts_as_stop") stop = true;
    stopped += stop;
    r.generations.emplace_back(ids.begin() + static_cast<long>(prompt_len), ids.end());
    if (r.samples.size() < 3)
      r.samples.push_back(
          decode_bytes(std::vector<std::int64_t>(ids.begin() + static_cast<long>(prompt_len), ids.end())));
  }
  r.stop_rate =
      o.generate > 0 ? static_cast<double>(stopped) / std::min<int>(o.generate, static_cast<int>(held_out.size())) : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace claimcheck::train
