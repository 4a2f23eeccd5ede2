// Chapter 4 measured: a training step of the Llama-shaped decoder under the counting allocator, every live byte
// attributed to what holds it; saved activations per op; gradient checkpointing; out-of-memory under a cap.
#include "claimcheck/train/memory.h"

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <ATen/autocast_mode.h>

#include "claimcheck/base/timing.h"
#include "decoder.h"

namespace claimcheck::train {

const std::vector<std::string>& memory_categories() {
  static const std::vector<std::string> c = {"parameters",     "gradients",       "optimizer_state",
                                             "master_weights", "autocast_copies", "saved_activations",
                                             "temporaries"};
  return c;
}

namespace {

enum Phase { kBefore = 0, kLoad = 1, kForward = 2, kBackward = 3, kStep = 4 };
const char* phase_name(int p) {
  switch (p) {
    case kLoad:
      return "load";
    case kForward:
      return "forward";
    case kBackward:
      return "backward";
    case kStep:
      return "step";
    default:
      return "before";
  }
}
using base::seconds_since;

// The optimizer of the series' table: bf16 parameters; the optimizer keeps an fp32 master copy (made when it is
// built) and fp32 Adam m, v (made at the first step, as torch.optim does), and writes the master back in bf16.
struct MasterAdamW {
  // fault (tests only): "master_copy_in_param_dtype" (the master is a clone: bf16), "adam_state_in_param_dtype"
  // (m, v made like the bf16 parameters rather than the fp32 master).
  explicit MasterAdamW(std::vector<torch::Tensor> ps, const std::string& fault = "")
      : params(std::move(ps)),
        state_like_params(fault == "adam_state_in_param_dtype"),
        coupled_decay(fault == "adamw_coupled_decay"),
        no_bias_correction(fault == "adamw_no_bias_correction"),
        eps_inside_sqrt(fault == "adamw_eps_inside_sqrt"),
        truncate_writeback(fault == "master_written_truncated"),
        decay_vectors_only(fault == "master_decay_vectors_only"),
        keep_fp32_grads(fault == "master_keeps_fp32_grads") {
    if (fault == "master_beta2_099") b2 = 0.99;  // a planted fault: beta2 0.99 (PyTorch's is 0.999)
    torch::NoGradGuard ng;
    for (const auto& p : params)
      master.push_back(fault == "master_copy_in_param_dtype" ? p.detach().clone() : p.detach().to(torch::kFloat));
  }
  void step() {
    torch::NoGradGuard ng;
    ++t;
    if (m.empty())
      for (std::size_t i = 0; i < master.size(); ++i) {
        const auto& w = state_like_params ? params[i] : master[i];
        m.push_back(torch::zeros_like(w));
        v.push_back(torch::zeros_like(w));
      }
    // Planted faults: no bias correction; the decay added to the gradient (Adam with L2) instead of decoupled.
    const double bc1 = no_bias_correction ? 1.0 : 1 - std::pow(b1, t);
    const double bc2 = no_bias_correction ? 1.0 : 1 - std::pow(b2, t);
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!params[i].grad().defined()) continue;
      auto g = params[i].grad().to(torch::kFloat);
      if (keep_fp32_grads) kept.push_back(g);  // a planted fault: each step's fp32 gradient kept, owned by no role
      // (A planted fault decays the 1-D tensors only, as GPT-2's recipes do, where the series' optimizer decays all.)
      const double decay = decay_vectors_only && master[i].dim() != 1 ? 0.0 : wd;
      if (coupled_decay)
        g = g + decay * master[i];
      else
        master[i].mul_(1 - lr * decay);
      m[i].mul_(b1).add_(g, 1 - b1);
      v[i].mul_(b2).addcmul_(g, g, 1 - b2);
      if (eps_inside_sqrt)  // a planted fault: sqrt(v_hat + eps), as some Adam variants write it
        master[i].addcdiv_(m[i], (v[i] / bc2).add_(eps).sqrt_(), -lr / bc1);
      else
        master[i].addcdiv_(m[i], (v[i] / bc2).sqrt_().add_(eps), -lr / bc1);
      // A planted fault: the master written back truncated to bf16 (its low 16 bits dropped), not rounded.
      if (truncate_writeback)
        params[i].copy_(torch::bitwise_and(master[i].view(torch::kInt32), std::int64_t{-65536} /* 0xFFFF0000 */)
                            .view(torch::kFloat));
      else
        params[i].copy_(master[i]);
    }
  }
  std::vector<torch::Tensor> params, master, m, v, kept;
  double lr = 1e-4, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  long t = 0;
  bool state_like_params = false, coupled_decay = false, no_bias_correction = false, eps_inside_sqrt = false,
       truncate_writeback = false, decay_vectors_only = false, keep_fp32_grads = false;
};

using Owners = std::unordered_map<const void*, std::string>;
void own(Owners& o, const torch::Tensor& t, const std::string& category) {
  if (t.defined() && t.has_storage() && t.storage().data_ptr().get()) o.emplace(t.storage().data_ptr().get(), category);
}
std::int64_t storage_bytes(const torch::Tensor& t) {
  return t.defined() && t.has_storage() ? static_cast<std::int64_t>(t.storage().nbytes()) : 0;
}

// A model and its optimizer, with what each tensor is.
struct Session {
  explicit Session(const DecoderConfig& c) : model(c) {}
  Decoder model;
  std::unique_ptr<torch::optim::AdamW> adamw;
  std::unique_ptr<MasterAdamW> master;
  std::vector<torch::Tensor> trainable;

  Owners owners() const {
    Owners o;
    for (const auto& p : model->parameters()) {
      own(o, p, "parameters");
      own(o, p.grad(), "gradients");
    }
    if (adamw)
      for (const auto& [key, st] : adamw->state()) {
        const auto& s = static_cast<const torch::optim::AdamWParamState&>(*st);
        own(o, s.exp_avg(), "optimizer_state");
        own(o, s.exp_avg_sq(), "optimizer_state");
        own(o, s.max_exp_avg_sq(), "optimizer_state");
      }
    if (master) {
      for (const auto& t : master->master) own(o, t, "master_weights");
      for (const auto& t : master->m) own(o, t, "optimizer_state");
      for (const auto& t : master->v) own(o, t, "optimizer_state");
    }
    return o;
  }
  std::int64_t trainable_count() const {
    std::int64_t n = 0;
    for (const auto& p : trainable) n += p.numel();
    return n;
  }
};

// Attributes live allocations: tensors the model and optimizer hold by what they are; bf16 buffers equal, byte for
// byte, to a parameter cast to bf16 are autocast's copies; the rest made during the forward are what the graph
// saved (and the forward's output); anything else is a temporary. `check_content`: the buffers are still live.
MemorySnapshot attribute(const std::string& phase, const std::vector<LiveAllocation>& live, const Session& s,
                         bool check_content, const std::string& fault) {
  const Owners owners = s.owners();
  std::vector<torch::Tensor> fp32_params;
  for (const auto& p : s.model->parameters())
    if (p.scalar_type() == torch::kFloat) fp32_params.push_back(p);
  std::unordered_map<std::size_t, torch::Tensor> casts;  // parameter index -> its bf16 cast, made when needed
  auto autocast_copy = [&](const LiveAllocation& a) {
    if (!check_content) return false;
    for (std::size_t i = 0; i < fp32_params.size(); ++i) {
      if (fp32_params[i].numel() * 2 != a.bytes) continue;
      auto it = casts.find(i);
      if (it == casts.end()) it = casts.emplace(i, fp32_params[i].detach().to(torch::kBFloat16).contiguous()).first;
      if (std::memcmp(it->second.data_ptr(), a.ptr, static_cast<std::size_t>(a.bytes)) == 0) return true;
    }
    return false;
  };
  MemorySnapshot snap;
  snap.phase = phase;
  for (const auto& c : memory_categories()) snap.bytes[c] = 0;
  for (const auto& a : live) {
    if (a.phase == kBefore) continue;
    std::string c;
    if (auto it = owners.find(a.ptr); it != owners.end())
      c = it->second;
    else if (a.phase == kForward)
      c = autocast_copy(a) ? "autocast_copies" : "saved_activations";
    else
      c = "temporaries";
    if (fault == "alloc_drops_optimizer_state" && c == "optimizer_state") continue;  // planted
    snap.bytes[c] += a.bytes;
    snap.live += a.bytes;
  }
  return snap;
}

MemorySnapshot snapshot(const std::string& phase, const Session& s, const std::string& fault) {
  const auto peak = peak_bytes();
  const auto live = live_allocations();
  std::int64_t before = 0;
  for (const auto& a : live)
    if (a.phase == kBefore) before += a.bytes;
  MemorySnapshot snap = attribute(phase, live, s, true, fault);
  snap.peak = peak - before;
  reset_peak();
  return snap;
}

// Restores the allocator's phase tag and cap however the scope ends.
struct AllocScope {
  AllocScope() { set_allocation_phase(kBefore); }
  ~AllocScope() {
    set_allocation_cap(0);
    set_allocation_phase(kBefore);
    compat::set_cpu_autocast(false);
  }
};

torch::Tensor next_token_loss(const torch::Tensor& logits, const torch::Tensor& ids, bool cast_to_fp32,
                              const std::string& fault = "") {
  const auto T = ids.size(1);
  // A planted fault: each position's target is its own token, not the next one.
  if (fault == "loss_labels_unshifted") return lm_loss(logits.slice(1, 0, T - 1), ids.slice(1, 0, T - 1), cast_to_fp32);
  return lm_loss(logits.slice(1, 0, T - 1), ids.slice(1, 1), cast_to_fp32);
}

}  // namespace

MasterAdamWRun master_adamw_steps(const std::vector<float>& w0, const std::vector<std::vector<float>>& grads,
                                  const std::string& fault) {
  const auto n = static_cast<std::int64_t>(w0.size());
  if (n < 128 || n % 128 != 0) throw std::invalid_argument("master_adamw_steps: a size that is a multiple of 128");
  // Two parameters, as a model's are: the first half a matrix of rows of 64, the second a vector.
  const auto all = torch::from_blob(const_cast<float*>(w0.data()), {n}, torch::kFloat).to(torch::kBFloat16);
  std::vector<torch::Tensor> ps{all.slice(0, 0, n / 2).reshape({n / 128, 64}).clone().set_requires_grad(true),
                                all.slice(0, n / 2).clone().set_requires_grad(true)};
  MasterAdamW opt(ps, fault);
  for (const auto& g : grads) {
    if (static_cast<std::int64_t>(g.size()) != n) throw std::invalid_argument("master_adamw_steps: a gradient's size");
    const auto gb = torch::from_blob(const_cast<float*>(g.data()), {n}, torch::kFloat).to(torch::kBFloat16);
    ps[0].mutable_grad() = gb.slice(0, 0, n / 2).reshape({n / 128, 64}).clone();
    ps[1].mutable_grad() = gb.slice(0, n / 2).clone();
    opt.step();
  }
  MasterAdamWRun r;
  for (std::size_t i = 0; i < ps.size(); ++i) {
    const auto m = opt.master[i].to(torch::kFloat).contiguous();  // (a master planted in bf16 is widened to be read)
    r.master.insert(r.master.end(), m.data_ptr<float>(), m.data_ptr<float>() + m.numel());
    const auto b = ps[i].detach().contiguous();
    const auto* bits = reinterpret_cast<const std::uint16_t*>(b.data_ptr<at::BFloat16>());
    r.weights_bf16.insert(r.weights_bf16.end(), bits, bits + b.numel());
  }
  return r;
}

StepMemory measure_training_step(const std::filesystem::path& config, const std::string& mode, std::uint64_t seed,
                                 int tokens, const std::string& fault) {
  if (mode != "autocast" && mode != "bf16_master")
    throw std::invalid_argument("training mode '" + mode + "': expected autocast or bf16_master");
  install_counting_allocator();
  const DecoderConfig c = read_decoder_config(config);
  AllocScope scope;
  torch::manual_seed(seed);
  auto ids = torch::randint(0, c.vocab, {1, tokens});
  const auto t0 = std::chrono::steady_clock::now();
  reset_peak();
  set_allocation_phase(kLoad);
  Session s(c);
  // A planted fault: the series-table mode forgets to convert the model (weights and gradients stay fp32).
  if (mode == "bf16_master" && fault != "master_mode_model_fp32") s.model->to(torch::kBFloat16);
  s.trainable = s.model->parameters();
  if (mode == "autocast")
    s.adamw = std::make_unique<torch::optim::AdamW>(s.trainable, torch::optim::AdamWOptions(1e-4));
  else
    s.master = std::make_unique<MasterAdamW>(s.trainable, fault);
  StepMemory out;
  out.mode = mode;
  out.trainable = s.trainable_count();
  out.timeline.push_back(snapshot("load", s, fault));

  set_allocation_phase(kForward);
  // A planted fault: the autocast mode runs its forward without autocast (fp32 matmuls, no bf16 copies).
  compat::set_cpu_autocast(mode == "autocast" && fault != "autocast_off");
  torch::Tensor logits = s.model->forward(ids);
  auto loss = next_token_loss(logits, ids, true, fault);
  compat::set_cpu_autocast(false);  // leaving `with autocast` clears its cache; the graph keeps what it saved
  // What the loss saw, for the check's reference: copied on the host, the tensor let go before the snapshot.
  out.logits = host_floats(logits);
  out.vocab = logits.size(-1);
  logits = torch::Tensor();
  out.timeline.push_back(snapshot("forward", s, fault));
  out.loss = loss.item<double>();
  const auto* id = ids.data_ptr<std::int64_t>();
  out.ids.assign(id, id + ids.numel());

  set_allocation_phase(kBackward);
  // (A planted fault keeps the graph: retain_graph = true, the loss held to the end, as a Python loop that never
  // rebinds it does; its saved activations and autocast copies outlive the step.)
  const bool retain = fault == "backward_retains_graph";
  loss.backward({}, retain);
  if (!retain) loss = torch::Tensor();
  out.timeline.push_back(snapshot("backward", s, fault));

  set_allocation_phase(kStep);
  if (s.adamw)
    s.adamw->step();
  else
    s.master->step();
  out.timeline.push_back(snapshot("step", s, fault));
  out.seconds = seconds_since(t0);

  // The pieces of state, from the tensors themselves.
  std::int64_t weights = 0, grads = 0, m = 0, v = 0, master = 0;
  for (const auto& p : s.trainable) {
    weights += storage_bytes(p);
    grads += storage_bytes(p.grad());
  }
  if (s.adamw) {
    for (const auto& [key, st] : s.adamw->state()) {
      const auto& a = static_cast<const torch::optim::AdamWParamState&>(*st);
      m += storage_bytes(a.exp_avg());
      v += storage_bytes(a.exp_avg_sq());
    }
    out.roles = {{"fp32 weights", weights}, {"fp32 gradients", grads}, {"Adam m (fp32)", m}, {"Adam v (fp32)", v}};
  } else {
    for (const auto& t : s.master->master) master += storage_bytes(t);
    for (const auto& t : s.master->m) m += storage_bytes(t);
    for (const auto& t : s.master->v) v += storage_bytes(t);
    out.roles = {{"bf16 weights", weights},
                 {"bf16 gradients", grads},
                 {"fp32 master", master},
                 {"Adam m (fp32)", m},
                 {"Adam v (fp32)", v}};
  }
  return out;
}

std::map<std::string, std::string> autocast_dtypes(const std::filesystem::path& config, std::uint64_t seed,
                                                   const std::string& fault) {
  const DecoderConfig c = read_decoder_config(config);
  torch::manual_seed(seed);
  Decoder model(c);
  if (fault == "autocast_casts_params") model->to(torch::kBFloat16);  // planted: "autocast makes weights bf16"
  std::map<std::string, std::string> seen;
  model->run.dtypes = &seen;
  model->run.eager_attention = true;  // a softmax of its own, to look at
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-4));
  auto ids = torch::randint(0, c.vocab, {1, 16});
  compat::set_cpu_autocast(true);
  auto loss = next_token_loss(model->forward(ids), ids, /*cast_to_fp32=*/false);  // autocast's own choice
  compat::set_cpu_autocast(false);
  model->run.dtypes = nullptr;
  seen["loss (cross_entropy on the bf16 logits)"] = std::string(c10::toString(loss.scalar_type()));
  loss.backward();
  opt.step();
  auto all = [&](auto get) {
    std::string d;
    for (const auto& p : model->parameters()) {
      const std::string x = c10::toString(get(p).scalar_type());
      if (d.empty())
        d = x;
      else if (d != x)
        return std::string("mixed");
    }
    return d;
  };
  seen["parameters after the step"] = all([](const torch::Tensor& p) { return p; });
  seen["gradients"] = all([](const torch::Tensor& p) { return p.grad(); });
  return seen;
}

namespace {
bool autocast_precision(const std::string& precision) {
  if (precision != "bf16" && precision != "autocast" && precision != "fp32")
    throw std::invalid_argument("precision '" + precision + "': expected bf16, autocast or fp32");
  return precision == "autocast";
}
}  // namespace

ActivationMeasure saved_activations(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                    bool eager_attention, bool by_segment, const std::string& precision,
                                    const std::string& fault, int lora_r) {
  const bool autocast = autocast_precision(precision);
  if (lora_r < 0) throw std::invalid_argument("saved_activations: LoRA rank " + std::to_string(lora_r));
  install_counting_allocator();
  const DecoderConfig c = read_decoder_config(config);
  AllocScope scope;
  torch::manual_seed(seed);
  Session s(c);
  if (lora_r > 0) {  // a LoRA run: the base frozen, adapters (r, 2r) on every projection, as chapter 5's
    for (auto& p : s.model->parameters()) p.requires_grad_(false);
    for (auto& layer : s.model->layers)
      for (const char* t : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
        layer->projs.at(t)->enable_lora(lora_r, 2.0 * lora_r, fault);
  }
  if (precision == "bf16") s.model->to(torch::kBFloat16);  // autocast and fp32 keep the fp32 model
  s.model->run.eager_attention = eager_attention;
  s.model->run.attention_fault = fault;  // tests only: a planted attention fault
  auto ids = torch::randint(0, c.vocab, {batch, tokens});
  // Bytes the forward leaves live (output + what autograd saved), autocast's weight copies excluded.
  int tag = 100;
  std::vector<float> output;
  auto held = [&](bool grad, int layers, int segments) {
    set_allocation_phase(++tag);
    s.model->run.max_layers = layers;
    s.model->run.grad_segments = segments;
    std::remove_pointer_t<decltype(DecoderRun::keep_graph)> graph;
    s.model->run.keep_graph = &graph;
    torch::Tensor out;
    {
      c10::AutoGradMode mode(grad);
      compat::set_cpu_autocast(autocast && fault != "autocast_forgotten");  // fault (tests): no autocast
      out = s.model->forward(ids);
      compat::set_cpu_autocast(false);
    }
    std::vector<LiveAllocation> mine;
    for (const auto& a : live_allocations())
      if (a.phase == tag) mine.push_back({a.ptr, a.bytes, kForward});
    set_allocation_phase(kBefore);
    if (!grad && layers == static_cast<int>(c.layers) && out.defined()) {  // (after the count: the copy is not in it)
      const torch::Tensor f = out.detach().to(torch::kFloat32).contiguous().flatten();
      output.assign(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
    }
    s.model->run.keep_graph = nullptr;
    const MemorySnapshot snap = attribute("forward", mine, s, true, "");
    return static_cast<double>(snap.bytes.at("saved_activations") + snap.bytes.at("temporaries"));
  };
  // (A planted fault divides by one row's tokens, not the batch's: the same figure at batch 1.)
  const double tokens_total = static_cast<double>(fault == "activations_batch_ignored" ? 1 : batch) * tokens;
  ActivationMeasure m;
  m.tokens = tokens;
  m.eager_attention = eager_attention;
  const int L = static_cast<int>(c.layers);
  // Per layer: the difference between L layers and one, so that what all layers share (RoPE's cos, sin) drops out.
  const double all = held(true, L, -1) - held(false, L, -1);
  const double one = L > 1 ? held(true, 1, -1) - held(false, 1, -1) : 0;
  m.bytes_per_token_layer = L > 1 ? (all - one) / (tokens_total * (L - 1)) : all / tokens_total;
  m.shared_bytes = L > 1 ? one - m.bytes_per_token_layer * tokens_total : 0;
  m.output = std::move(output);
  if (by_segment) {
    const double none = held(true, 1, 0);
    double prev = none;
    for (std::size_t i = 0; i < decoder_segments().size(); ++i) {
      const double now = held(true, 1, static_cast<int>(i + 1));
      m.segments.emplace_back(decoder_segments()[i], (now - prev) / tokens_total);
      prev = now;
    }
  }
  return m;
}

CheckpointMeasure checkpointing(const std::filesystem::path& config, std::uint64_t seed, int batch, int tokens,
                                int repeats, const std::string& precision, const std::string& fault) {
  const bool autocast = autocast_precision(precision);
  install_counting_allocator();
  const DecoderConfig c = read_decoder_config(config);
  AllocScope scope;
  torch::manual_seed(seed);
  Session s(c);
  if (precision == "bf16") s.model->to(torch::kBFloat16);
  s.model->run.max_layers = static_cast<int>(c.layers);  // the layers: what checkpointing acts on
  s.model->run.checkpoint_fault = fault;
  auto ids = torch::randint(0, c.vocab, {batch, tokens});
  const auto params = s.model->parameters();
  // (A planted fault divides by one row's tokens, not the batch's, as saved_activations' does.)
  const double per =
      static_cast<double>(fault == "activations_batch_ignored" ? 1 : batch) * tokens * static_cast<double>(c.layers);
  CheckpointMeasure r;
  r.precision = precision;
  auto layers_out = [&](bool ckpt, int layers) {
    s.model->run.checkpoint = ckpt;
    s.model->run.max_layers = layers;
    compat::set_cpu_autocast(autocast);
    auto out = s.model->forward(ids);
    compat::set_cpu_autocast(false);
    return out;
  };
  auto forward = [&](bool ckpt) {
    return layers_out(ckpt, static_cast<int>(c.layers)).to(torch::kFloat).square().mean();
  };
  int tag = 100;
  // Bytes the layers' forward leaves live, with autograd minus without (no weight copies), per token per layer:
  // the difference between all layers and one, so that what layers share (RoPE's cos, sin) drops out.
  auto saved = [&](bool ckpt) {
    auto once = [&](bool grad, int layers) {
      set_allocation_phase(++tag);
      torch::Tensor out;
      {
        c10::AutoGradMode mode(grad);
        out = layers_out(ckpt, layers);
      }
      std::vector<LiveAllocation> mine;
      for (const auto& a : live_allocations())
        if (a.phase == tag) mine.push_back({a.ptr, a.bytes, kForward});
      set_allocation_phase(kBefore);
      return static_cast<double>(attribute("forward", mine, s, true, "").bytes.at("saved_activations"));
    };
    const int L = static_cast<int>(c.layers);
    if (L == 1) return (once(true, 1) - once(false, 1)) / per;
    return ((once(true, L) - once(false, L)) - (once(true, 1) - once(false, 1))) / (per / L * (L - 1));
  };
  r.saved_plain = saved(false);
  r.saved_checkpointed = saved(true);
  auto step = [&](bool ckpt) {
    for (auto& p : params) p.mutable_grad() = torch::Tensor();
    const auto t0 = std::chrono::steady_clock::now();
    forward(ckpt).backward();
    return seconds_since(t0);
  };
  if (repeats <= 0) return r;  // memory only
  std::vector<torch::Tensor> plain_grads;
  r.step_plain_s = r.step_checkpointed_s = 1e300;
  step(false);  // warm-up, untimed: the allocator's first growth and the thread pool's start land on no sample
  step(true);
  for (int i = 0; i < repeats; ++i) {  // interleaved, best of each: a drifting CPU hits both alike
    r.step_plain_s = std::min(r.step_plain_s, step(false));
    if (i == 0)
      for (auto& p : params) plain_grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    r.step_checkpointed_s = std::min(r.step_checkpointed_s, step(true));
  }
  r.grads_bitwise_equal = true;
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto g = params[i].grad().defined() ? params[i].grad() : torch::zeros_like(params[i]);
    r.grad_max_abs_diff = std::max(r.grad_max_abs_diff, (g - plain_grads[i]).abs().max().item<double>());
    r.grad_scale = std::max(r.grad_scale, plain_grads[i].abs().max().item<double>());
    r.grads_bitwise_equal = r.grads_bitwise_equal && torch::equal(g, plain_grads[i]);
  }
  return r;
}

OomRun oom_run(const std::filesystem::path& config, const std::string& scenario, std::int64_t cap_bytes,
               std::uint64_t seed, int tokens, const std::string& fault) {
  if (cap_bytes <= 0)
    throw std::invalid_argument("memory cap " + std::to_string(cap_bytes) + " bytes: must be positive");
  if (scenario != "full" && scenario != "lora")
    throw std::invalid_argument("OOM scenario '" + scenario + "': expected full or lora");
  install_counting_allocator();
  const DecoderConfig c = read_decoder_config(config);
  AllocScope scope;
  torch::manual_seed(seed);
  // (A planted fault, oom_tokens_ignored, runs every OOM run on 8 tokens whatever its length.)
  auto ids = torch::randint(0, c.vocab, {1, fault == "oom_tokens_ignored" ? 8 : tokens});
  OomRun r;
  r.scenario = scenario;
  r.cap = cap_bytes;
  std::unique_ptr<Session> s;
  const std::string no_fault;
  auto lift_cap_for = [&](auto fn) {  // snapshots make casts of their own: not under the cap
    set_allocation_cap(0);
    fn();
    if (fault != "oom_cap_ignored") set_allocation_cap(cap_bytes, fault != "oom_cap_one_late");
  };
  try {
    reset_peak();
    set_allocation_phase(kLoad);
    if (fault != "oom_cap_ignored") set_allocation_cap(cap_bytes, fault != "oom_cap_one_late");
    s = std::make_unique<Session>(c);
    if (scenario == "lora") {
      if (fault != "oom_lora_base_trainable")  // (a planted fault: the base left trainable)
        for (auto& p : s->model->parameters()) p.requires_grad_(false);
      for (auto& layer : s->model->layers)
        for (const char* t : {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"})
          layer->projs.at(t)->enable_lora(16, 32);
    }
    for (const auto& p : s->model->parameters())
      if (p.requires_grad()) s->trainable.push_back(p), r.trainable += p.numel();
    s->adamw = std::make_unique<torch::optim::AdamW>(s->trainable, torch::optim::AdamWOptions(1e-4));
    lift_cap_for([&] { r.timeline.push_back(snapshot("load", *s, no_fault)); });
    set_allocation_phase(kForward);
    compat::set_cpu_autocast(true);
    auto loss = next_token_loss(s->model->forward(ids), ids, true);
    compat::set_cpu_autocast(false);
    lift_cap_for([&] { r.timeline.push_back(snapshot("forward", *s, no_fault)); });
    if (fault != "oom_backward_unphased") set_allocation_phase(kBackward);  // (planted: backward's bytes as forward's)
    loss.backward();
    loss = torch::Tensor();
    lift_cap_for([&] { r.timeline.push_back(snapshot("backward", *s, no_fault)); });
    if (fault != "oom_step_unphased") set_allocation_phase(kStep);  // (a planted fault: the step's bytes as backward's)
    s->adamw->step();
    lift_cap_for([&] { r.timeline.push_back(snapshot("step", *s, no_fault)); });
  } catch (const c10::OutOfMemoryError& e) {
    const int phase = allocation_phase();
    set_allocation_cap(0);
    compat::set_cpu_autocast(false);
    r.oom = true;
    r.phase = phase_name(phase);
    const std::string what = e.what();
    r.message = what.substr(0, what.find('\n'));
    const auto at = allocations_at_last_oom(&r.requested);
    for (const auto& a : at) r.live_at_oom += a.bytes;
    if (s) {
      MemorySnapshot snap = attribute("at OOM", at, *s, false, no_fault);
      r.timeline.push_back(std::move(snap));
    } else {  // the model itself did not fit: all there was is what loading made
      MemorySnapshot snap;
      snap.phase = "at OOM";
      for (const auto& cat : memory_categories()) snap.bytes[cat] = 0;
      for (const auto& a : at)
        if (a.phase == kLoad) {
          snap.bytes["parameters"] += a.bytes;
          snap.live += a.bytes;
        }
      r.timeline.push_back(std::move(snap));
    }
  }
  return r;
}

}  // namespace claimcheck::train
