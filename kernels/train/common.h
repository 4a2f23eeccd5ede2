// Shared by the LibTorch training sources (internal).
#pragma once
#include <ctime>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "claimcheck/base/sha256.h"
#include "claimcheck/base/torch_compat.h"
#include "claimcheck/train/experiments.h"

namespace claimcheck::train {

inline std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(bytes);
  return h.hex();
}

inline std::string parameters_sha256(const std::vector<torch::Tensor>& params) {
  Sha256 h;
  for (const auto& p : params) {
    auto c = p.detach().contiguous();
    h.update(c.data_ptr(), static_cast<std::size_t>(c.numel() * c.element_size()));
  }
  return h.hex();
}

// A contiguous fp32 or bf16 CPU tensor's values as fp32, row-major, copied on the host without a tensor of LibTorch's
// (so that the counting allocator sees nothing of the copy): what a check's reference reads.
inline std::vector<float> host_floats(const torch::Tensor& t) {
  if (!t.is_contiguous() || !t.device().is_cpu()) throw std::logic_error("host_floats: a contiguous CPU tensor");
  const auto n = static_cast<std::size_t>(t.numel());
  if (t.scalar_type() == torch::kFloat) return {t.data_ptr<float>(), t.data_ptr<float>() + n};
  if (t.scalar_type() != torch::kBFloat16) throw std::logic_error("host_floats: fp32 or bf16");
  const at::BFloat16* p = t.data_ptr<at::BFloat16>();
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
  return out;
}

// The process's CPU seconds (every thread's).
inline double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// LibTorch's intra-op threads set to n for a scope (n <= 0: left as they are) and restored on the way out.
class ScopedIntraOpThreads {
 public:
  explicit ScopedIntraOpThreads(int n) : before_(torch::get_num_threads()) {
    if (n > 0) torch::set_num_threads(n);
  }
  ~ScopedIntraOpThreads() { torch::set_num_threads(before_); }
  ScopedIntraOpThreads(const ScopedIntraOpThreads&) = delete;
  ScopedIntraOpThreads& operator=(const ScopedIntraOpThreads&) = delete;

 private:
  int before_;
};

// A residual add that asserts what broadcasting would hide: (3,) + (3, 1) is a (3, 3) tensor in LibTorch, with no
// error. `check` is false only where a test plants the fault "skip_shape_assertion".
// (dims_only: a planted fault that compares the ranks alone, which (3,) + (3, 1) still trips.)
inline torch::Tensor same_shape_add(const torch::Tensor& a, const torch::Tensor& b, bool check = true,
                                    bool dims_only = false) {
  if (check)
    TORCH_CHECK(dims_only ? a.dim() == b.dim() : a.sizes() == b.sizes(), "same_shape_add: shapes ", a.sizes(), " and ",
                b.sizes(), " differ");
  return a + b;
}

// ---- the tiny character Transformer (TinyGPT): pre-LN GPT, learned positions, untied head
// --------------------------------------------------------------------
struct BlockImpl : torch::nn::Module {
  BlockImpl(int d, int heads, int ff)
      : heads_(heads),
        ln1(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        qkv(register_module("qkv", torch::nn::Linear(d, 3 * d))),
        proj(register_module("proj", torch::nn::Linear(d, d))),
        ln2(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d})))),
        fc1(register_module("fc1", torch::nn::Linear(d, ff))),
        fc2(register_module("fc2", torch::nn::Linear(ff, d))) {}
  torch::Tensor forward(torch::Tensor x) {
    const auto B = x.size(0), T = x.size(1), C = x.size(2);
    auto qkv_ = qkv(ln1(x)).view({B, T, 3, heads_, C / heads_}).permute({2, 0, 3, 1, 4});
    auto att = compat::causal_sdpa(qkv_[0], qkv_[1], qkv_[2]).transpose(1, 2).reshape({B, T, C});
    x = same_shape_add(x, proj(att));
    return same_shape_add(x, fc2(torch::nn::functional::gelu(fc1(ln2(x)))));
  }
  int heads_;
  torch::nn::LayerNorm ln1;
  torch::nn::Linear qkv, proj;
  torch::nn::LayerNorm ln2;
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Block);

struct TinyGPTImpl : torch::nn::Module {
  explicit TinyGPTImpl(const TinyConfig& c)
      : tok(register_module("tok", torch::nn::Embedding(c.vocab, c.d_model))),
        pos(register_module("pos", torch::nn::Embedding(c.context, c.d_model))),
        ln_f(register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.d_model})))),
        head(register_module("head", torch::nn::Linear(torch::nn::LinearOptions(c.d_model, c.vocab).bias(false)))) {
    for (int i = 0; i < c.n_layer; ++i)
      blocks.push_back(register_module("block" + std::to_string(i), Block(c.d_model, c.n_head, c.d_ff)));
    // GPT-2's initialisation: N(0, 0.02) weights, zero biases.
    torch::NoGradGuard ng;
    for (auto& p : named_parameters()) {
      if (p.key().find("ln") != std::string::npos && !c.draw_norms) continue;
      if (p.key().find("bias") != std::string::npos) {
        if (c.zero_biases) p.value().zero_();
      } else {
        p.value().normal_(0.0, c.init_std);
      }
    }
  }
  // The head's input: the final LayerNorm of the last block's output.
  torch::Tensor features(torch::Tensor idx) {
    auto x = tok(idx) + pos(torch::arange(idx.size(1), idx.options()));
    for (auto& b : blocks) x = b->forward(x);
    return ln_f(x);
  }
  torch::Tensor forward(torch::Tensor idx) { return head(features(idx)); }
  torch::nn::Embedding tok, pos;
  std::vector<Block> blocks;
  torch::nn::LayerNorm ln_f;
  torch::nn::Linear head;
};
TORCH_MODULE(TinyGPT);

// Tensors written as safetensors (kernels/train/hf_export.cpp): F32, BF16, F64, I64, U8; one file.
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
void write_safetensors(const std::filesystem::path& file, const NamedTensors& tensors);
// For the answer key's loops: AdamW's settings as the run used them ("adamw": a row per parameter group of beta1,
// beta2, eps, weight decay, amsgrad and the group's elements), and the total norm of the gradients as they are now
// (after clip_grad_norm_, what the step applies).
void append_adamw_settings(NamedTensors& run, const torch::optim::AdamW& opt);
double grads_norm(const std::vector<torch::Tensor>& parameters);

// The series' loss line: logits (cast to fp32 unless told otherwise), ignore_index = -100.
torch::Tensor lm_loss(const torch::Tensor& logits, const torch::Tensor& targets, bool cast_to_fp32);

}  // namespace claimcheck::train
