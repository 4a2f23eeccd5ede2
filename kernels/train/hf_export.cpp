// The code under test as transformers and peft see it: the decoder's parameters under the names save_pretrained
// writes, and LoRA's A and B as peft names them, each with a forward and backward (or an optimizer step) of the
// project's code, written as safetensors. The answer key (reference/python/hf_reference.py) loads them into
// transformers' LlamaForCausalLM / Qwen2ForCausalLM and peft's LoRA layer, runs the same inputs there and compares.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <regex>
#include <stdexcept>
#include <utility>

#include <nlohmann/json.hpp>

#include "decoder.h"

namespace claimcheck::train {
// safetensors: an 8-byte little-endian header length, a JSON header (dtype, shape, byte range of each tensor),
// then the raw bytes. The header is padded with spaces to 8 bytes, as the reference writer does.
void write_safetensors(const std::filesystem::path& file, const NamedTensors& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<torch::Tensor> data;
  std::uint64_t offset = 0;
  for (const auto& [name, t0] : tensors) {
    auto t = t0.detach().cpu().contiguous();
    std::string dtype;
    switch (t.scalar_type()) {
      case torch::kFloat:
        dtype = "F32";
        break;
      case torch::kBFloat16:
        dtype = "BF16";
        break;
      case torch::kDouble:
        dtype = "F64";
        break;
      case torch::kLong:
        dtype = "I64";
        break;
      case torch::kByte:
        dtype = "U8";
        break;
      default:
        throw std::logic_error(name + ": no safetensors dtype for " + std::string(c10::toString(t.scalar_type())));
    }
    const auto bytes = static_cast<std::uint64_t>(t.numel()) * static_cast<std::uint64_t>(t.element_size());
    header[name] = {{"dtype", dtype}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(t);
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::ofstream out(file, std::ios::binary);
  const std::uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const auto& t : data)
    out.write(static_cast<const char*>(t.data_ptr()), static_cast<std::streamsize>(t.numel() * t.element_size()));
  if (!out.flush()) throw std::runtime_error(file.string() + ": cannot be written");
}

namespace {
using Named = NamedTensors;

// Norm weights and biases away from their initial 1 and 0, so that one the forward forgets to apply shows.
void move_norms_and_biases(Decoder& model) {
  torch::NoGradGuard ng;
  for (auto& p : model->named_parameters())
    if (p.value().dim() == 1) {
      if (p.key().find("bias") != std::string::npos)
        p.value().normal_(0.0, 0.02);
      else
        p.value().normal_(1.0, 0.1);
    }
}

}  // namespace

std::string hf_name(const std::string& key) {
  if (key == "embed_tokens.weight" || key == "norm.weight") return "model." + key;
  if (key == "lm_head.weight") return key;
  static const std::regex layer(R"(layers_(\d+)\.(\w+?)(?:\.base)?\.(weight|bias))");
  std::smatch m;
  if (!std::regex_match(key, m, layer))
    throw std::logic_error("decoder parameter '" + key + "' has no Hugging Face name");
  const std::string module = m[2];
  std::string block;
  if (module == "q_proj" || module == "k_proj" || module == "v_proj" || module == "o_proj")
    block = "self_attn.";
  else if (module == "gate_proj" || module == "up_proj" || module == "down_proj")
    block = "mlp.";
  return "model.layers." + m[1].str() + "." + block + module + "." + m[3].str();
}

DecoderExport export_decoder_run(const std::filesystem::path& config, const std::string& dtype, std::uint64_t seed,
                                 int batch, int seq, const std::filesystem::path& dir, const std::string& fault,
                                 int left_pad) {
  if (dtype != "fp32" && dtype != "bf16")
    throw std::invalid_argument("export_decoder_run: dtype '" + dtype + "' (fp32, bf16)");
  if (left_pad < 0 || left_pad >= seq - 1)
    throw std::invalid_argument("export_decoder_run: left_pad " + std::to_string(left_pad) + " (0 .. seq - 2)");
  const DecoderConfig c = with_planted_fault(read_decoder_config(config), fault);
  torch::manual_seed(seed);
  Decoder model(c);
  move_norms_and_biases(model);
  if (dtype == "bf16") model->to(torch::kBFloat16);
  auto ids = torch::randint(0, c.vocab, {batch, seq});
  Named run;
  torch::Tensor logits, targets = ids.slice(1, 1).clone();
  if (left_pad > 0) {
    // The last row left-padded as a tokenizer pads a batch for generation: its first left_pad tokens are padding
    // (id 0, mask 0), its positions count from its first token (transformers' generate: cumsum(mask) - 1, padding 1).
    // A padding query sees no key: its softmax is uniform over the dtype's lowest scores, finite and read by nothing.
    auto mask = torch::ones({batch, seq}, torch::kLong);
    mask.index_put_({batch - 1, torch::indexing::Slice(0, left_pad)}, 0);
    ids.masked_fill_(mask == 0, 0);
    auto positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1);
    // A target is a token predicted from a token: neither padding nor the first token after it (read at padding).
    targets = ids.slice(1, 1).masked_fill((mask.slice(1, 1) == 0) | (mask.slice(1, 0, seq - 1) == 0), -100);
    logits = model->forward(ids, mask, positions);
    run = {{"attention_mask", mask}, {"position_ids", positions}};
  } else {
    logits = model->forward(ids);
  }
  auto loss = lm_loss(logits.slice(1, 0, seq - 1), targets, true);
  loss.backward();

  run.insert(run.end(), {{"input_ids", ids}, {"logits", logits}, {"loss", loss}});
  Named params;
  DecoderExport e;
  for (const auto& p : model->named_parameters()) {
    const std::string name = hf_name(p.key());
    params.emplace_back(name, p.value());
    run.emplace_back("grad." + name, p.value().grad());
    e.params += p.value().numel();
  }
  e.tensors = static_cast<std::int64_t>(params.size());
  e.loss = loss.item<double>();
  std::filesystem::create_directories(dir);
  write_safetensors(dir / "model.safetensors", params);
  write_safetensors(dir / "run.safetensors", run);
  return e;
}

GenerationExport export_decoder_generation(const std::filesystem::path& config, std::uint64_t seed, int prompt_len,
                                           int steps, const std::filesystem::path& dir, const std::string& fault) {
  if (prompt_len < 1 || steps < 0)
    throw std::invalid_argument("export_decoder_generation: prompt_len >= 1, steps >= 0");
  const DecoderConfig c = with_planted_fault(read_decoder_config(config), fault);
  torch::manual_seed(seed);
  Decoder model(c);
  move_norms_and_biases(model);
  torch::NoGradGuard ng;
  auto ids = torch::randint(0, c.vocab, {1, prompt_len});
  DecoderImpl::KvCache cache;
  // The prompt in two calls, as a server prefills a long prompt in chunks: the second chunk's tokens attend to the
  // cache and, causally, to each other (every position's logits kept); then one token at a time.
  const int chunk = prompt_len >= 2 ? std::min(48, prompt_len / 2) : prompt_len;
  if (prompt_len > chunk) model->forward_cached(ids.slice(1, 0, prompt_len - chunk), cache);
  const torch::Tensor chunk_logits = model->forward_cached(ids.slice(1, prompt_len - chunk), cache)[0];
  std::vector<torch::Tensor> logits{chunk_logits[-1]};
  std::vector<std::int64_t> fed;
  for (int s = 0; s < steps; ++s) {
    // greedy: the most likely token (planted: "kv_greedy_from_first_logits", the prompt's first row's argmax instead)
    const torch::Tensor& row = fault == "kv_greedy_from_first_logits" ? logits.front() : logits.back();
    const std::int64_t next = row.argmax().item<std::int64_t>();
    fed.push_back(next);
    logits.push_back(model->forward_cached(torch::tensor({{next}}, torch::kLong), cache)[0][-1]);
  }
  std::int64_t bytes = 0;
  for (const auto* side : {&cache.k, &cache.v})
    for (const auto& t : *side) bytes += t.numel() * t.element_size();
  GenerationExport e;
  e.tokens = cache.length;
  e.cache_bytes_per_token = static_cast<double>(bytes) / static_cast<double>(cache.length);
  Named params;
  for (const auto& p : model->named_parameters()) params.emplace_back(hf_name(p.key()), p.value());
  std::filesystem::create_directories(dir);
  write_safetensors(dir / "model.safetensors", params);
  write_safetensors(dir / "run.safetensors",
                    {{"input_ids", ids},
                     {"generated", torch::tensor(fed, torch::kLong)},
                     {"logits", torch::stack(logits)},
                     {"chunk_logits", chunk_logits.contiguous()},
                     {"cache_bytes_per_token", torch::tensor({e.cache_bytes_per_token}, torch::kDouble)}});
  return e;
}

// adapter_model.safetensors and adapter_config.json as peft's save_pretrained writes them for a causal LM: each
// adapter's A and B under base_model.model.<module>.lora_{A,B}.weight, fp32, and the LoraConfig that rebuilds them.
// Planted: "adapter_saved_alpha_as_r" (lora_alpha written as r: peft reloads the scale 1, not alpha / r).
static void save_peft_adapter(const std::vector<std::pair<std::string, Proj>>& adapted, const LoraSpec& lora,
                              const std::filesystem::path& dir, const std::string& fault) {
  std::filesystem::create_directories(dir);
  Named tensors;
  for (const auto& [name, proj] : adapted) {
    tensors.emplace_back("base_model.model." + name + ".lora_A.weight", proj->A.detach().contiguous());
    tensors.emplace_back("base_model.model." + name + ".lora_B.weight", proj->B.detach().contiguous());
  }
  write_safetensors(dir / "adapter_model.safetensors", tensors);
  const nlohmann::json config = {
      {"peft_type", "LORA"},
      {"task_type", "CAUSAL_LM"},
      {"base_model_name_or_path", nullptr},
      {"r", lora.r},
      {"lora_alpha", fault == "adapter_saved_alpha_as_r" ? static_cast<double>(lora.r) : lora.alpha},
      {"target_modules", lora.targets},
      {"lora_dropout", 0.0},
      {"bias", "none"},
      {"use_rslora", false},
      {"fan_in_fan_out", false},
      {"inference_mode", true}};
  std::ofstream(dir / "adapter_config.json") << config.dump(2) << "\n";
}

namespace {
// The decoder from config.json (norm weights and biases moved off 1 and 0), its base parameters frozen and kept under
// transformers' names, the first `layers` layers' `targets` wrapped with the project's LoRA (after_enable(proj) on
// each, e.g. to move B off zero), the trainable parameters, and the adapters as they start.
struct LoraDecoder {
  Decoder model{nullptr};
  Named base, adapters;
  std::vector<std::pair<std::string, Proj>> adapted;  // (transformers' module name, the projection)
  std::vector<torch::Tensor> trainable;
};
// Each adapter's A and B, copied, under prefix + its module name + ".lora_A" / ".lora_B".
void append_adapters(Named& out, const std::vector<std::pair<std::string, Proj>>& adapted, const std::string& prefix) {
  for (const auto& [name, proj] : adapted) {
    out.emplace_back(prefix + name + ".lora_A", proj->A.detach().clone());
    out.emplace_back(prefix + name + ".lora_B", proj->B.detach().clone());
  }
}

template <typename AfterEnable>
LoraDecoder lora_decoder(const std::filesystem::path& config, const LoraSpec& lora, std::uint64_t seed,
                         const std::string& fault, bool all_but_last, AfterEnable after_enable) {
  const DecoderConfig c = with_planted_fault(read_decoder_config(config), fault);
  torch::manual_seed(seed);
  LoraDecoder d;
  d.model = Decoder(c);
  move_norms_and_biases(d.model);
  for (const auto& p : d.model->named_parameters()) d.base.emplace_back(hf_name(p.key()), p.value().detach().clone());
  for (auto& p : d.model->parameters()) p.requires_grad_(false);
  const std::size_t layers = d.model->layers.size() - (all_but_last ? 1 : 0);
  for (std::size_t i = 0; i < layers; ++i)
    for (const auto& t : lora.targets) {
      auto& proj = d.model->layers[i]->projs.at(t);
      proj->enable_lora(lora.r, lora.alpha, fault);
      after_enable(proj);
      std::string name = hf_name("layers_" + std::to_string(i) + "." + t + ".weight");
      d.adapted.emplace_back(name.substr(0, name.size() - std::string(".weight").size()), proj);
    }
  for (auto& p : d.model->parameters())
    if (p.requires_grad()) d.trainable.push_back(p);
  append_adapters(d.adapters, d.adapted, "");
  return d;
}

// The answer key's three files: the base weights, the adapters as they started, and the run.
void write_lora_files(const std::filesystem::path& dir, const LoraDecoder& d, const Named& run) {
  std::filesystem::create_directories(dir);
  write_safetensors(dir / "model.safetensors", d.base);
  write_safetensors(dir / "lora.safetensors", d.adapters);
  write_safetensors(dir / "run.safetensors", run);
}
}  // namespace

LoraModelExport export_lora_model_run(const std::filesystem::path& config, const LoraSpec& lora, double lr,
                                      double weight_decay, std::uint64_t seed, int batch, int seq,
                                      const std::filesystem::path& dir, const std::string& fault) {
  // Each B moved off zero, as if trained. (A planted fault, an off-by-one, leaves the last layer without adapters.)
  LoraDecoder d = lora_decoder(config, lora, seed, fault, fault == "lora_skips_last_layer", [](Proj& proj) {
    torch::NoGradGuard ng;
    proj->B.normal_(0.0, 0.02);
  });
  Decoder& model = d.model;
  const DecoderConfig& c = model->c;
  auto& adapted = d.adapted;
  auto& trainable = d.trainable;
  auto ids = torch::randint(0, c.vocab, {batch, seq});
  auto logits = model->forward(ids);
  auto loss = lm_loss(logits.slice(1, 0, seq - 1), ids.slice(1, 1), true);
  loss.backward();
  Named run{{"input_ids", ids}, {"logits", logits.detach()}, {"loss", loss.detach()}};
  for (const auto& [name, proj] : adapted) {
    run.emplace_back("grad." + name + ".lora_A", proj->A.grad().clone());
    run.emplace_back("grad." + name + ".lora_B", proj->B.grad().clone());
  }
  // The adapter saved as peft saves one (the answer key loads it with PeftModel.from_pretrained), then every adapter
  // merged into its weight and unmerged again: the logits of each.
  save_peft_adapter(adapted, lora, dir / "adapter", fault);
  {
    torch::NoGradGuard ng;
    for (auto& [name, proj] : adapted) proj->merge();
    run.emplace_back("merged.logits", model->forward(ids));
    for (auto& [name, proj] : adapted) proj->unmerge();
    run.emplace_back("unmerged.logits", model->forward(ids));
    // Each adapted weight after the unmerge, for the answer key to hold to the base weight it wrote before LoRA: a
    // merged model computes what an unmerged one does, so its logits alone cannot tell an unmerge that did nothing.
    for (auto& [name, proj] : adapted) run.emplace_back("unmerged." + name + ".weight", proj->base->weight.clone());
  }
  // Planted faults: the step without its weight decay; beta2 at 0.99.
  auto options = torch::optim::AdamWOptions(lr).weight_decay(fault == "lora_step_no_decay" ? 0.0 : weight_decay);
  if (fault == "lora_step_beta2_099") options.betas({0.9, 0.99});
  torch::optim::AdamW opt(trainable, options);
  opt.step();
  LoraModelExport e;
  append_adapters(run, adapted, "after.");
  append_adamw_settings(run, opt);
  for (const auto& t : trainable) e.trainable += t.numel();
  e.adapted = static_cast<std::int64_t>(adapted.size());
  run.emplace_back("trainable", torch::tensor({e.trainable}, torch::kLong));
  write_lora_files(dir, d, run);
  return e;
}

LoraSftExport export_lora_sft_run(const std::filesystem::path& config, const LoraSpec& lora,
                                  const std::vector<Conversation>& convs, int steps, int batch, double lr,
                                  double weight_decay, double clip, std::uint64_t seed,
                                  const std::filesystem::path& dir, const std::string& fault) {
  if (convs.empty() || steps < 1 || batch < 1) throw std::invalid_argument("export_lora_sft_run: no work");
  LoraDecoder d = lora_decoder(config, lora, seed, fault, false, [&](Proj& proj) {
    if (fault == "lora_sft_b_frozen") proj->B.requires_grad_(false);  // planted: only A trains (B stays 0)
    if (fault == "lora_sft_b_drawn") {  // planted: B drawn as A is, in the SFT run's set-up only
      torch::NoGradGuard ng;
      proj->B.normal_(0.0, 0.02);
    }
  });
  Decoder& model = d.model;
  auto& adapted = d.adapted;
  auto& trainable = d.trainable;
  // The rows in the order trained: conversation (step x batch + i) mod n, right-padded to the longest.
  std::vector<Encoded> enc;
  std::size_t length = 0;
  TemplateOptions o;
  o.fault = fault;  // the template's planted faults
  for (const auto& conv : convs) {
    enc.push_back(encode_chat(conv, o));
    length = std::max(length, enc.back().tokens.size());
  }
  const long rows = static_cast<long>(steps) * batch, L = static_cast<long>(length);
  auto ids = torch::full({rows, L}, static_cast<long>(kImEnd), torch::kLong);
  auto labels = torch::full({rows, L}, kIgnoreIndex, torch::kLong);
  for (long r = 0; r < rows; ++r) {
    const auto& e = enc[static_cast<std::size_t>(r) % enc.size()];
    for (std::size_t t = 0; t < e.tokens.size(); ++t) {
      ids[r][static_cast<long>(t)] = e.tokens[t];
      labels[r][static_cast<long>(t)] = e.labels[t];
    }
  }
  auto options = torch::optim::AdamWOptions(lr).weight_decay(weight_decay);
  if (fault == "lora_sft_beta2_099") options.betas({0.9, 0.99});  // a planted fault
  torch::optim::AdamW opt(trainable, options);
  LoraSftExport out;
  out.rows = rows;
  out.length = L;
  for (int s = 0; s < steps; ++s) {
    // Trainer's "linear" schedule without warmup: lr (steps - s) / steps at step s.
    const double lr_s = lr * static_cast<double>(steps - s) / steps;
    for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr_s);
    opt.zero_grad();
    const auto x = ids.slice(0, s * batch, (s + 1) * batch), y = labels.slice(0, s * batch, (s + 1) * batch);
    const auto loss = lm_loss(model->forward(x.slice(1, 0, L - 1)), y.slice(1, 1), true);
    loss.backward();
    if (fault != "lora_sft_no_clip") torch::nn::utils::clip_grad_norm_(trainable, clip);  // planted: no clipping
    opt.step();
    out.losses.push_back(loss.item<double>());
  }
  Named run{{"input_ids", ids}, {"labels", labels}, {"losses", torch::tensor(out.losses, torch::kDouble)}};
  append_adapters(run, adapted, "after.");
  append_adamw_settings(run, opt);
  {
    torch::NoGradGuard ng;
    model->eval();
    run.emplace_back("trained.logits", model->forward(ids.slice(0, 0, 1)));
    const auto x = ids.slice(0, 0, batch), y = labels.slice(0, 0, batch);
    out.first_rows_after = lm_loss(model->forward(x.slice(1, 0, L - 1)), y.slice(1, 1), true).item<double>();
  }
  save_peft_adapter(adapted, lora, dir / "adapter", fault);
  write_lora_files(dir, d, run);
  return out;
}

void export_lora_run(const LoraCase& k, std::uint64_t seed, const std::filesystem::path& file,
                     const std::string& fault) {
  torch::manual_seed(seed);
  const auto x = torch::randn({16, k.in}), g = torch::randn({16, k.out});  // inputs; the loss is sum(y * g)
  Proj p(k.in, k.out, true);
  p->enable_lora(k.r, k.alpha, fault, k.rslora);
  Named t{{"x", x},
          {"g", g},
          {"base.weight", p->base->weight},
          {"base.bias", p->base->bias},
          {"lora_A", p->A.clone()},
          {"lora_B.init", p->B.clone()}};
  {
    torch::NoGradGuard ng;
    t.emplace_back("y.init", p->forward(x));
    p->B.copy_(torch::randn({k.out, k.r}) * 0.1);  // as if trained
    t.emplace_back("lora_B", p->B.clone());
    t.emplace_back("y", p->forward(x));
    t.emplace_back("merged.weight", p->merged_weight());
  }
  // One AdamW step on A and B (the base frozen, as peft leaves it), from the trained B.
  p->base->weight.requires_grad_(false);
  p->base->bias.requires_grad_(false);
  const auto adamw = torch::optim::AdamWOptions(k.lr).weight_decay(k.weight_decay);
  {
    torch::optim::AdamW opt({p->A, p->B}, adamw);
    (p->forward(x) * g).sum().backward();
    opt.step();
    torch::NoGradGuard ng;
    t.emplace_back("step.lora_A", p->A.clone());
    t.emplace_back("step.lora_B", p->B.clone());
    t.emplace_back("step.y", p->forward(x));
  }
  // Learning from the initialisation: a fresh adapter (the project's A, B = 0) on the same base, one step.
  {
    Proj q(k.in, k.out, true);
    {
      torch::NoGradGuard ng;
      q->base->weight.copy_(p->base->weight);
      q->base->bias.copy_(p->base->bias);
    }
    q->enable_lora(k.r, k.alpha, fault, k.rslora);
    q->base->weight.requires_grad_(false);
    q->base->bias.requires_grad_(false);
    torch::optim::AdamW opt({q->A, q->B}, adamw);
    (q->forward(x) * g).sum().backward();
    opt.step();
    torch::NoGradGuard ng;
    t.emplace_back("fresh.lora_A", q->A.clone());
    t.emplace_back("fresh.delta_weight", q->merged_weight() - q->base->weight);
  }
  std::filesystem::create_directories(file.parent_path());
  write_safetensors(file, t);
}

// The optimizer's settings as the run used them, one row per parameter group (betas, eps, weight decay, amsgrad, the
// elements it holds): a first AdamW step is lr * g / (|g| + eps) whatever the betas, and a group that spares some
// tensors the decay moves a few steps by less than their tolerance, so the answer key reads them against its own.
void append_adamw_settings(NamedTensors& run, const torch::optim::AdamW& opt) {
  std::vector<double> rows;
  for (const auto& g : opt.param_groups()) {
    const auto& o = static_cast<const torch::optim::AdamWOptions&>(g.options());
    double elements = 0;
    for (const auto& p : g.params()) elements += static_cast<double>(p.numel());
    rows.insert(rows.end(), {std::get<0>(o.betas()), std::get<1>(o.betas()), o.eps(), o.weight_decay(),
                             o.amsgrad() ? 1.0 : 0.0, elements});
  }
  run.emplace_back("adamw", torch::tensor(rows, torch::kDouble).reshape({-1, 6}));
}

double grads_norm(const std::vector<torch::Tensor>& parameters) {
  double sum = 0;
  for (const auto& p : parameters)
    if (p.grad().defined()) sum += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
  return std::sqrt(sum);
}

}  // namespace claimcheck::train
