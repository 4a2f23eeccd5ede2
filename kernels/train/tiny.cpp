// Chapter 3 in LibTorch: the tiny character Transformer, the Dataset/DataLoader over fortunes,
// and the series' twenty-line training loop; plus the autograd and precision experiments.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "claimcheck/base/torch_compat.h"
#include "claimcheck/train/experiments.h"
#include "common.h"

namespace claimcheck::train {
namespace fs = std::filesystem;
namespace F = torch::nn::functional;

// ---- data ---------------------------------------------------------------------
Corpus load_fortunes_corpus(const fs::path& dir, const std::string& fault) {
  std::vector<fs::path> files;
  if (fs::is_directory(dir))
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_regular_file() && e.path().extension().empty()) files.push_back(e.path());
  if (files.empty())
    throw std::runtime_error(dir.string() + ": field '(dir)': no fortune text files (apt-get install fortunes)");
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    text += ss.str();
  }
  Corpus c;
  c.source = dir.string();
  c.files = static_cast<std::int64_t>(files.size());
  c.sha256 = sha256_hex(text);
  std::vector<std::uint8_t> all;
  all.reserve(text.size());
  // V = 128: fold to ASCII (planted: "fold_non_ascii_low_bits", a byte's low 7 bits instead of '?')
  for (unsigned char ch : text) all.push_back(ch < 128 ? ch : (fault == "fold_non_ascii_low_bits" ? ch & 0x7F : '?'));
  const std::size_t cut = all.size() * (fault == "split_96" ? 96 : 95) / 100;
  c.train.assign(all.begin(), all.begin() + static_cast<long>(cut));
  c.val.assign(all.begin() + static_cast<long>(cut), all.end());
  return c;
}

// Dataset: windows of context + 1 characters; __getitem__ = get(i), __len__ = size().
// A planted fault (half_stride): windows start every context / 2 characters, so that they overlap.
class CharWindows : public torch::data::datasets::Dataset<CharWindows> {
 public:
  CharWindows(const std::vector<std::uint8_t>& text, int context, bool half_stride = false, bool in_order = false)
      : text_(text), context_(context), stride_(half_stride ? context / 2 : context), in_order_(in_order) {}
  torch::data::Example<> get(std::size_t i) override {
    if (in_order_) i = next_++ % *size();  // a planted fault: the sampler's index ignored, the windows in order
    const auto start = static_cast<long>(i) * stride_;
    auto w = torch::from_blob(const_cast<std::uint8_t*>(text_.data()) + start, {context_ + 1}, torch::kUInt8)
                 .to(torch::kLong);
    return {w.slice(0, 0, context_), w.slice(0, 1, context_ + 1)};
  }
  torch::optional<std::size_t> size() const override { return (text_.size() - 1) / context_ - 1; }

 private:
  const std::vector<std::uint8_t>& text_;
  int context_, stride_;
  bool in_order_;
  std::size_t next_ = 0;
};

TinyConfig tiny_model_config(const std::string& fault) {
  TinyConfig c;
  if (fault == "tiny_byte_vocab") c.vocab = 256;
  return c;
}

std::int64_t tiny_param_count(const TinyConfig& c, const std::string& fault) {
  TinyConfig built = c;
  if (fault == "extra_layer") built.n_layer += 1;
  if (fault == "tiny_mlp_4d") built.d_ff = 4 * built.d_model;  // planted: the MLP's width as GPT-2's 4 d, not d_ff
  TinyGPT m(built);
  std::int64_t n = 0;
  for (const auto& p : m->parameters()) n += p.numel();
  return n;
}

// The loss of the series' loop: logits cast to fp32, ignore_index = -100.
torch::Tensor lm_loss(const torch::Tensor& logits, const torch::Tensor& targets, bool cast_to_fp32) {
  const auto V = logits.size(-1);
  auto l = logits.reshape({-1, V});
  if (cast_to_fp32) l = l.to(torch::kFloat);
  return F::cross_entropy(l, targets.reshape({-1}), F::CrossEntropyFuncOptions().ignore_index(-100));
}

namespace {

// rows (optional) receives the windows evaluated ("eval.x", "eval.y": [batches x batch, context]), for the answer
// key's reference to re-evaluate. Fault "eval_on_train" (planted): the windows come from the training text.
double eval_ppl(TinyGPT& model, const Corpus& data, const TinyConfig& c, int batches, int batch,
                const std::string& fault = "", NamedTensors* rows = nullptr) {
  std::unique_ptr<torch::NoGradGuard> ng;  // (a planted fault evaluates without it)
  if (fault != "eval_no_grad_missing") ng = std::make_unique<torch::NoGradGuard>();
  model->eval();
  CharWindows val(fault == "eval_on_train" ? data.train : data.val, c.context);
  std::vector<torch::Tensor> all_x, all_y;
  const auto n = *val.size();
  double total = 0;
  int count = 0;
  for (int b = 0; b < batches; ++b) {
    std::vector<torch::Tensor> xs, ys;
    for (int i = 0; i < batch; ++i) {
      // a fixed, spread-out set (planted: "eval_same_batch", every batch the first batch's windows)
      const int at = fault == "eval_same_batch" ? i : b * batch + i;
      auto ex = val.get(static_cast<std::size_t>(at * 7919 % n));
      xs.push_back(ex.data);
      ys.push_back(ex.target);
    }
    total += lm_loss(model->forward(torch::stack(xs)), torch::stack(ys), true).item<double>();
    ++count;
    if (rows) all_x.insert(all_x.end(), xs.begin(), xs.end()), all_y.insert(all_y.end(), ys.begin(), ys.end());
  }
  if (rows) rows->emplace_back("eval.x", torch::stack(all_x)), rows->emplace_back("eval.y", torch::stack(all_y));
  model->train();
  if (fault == "ppl_exp_of_sum") return std::exp(total);  // a planted fault: the summed loss, not its mean
  return std::exp(total / count);
}

}  // namespace

FirstLoss tiny_first_loss(const TinyConfig& config, const Corpus& data, std::uint64_t seed, int batch,
                          const std::string& fault) {
  TinyConfig c = config;
  if (fault == "large_init") c.init_std = 1.0;         // a planted fault: logits far from uniform
  if (fault == "biases_drawn") c.zero_biases = false;  // a planted fault: LibTorch's default biases kept
  if (fault == "norms_drawn") c.draw_norms = true;     // a planted fault: LayerNorm's gains drawn near 0
  torch::manual_seed(seed);
  TinyGPT model(c);
  if (fault == "head_zero_init") {  // a planted fault: the head zeroed, as some recipes start a classifier
    torch::NoGradGuard ng;
    model->head->weight.zero_();
  }
  FirstLoss out;
  for (const auto& p : model->named_parameters()) {
    const torch::Tensor f = p.value().detach().to(torch::kFloat32).contiguous().flatten();
    std::vector<float>* to = p.value().dim() == 2 ? &out.init_weights
                             : p.key().find("bias") != std::string::npos && p.key().find("ln") == std::string::npos
                                 ? &out.init_biases
                                 : nullptr;
    if (to) to->insert(to->end(), f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    if (to == &out.init_weights) out.init_weight_sizes.push_back(static_cast<std::size_t>(f.numel()));
    if (p.key().find("ln") != std::string::npos && p.value().dim() == 1) {
      auto* norm = p.key().find("bias") != std::string::npos ? &out.init_norm_shifts : &out.init_norm_gains;
      norm->insert(norm->end(), f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    }
  }
  CharWindows ds(data.train, c.context);
  std::vector<torch::Tensor> xs, ys;
  for (int i = 0; i < batch; ++i) {
    auto ex = ds.get(static_cast<std::size_t>(i) * 97);
    xs.push_back(ex.data);
    ys.push_back(ex.target);
  }
  torch::NoGradGuard ng;
  out.loss = lm_loss(model->forward(torch::stack(xs)), torch::stack(ys), true).item<double>();
  return out;
}

// The learning rate the optimizer holds (every parameter group's; they must agree): what opt.step() applies,
// read from the optimizer rather than from the schedule that set it.
static double applied_lr(torch::optim::Optimizer& opt) {
  double lr = -1;
  for (auto& g : opt.param_groups()) {
    const double v = g.options().get_lr();
    if (lr >= 0 && v != lr) throw std::runtime_error("train_tiny: parameter groups hold different learning rates");
    lr = v;
  }
  return lr;
}

TrainResult train_tiny(const TinyConfig& config, const Corpus& data, const TrainOptions& o) {
  TinyConfig c = config;
  if (o.fault == "extra_layer") c.n_layer += 1;  // a planted fault: one block more than the config says
  // (A planted fault draws the model under a constant seed, and seeds only what follows, the data order.)
  torch::manual_seed(o.fault == "seed_model_constant" ? 0 : o.seed);
  TinyGPT model(c);
  if (o.fault == "seed_model_constant") torch::manual_seed(o.seed);
  auto loader = torch::data::make_data_loader(
      CharWindows(data.train, c.context, o.fault == "windows_half_stride", o.fault == "loader_in_order")
          .map(torch::data::transforms::Stack<>()),
      // (A planted fault draws from the first half of the windows only.)
      torch::data::samplers::RandomSampler(*CharWindows(data.train, c.context).size() /
                                           (o.fault == "loader_first_half" ? 2 : 1)),
      // (A planted fault hands the loader half the batch.)
      torch::data::DataLoaderOptions()
          .batch_size(o.fault == "loader_half_batch" ? o.batch / 2 : o.batch)
          .drop_last(true));
  torch::optim::AdamWOptions adamw(o.schedule.base_lr);
  adamw.weight_decay(o.fault == "weight_decay_tenth" ? o.weight_decay / 10 : o.weight_decay);
  if (o.fault == "adamw_beta2_099") adamw.betas({0.9, 0.99});  // a planted fault: beta2 0.99 (PyTorch's is 0.999)
  // (A planted fault splits the parameters as GPT-2's recipes do, inverted: the decay on the 1-D gains and biases
  // only, the matrices and the embedding in a second group at weight decay 0.)
  std::vector<torch::optim::OptimizerParamGroup> groups;
  if (o.fault == "weight_decay_vectors_only") {
    std::vector<torch::Tensor> vectors, matrices;
    for (const auto& p : model->parameters()) (p.dim() == 1 ? vectors : matrices).push_back(p);
    auto spared = std::make_unique<torch::optim::AdamWOptions>(adamw);
    spared->weight_decay(0.0);
    groups.emplace_back(vectors, std::make_unique<torch::optim::AdamWOptions>(adamw));
    groups.emplace_back(matrices, std::move(spared));
  } else {
    groups.emplace_back(model->parameters());
  }
  torch::optim::AdamW opt(groups, adamw);
  WarmupCosine sched(o.schedule, o.fault == "schedule_off_by_one", o.fault == "schedule_unclamped");
  const bool zero_grad = o.fault != "no_zero_grad";

  TrainResult r;
  // LibTorch's setting as the training starts: errors on a nondeterministic kernel, not a warning.
  r.deterministic_algorithms =
      at::globalContext().deterministicAlgorithms() && !at::globalContext().deterministicAlgorithmsWarnOnly();
  r.init_weights_sha256 = parameters_sha256(model->parameters());
  // (A planted fault writes the checkpoint before the first step: a file of the untrained model.)
  if (o.fault == "checkpoint_before_training" && !o.checkpoint.empty()) torch::save(model, o.checkpoint);
  // The export for the answer key's reference (TrainOptions::export_dir): the parameters before step 0, then what
  // each of the first export_steps steps saw and did.
  const bool exporting = !o.export_dir.empty() && o.export_steps > 0;
  NamedTensors run;
  std::vector<double> norms, clipped;
  auto parameters_named = [&](const std::string& prefix) {
    NamedTensors out;
    for (const auto& p : model->named_parameters()) out.emplace_back(prefix + p.key(), p.value().detach().clone());
    return out;
  };
  if (exporting) {
    std::filesystem::create_directories(o.export_dir);
    write_safetensors(o.export_dir / "model.safetensors", parameters_named(""));
  }
  r.eval_steps.push_back(0);
  r.eval_ppl.push_back(eval_ppl(model, data, c, o.eval_batches, o.batch, o.fault));
  // (A planted fault draws the data order under a constant seed, the model under the run's.)
  if (o.fault == "seed_data_constant") torch::manual_seed(0);
  std::vector<torch::Tensor> first_batches;
  const auto t0 = std::chrono::steady_clock::now();
  long step = 0;
  while (step < o.steps) {
    for (auto& batch : *loader) {  // ---- the twenty lines ----
      if (step >= o.steps) break;
      const double lr = o.fault == "frozen" ? 0.0 : sched.lr();  // a planted fault: nothing learns
      for (auto& g : opt.param_groups()) static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
      if (step < 4) first_batches.push_back(batch.data);         // the seed's data order, hashed below
      auto logits = model->forward(batch.data);                  // [B, T, V]
      auto loss = lm_loss(logits, batch.target, /*fp32=*/true);  // loss in fp32, ignore_index=-100
      if (o.fault == "loss_label_smoothing")  // a planted fault: the loss smoothed (label_smoothing = 0.1)
        loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}).to(torch::kFloat), batch.target.reshape({-1}),
                                F::CrossEntropyFuncOptions().ignore_index(-100).label_smoothing(0.1));
      loss.backward();  // gradients accumulate
      const bool recording = exporting && step < o.export_steps;
      if (recording) {
        run.emplace_back("x." + std::to_string(step), batch.data.clone());
        run.emplace_back("y." + std::to_string(step), batch.target.clone());
        if (step == 0) {
          run.emplace_back("logits.0", logits.detach().clone());
          for (const auto& p : model->named_parameters())
            if (p.value().grad().defined()) run.emplace_back("grad." + p.key(), p.value().grad().clone());
        }
      }
      double norm = 0;
      if (o.fault == "clip_per_parameter")  // a planted fault: each tensor clipped to the bound on its own
        for (auto& p : model->parameters()) norm = torch::nn::utils::clip_grad_norm_(p, o.clip);
      else  // clip at 1.0 (a planted fault: at half of it)
        norm = torch::nn::utils::clip_grad_norm_(model->parameters(), o.fault == "clip_half" ? o.clip / 2 : o.clip);
      if (recording) clipped.push_back(grads_norm(model->parameters()));
      r.lrs.push_back(applied_lr(opt));  // the rate this step will use
      opt.step();
      sched.step();
      if (zero_grad) compat::zero_grad_set_to_none(opt);  // so: clear them
      r.losses.push_back(loss.item<double>());
      ++step;
      if (recording) {
        norms.push_back(norm);
        if (step == o.export_steps) {
          auto first = [&](const std::vector<double>& v) {
            return torch::tensor(std::vector<double>(v.begin(), v.begin() + o.export_steps), torch::kDouble);
          };
          run.emplace_back("loss", first(r.losses));
          run.emplace_back("lr", first(r.lrs));
          run.emplace_back("grad_norm", torch::tensor(norms, torch::kDouble));
          run.emplace_back("grad_norm_clipped", torch::tensor(clipped, torch::kDouble));
          append_adamw_settings(run, opt);
          for (auto& t : parameters_named("after.")) run.push_back(std::move(t));
          write_safetensors(o.export_dir / "run.safetensors", run);
          run.clear();
        }
      }
      if (o.eval_every > 0 && (step % o.eval_every == 0 || step == o.steps)) {
        // The last evaluation (the run's perplexity) exported with the parameters it ran on: the reference
        // re-evaluates them on the same windows, which must be windows of the held-out text.
        const bool last = exporting && step == o.steps;
        NamedTensors evaluated;
        r.eval_steps.push_back(step);
        r.eval_ppl.push_back(eval_ppl(model, data, c, o.eval_batches, o.batch, o.fault, last ? &evaluated : nullptr));
        if (last) {
          evaluated.emplace_back("eval.ppl", torch::tensor(std::vector<double>{r.eval_ppl.back()}, torch::kDouble));
          for (auto& t : parameters_named("final.")) evaluated.push_back(std::move(t));
          write_safetensors(o.export_dir / "eval.safetensors", evaluated);
        }
      }
    }
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.tokens_per_s = static_cast<double>(o.steps) * o.batch * c.context / r.seconds;
  if (o.fault == "tokens_per_s_per_sequence") r.tokens_per_s /= c.context;  // planted: sequences per second
  r.weights_sha256 = parameters_sha256(model->parameters());
  r.first_batches_sha256 = parameters_sha256(first_batches);
  if (!o.checkpoint.empty() && o.fault != "checkpoint_before_training") torch::save(model, o.checkpoint);
  return r;
}

TrainResult seeded_run(const Corpus& data, std::uint64_t seed, long steps, const std::string& fault) {
  // Planted faults: the run leaves LibTorch's algorithms as they are (the series says they must be deterministic),
  // or asks only for a warning on a nondeterministic kernel.
  if (fault != "deterministic_off")
    at::globalContext().setDeterministicAlgorithms(true, fault == "deterministic_warn_only");
  TinyConfig c;
  c.n_layer = 2;
  c.context = 64;
  TrainOptions o;
  if (fault != "seed_ignored") o.seed = seed;  // a planted fault: the seed is parsed but never handed on
  o.steps = steps;
  o.batch = 8;
  o.eval_every = 0;
  o.schedule = {1e-3, 1e-4, 5, steps};
  if (fault == "frozen" || fault == "seed_model_constant" || fault == "seed_data_constant")
    o.fault = fault;  // planted faults (tests): train_tiny's own
  return train_tiny(c, data, o);
}

// ---- autograd and memory ------------------------------------------------------------
GradAccumResult grad_accumulation(std::uint64_t seed, int k, const std::string& fault) {
  torch::manual_seed(seed);
  TinyConfig c;
  c.n_layer = 1;
  c.context = 16;
  TinyGPT model(c);
  model->eval();  // no dropout anyway; explicit
  auto x = torch::randint(0, c.vocab, {8, c.context}), y = torch::randint(0, c.vocab, {8, c.context});
  auto grads = [&] {
    std::vector<torch::Tensor> g;
    for (auto& p : model->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return g;
  };
  auto clear = [&] { model->zero_grad(true); };
  GradAccumResult r;
  // Two backwards accumulate: grad == 2 x one backward's.
  clear();
  lm_loss(model->forward(x), y, true).backward();
  auto once = grads();
  lm_loss(model->forward(x), y, true).backward();
  auto twice = grads();
  for (std::size_t i = 0; i < once.size(); ++i) {
    r.two_backwards_err = std::max(r.two_backwards_err, (twice[i] - 2 * once[i]).abs().max().item<double>());
    r.grad_scale = std::max(r.grad_scale, once[i].abs().max().item<double>());
  }
  // k micro-batches of loss / k == one big batch.
  clear();
  lm_loss(model->forward(x), y, true).backward();
  auto big = grads();
  if (fault != "no_zero_grad") clear();  // a planted fault: the big batch's gradient is still there
  for (int m = 0; m < k; ++m) {
    if (fault == "zero_grad_each_microbatch") clear();
    auto xs = x.chunk(k)[m], ys = y.chunk(k)[m];
    (lm_loss(model->forward(xs), ys, true) / k).backward();
  }
  auto acc = grads();
  for (std::size_t i = 0; i < big.size(); ++i)
    r.microbatch_err = std::max(r.microbatch_err, (acc[i] - big[i]).abs().max().item<double>());
  return r;
}

namespace {
// The small model of the memory demonstrations and the seeded runs: chapter 3's, 2 layers, 64 characters of context.
TinyConfig small_config() {
  TinyConfig c;
  c.n_layer = 2;
  c.context = 64;
  return c;
}
}  // namespace

RetainedMemory evaluation_memory(std::uint64_t seed, int batches, const std::string& fault) {
  install_counting_allocator();
  torch::manual_seed(seed);
  const TinyConfig c = small_config();
  TinyGPT model(c);
  auto x = torch::randint(0, c.vocab, {8, c.context}), y = torch::randint(0, c.vocab, {8, c.context});
  RetainedMemory r;
  for (bool no_grad : {false, true}) {
    const auto base = live_bytes();
    std::vector<torch::Tensor> kept;  // "total += loss": what evaluation code keeps per batch
    for (int b = 0; b < batches; ++b) {
      std::unique_ptr<torch::NoGradGuard> guard;
      if (fault == "unnamed_no_grad_guard") {
        if (no_grad) torch::NoGradGuard{};  // a planted fault: an unnamed guard, gone before the forward runs
      } else if (no_grad || fault == "no_grad_everywhere") {
        guard = std::make_unique<torch::NoGradGuard>();
      }
      auto loss = lm_loss(model->forward(x), y, true);
      if (fault == "kept_overwritten" && !kept.empty())
        kept.back() = loss;  // a planted fault: "total = loss"
      else
        kept.push_back(loss);
      (no_grad ? r.no_grad_bytes : r.with_grad_bytes).push_back(static_cast<double>(live_bytes() - base));
    }
  }
  return r;
}

EvalPeaks evaluation_peaks(std::uint64_t seed, const std::string& fault) {
  install_counting_allocator();
  torch::manual_seed(seed);
  const TinyConfig c = small_config();
  TinyGPT model(c);
  Corpus data;  // a generated text: printable ASCII
  for (int i = 0; i < 20000; ++i) data.val.push_back(static_cast<std::uint8_t>(32 + (i * 7919 + i / 13) % 95));
  data.train = data.val;
  EvalPeaks r;
  for (bool outer : {false, true}) {
    std::unique_ptr<torch::NoGradGuard> guard;
    if (outer) guard = std::make_unique<torch::NoGradGuard>();
    const auto base = live_bytes();
    reset_peak();
    eval_ppl(model, data, c, 2, 8, fault);
    (outer ? r.under_outer_guard : r.as_called) = static_cast<double>(peak_bytes() - base);
  }
  return r;
}

Bf16Timing cpu_bf16_autocast(std::uint64_t seed, int n, int repeats, const std::string& fault, int threads) {
  const ScopedIntraOpThreads threads_guard(fault == "autocast_threads_ignored" ? 0 : threads);
  torch::manual_seed(seed);
  auto a = torch::randn({n, n}), b = torch::randn({n, n});
  {  // Row 0 of a: 1 + 2^-10 on its first half, -1 on the rest; column 0 of b: ones. In bf16, 1 + 2^-10 is 1 and
    // the product's element (0, 0) is 0; in fp32 it is n / 2 x 2^-10 (the checks read which one each side ran).
    torch::NoGradGuard ng;
    a[0].slice(0, 0, n / 2).fill_(1.0 + std::ldexp(1.0, -10));
    a[0].slice(0, n / 2).fill_(-1.0);
    b.select(1, 0).fill_(1.0);
  }
  // A planted fault: oneDNN switched off (as `torch.backends.mkldnn.flags(enabled=False)` does), so the bf16 matmul
  // falls back to ATen's own loops and a CPU's bf16 instructions go unused.
  const bool onednn_before = at::globalContext().userEnabledMkldnn();
  struct RestoreOnednn {
    bool on;
    ~RestoreOnednn() { at::globalContext().setUserEnabledMkldnn(on); }
  } restore_onednn{onednn_before};
  auto time_it = [&](bool autocast) {
    compat::set_cpu_autocast(autocast && fault != "autocast_off");
    at::globalContext().setUserEnabledMkldnn(autocast && fault == "onednn_off" ? false : onednn_before);
    // Planted faults: one side multiplies by b's transpose (the same work, the wrong product).
    const bool transposed = fault == (autocast ? "autocast_matmul_transposed" : "fp32_matmul_transposed");
    const torch::Tensor rhs = transposed ? b.t().contiguous() : b;
    // A planted fault: the autocast side's matmul run in fp32 and its output cast to bf16 (the dtype is right).
    const bool cast_after = autocast && fault == "autocast_output_cast";
    if (cast_after) compat::set_cpu_autocast(false);
    auto product = [&] { return cast_after ? torch::matmul(a, rhs).to(torch::kBFloat16) : torch::matmul(a, rhs); };
    auto out = product();  // warm-up (and the dtype seen inside)
    // The best of at least `repeats` runs and of at least 0.25 s of them: the fast side (fp32, ~10 ms) gets tens of
    // tries, so that a run interrupted by a neighbour on a shared machine is not its best (best of 2 read 25x once
    // under load, 57-75x quiet, on the AVX2 EPYC).
    double best = 1e30, spent = 0;
    const double cpu0 = process_cpu_seconds();
    const auto w0 = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats || spent < 0.25; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      out = product();
      const double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::min(best, dt);
      spent += dt;
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const double busy = wall > 0 ? (process_cpu_seconds() - cpu0) / wall : 0;
    compat::set_cpu_autocast(false);
    return std::make_tuple(best, std::string(c10::toString(out.scalar_type())), busy, host_floats(out));
  };
  Bf16Timing t;
  t.n = n;
  t.a = host_floats(a);
  t.b = host_floats(b);
  double busy32 = 0, busy16 = 0;
  std::tie(t.fp32_s, std::ignore, busy32, t.fp32_out) = time_it(false);
  std::tie(t.bf16_autocast_s, t.dtype_inside_autocast, busy16, t.bf16_out) = time_it(true);
  t.cpu_over_wall = std::max(busy32, busy16);
  return t;
}

ShapeGuardResult shape_guard_demo(const std::string& fault) {
  ShapeGuardResult r;
  try {
    const auto c = same_shape_add(torch::ones({3}), torch::ones({3, 1}), fault != "skip_shape_assertion");
    for (auto d : c.sizes()) r.shape.push_back(d);
  } catch (const c10::Error&) {
    r.caught = true;
  }
  return r;
}

std::vector<bool> shape_guard_cases(const std::vector<std::pair<std::vector<long>, std::vector<long>>>& pairs,
                                    const std::string& fault) {
  std::vector<bool> caught;
  for (const auto& [sa, sb] : pairs) {
    const std::vector<std::int64_t> a(sa.begin(), sa.end()), b(sb.begin(), sb.end());
    try {
      same_shape_add(torch::ones(a), torch::ones(b), fault != "skip_shape_assertion", fault == "shape_guard_dims_only");
      caught.push_back(false);
    } catch (const c10::Error&) {
      caught.push_back(true);
    }
  }
  return caught;
}

LossPrecision loss_precision(std::uint64_t seed, const std::string& fault) {
  torch::manual_seed(seed);
  // Realistic LM logits: large vocabulary, a spread of a few units, targets drawn from the model.
  auto logits = torch::randn({512, 32000}, torch::kDouble) * 3;
  auto targets = torch::randint(0, 32000, {512});
  const double exact = F::cross_entropy(logits, targets).item<double>();
  auto bf16 = logits.to(torch::kBFloat16);
  if (fault == "to_not_in_place") {  // a planted fault: `bf16 = logits; bf16.to(kBFloat16);` (to() is not in place)
    bf16 = logits;
    (void)bf16.to(torch::kBFloat16);
  }
  LossPrecision p;
  p.fp32_err = std::fabs(F::cross_entropy(logits.to(torch::kFloat), targets).item<double>() - exact);
  p.bf16_err = std::fabs(F::cross_entropy(bf16, targets).to(torch::kDouble).item<double>() - exact);
  // The project's helper on bf16 logits (what autocast hands it): it must compute in fp32.
  const auto exact_of_bf16 = F::cross_entropy(bf16.to(torch::kDouble), targets).item<double>();
  p.project_err =
      std::fabs(lm_loss(bf16, targets, fault != "loss_in_bf16").to(torch::kDouble).item<double>() - exact_of_bf16);
  return p;
}

}  // namespace claimcheck::train
