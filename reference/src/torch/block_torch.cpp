// The answer key's Llama decoder layers in fp64 (claimcheck/ref/block.h), written from the definitions with
// LibTorch's tensor ops and autograd: no module, no fused kernel, no code of the decoder under test.
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <torch/torch.h>

#include "claimcheck/ref/block.h"

namespace claimcheck::ref {
namespace {

torch::Tensor fp64_copy(const TensorRef& r) {
  return torch::from_blob(const_cast<float*>(r.values), r.shape, torch::kFloat).to(torch::kDouble, false, true);
}

// A Llama decoder layer on x [B, T, hidden], the weights looked up by "model.layers.<i>.<module>".
struct ReferenceLayers {
  const BlockSpec& s;
  std::map<std::string, torch::Tensor> w;  // fp64 leaves that require grad

  torch::Tensor weight(const std::string& name, std::vector<std::int64_t> shape) {
    const auto it = w.find(name);
    if (it == w.end()) throw std::invalid_argument("compare_block_step_fp64: no weight '" + name + "' handed over");
    if (it->second.sizes().vec() != shape)
      throw std::invalid_argument("compare_block_step_fp64: weight '" + name + "' has the wrong shape");
    return it->second;
  }
  torch::Tensor linear(const torch::Tensor& x, const std::string& prefix, std::int64_t in, std::int64_t out,
                       bool bias) {
    auto y = torch::matmul(x, weight(prefix + ".weight", {out, in}).t());
    return bias ? y + weight(prefix + ".bias", {out}) : y;
  }
  // weight * x / sqrt(mean(x^2) + eps)
  torch::Tensor rms_norm(const torch::Tensor& x, const std::string& name) {
    return weight(name, {s.hidden}) * x / torch::sqrt(x.pow(2).mean(-1, true) + s.rms_eps);
  }
  // t [B, heads, T, D]: the pairs (i, i + D/2) rotated by position x theta^(-2i/D).
  torch::Tensor rope(const torch::Tensor& t) const {
    const auto T = t.size(2), half = s.head_dim / 2;
    const auto i = torch::arange(half, torch::kDouble);
    const auto inv = torch::pow(s.rope_theta, -2.0 * i / static_cast<double>(s.head_dim));
    const auto angle = torch::outer(torch::arange(T, torch::kDouble), inv);  // [T, D/2]
    const auto c = torch::cos(angle), sn = torch::sin(angle);
    const auto a = t.narrow(-1, 0, half), b = t.narrow(-1, half, half);
    return torch::cat({a * c - b * sn, b * c + a * sn}, -1);
  }
  torch::Tensor layer(const torch::Tensor& x, std::int64_t l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    const auto B = x.size(0), T = x.size(1), H = s.heads, KV = s.kv_heads, D = s.head_dim;
    auto h = rms_norm(x, p + "input_layernorm.weight");
    auto heads = [&](const torch::Tensor& y, std::int64_t n) { return y.reshape({B, T, n, D}).permute({0, 2, 1, 3}); };
    auto q = rope(heads(linear(h, p + "self_attn.q_proj", s.hidden, H * D, s.qkv_bias), H));
    auto k = rope(heads(linear(h, p + "self_attn.k_proj", s.hidden, KV * D, s.qkv_bias), KV));
    auto v = heads(linear(h, p + "self_attn.v_proj", s.hidden, KV * D, s.qkv_bias), KV);
    // Query head j reads key / value head j / (H / KV).
    const auto kv_of = torch::div(torch::arange(H, torch::kLong), H / KV, "floor");
    k = k.index_select(1, kv_of);
    v = v.index_select(1, kv_of);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(D));
    const auto future = torch::ones({T, T}, torch::kBool).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
    const auto e = torch::exp(scores - std::get<0>(scores.max(-1, true)));
    const auto attn = torch::matmul(e / e.sum(-1, true), v).permute({0, 2, 1, 3}).reshape({B, T, H * D});
    auto r = x + linear(attn, p + "self_attn.o_proj", H * D, s.hidden, s.o_bias);
    h = rms_norm(r, p + "post_attention_layernorm.weight");
    const auto g = linear(h, p + "mlp.gate_proj", s.hidden, s.intermediate, s.mlp_bias);
    const auto u = linear(h, p + "mlp.up_proj", s.hidden, s.intermediate, s.mlp_bias);
    const auto m = g * torch::sigmoid(g) * u;  // SiLU(gate) x up
    return r + linear(m, p + "mlp.down_proj", s.intermediate, s.hidden, s.mlp_bias);
  }
};

// A figure that fails any bound and is still a number (a report refuses infinity): the largest double.
constexpr double kWorst = std::numeric_limits<double>::max();

// max |got - ref| / max |ref|; kWorst for a shape that differs or a value that is not finite.
double scaled_error(const TensorRef& got, const torch::Tensor& ref, std::string* why) {
  if (got.shape != ref.sizes().vec()) {
    *why = "of another shape";
    return kWorst;
  }
  const auto g = fp64_copy(got);
  if (!torch::isfinite(g).all().item<bool>()) {
    *why = "not finite";
    return kWorst;
  }
  const double scale = ref.abs().max().item<double>(), diff = (g - ref).abs().max().item<double>();
  if (scale == 0) return diff == 0 ? 0 : kWorst;
  return diff / scale;
}

}  // namespace

BlockStepComparison compare_block_step_fp64(const BlockSpec& spec, const std::vector<TensorRef>& weights,
                                            const TensorRef& input, const TensorRef& proj, double loss,
                                            const std::vector<TensorRef>& grads) {
  if (spec.heads <= 0 || spec.kv_heads <= 0 || spec.heads % spec.kv_heads || spec.head_dim % 2)
    throw std::invalid_argument("compare_block_step_fp64: a spec whose heads do not group or whose head_dim is odd");
  if (input.shape.size() != 3 || input.shape[2] != spec.hidden || proj.shape != input.shape)
    throw std::invalid_argument("compare_block_step_fp64: the input and proj must be [B, T, hidden]");
  torch::AutoGradMode grad_on(true);
  ReferenceLayers ref{spec, {}};
  for (const auto& t : weights) ref.w[t.name] = fp64_copy(t).requires_grad_(true);
  const auto x = fp64_copy(input).requires_grad_(true);
  auto y = x;
  for (std::int64_t l = 0; l < spec.layers; ++l) y = ref.layer(y, l);
  const auto p = fp64_copy(proj);
  const auto ref_loss = (y * p).sum();
  ref_loss.backward();

  BlockStepComparison out;
  out.reference_loss = ref_loss.item<double>();
  const double loss_scale = (y * p).abs().sum().item<double>();
  out.loss_error = std::isfinite(loss) ? std::abs(loss - out.reference_loss) / loss_scale : kWorst;
  std::map<std::string, const TensorRef*> got;
  for (const auto& g : grads) got[g.name] = &g;
  auto judge = [&](const std::string& name, const torch::Tensor& leaf) {
    if (!leaf.grad().defined()) return;  // a weight the reference's forward never read: the spec's layers end first
    std::string why;
    const auto it = got.find(name);
    double e = kWorst;
    if (it == got.end())
      why = "missing: the step left no gradient";
    else
      e = scaled_error(*it->second, leaf.grad(), &why);
    ++out.grads_compared;
    if (e > out.grad_error || out.worst_grad.empty()) {
      out.grad_error = e;
      out.worst_grad = name + (why.empty() ? "" : " (" + why + ")");
    }
  };
  for (const auto& [name, leaf] : ref.w) judge(name, leaf);
  judge("input", x);
  return out;
}

}  // namespace claimcheck::ref
