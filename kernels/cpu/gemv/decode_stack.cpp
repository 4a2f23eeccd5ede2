// The decode stack of claimcheck/kernels/gemv.h: its deterministic bf16 weights (decode_weights_bf16, a hash of
// each element's index, any thread count giving the same matrix) and DecodeStack, a Llama-shaped stack of GEMVs
// whose step is what decode time is measured on.
#include "claimcheck/kernels/gemv.h"

#include "claimcheck/base/random.h"
#include "claimcheck/base/threads.h"

#include "../simd.h"
#include "../thread_pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace claimcheck::kernels {

namespace {

// ---- DecodeStack weights -------------------------------------------------------------------------------------
using base::splitmix64;  // the same stream as the CUDA stack's (kernels/cuda/decode.cu): the same weights
// A 32-bit integer hash: 32-bit multiplies, so the fill loop vectorises.
CC_INLINE std::uint32_t hash32(std::uint32_t x) { return base::lowbias32(x); }
// Elements 2p and 2p+1: uniform in [-a, a) from the low and high 16 bits of hash32(p * golden + salt), rounded
// to bf16 (nearest even). A function of the index alone, so any split over threads gives the same matrix.
CC_CLONES void fill_uniform_bf16(bf16_t* out, std::size_t i0, std::size_t i1, std::uint32_t salt, float a) {
  const float scale = a / 32768.0f;
  auto one = [&](std::uint32_t h16) {
    const float f = static_cast<float>(static_cast<int>(h16) - 32768) * scale;
    std::uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return static_cast<bf16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
  };
  // i0 is even (callers split on multiples of 2).
  const std::size_t p1 = i1 / 2;
  for (std::size_t p = i0 / 2; p < p1; ++p) {
    const std::uint32_t h = hash32(static_cast<std::uint32_t>(p) * 0x9e3779b9u + salt);
    out[2 * p] = one(h & 0xffffu);
    out[2 * p + 1] = one(h >> 16);
  }
  if (i1 % 2) out[i1 - 1] = one(hash32(static_cast<std::uint32_t>(p1) * 0x9e3779b9u + salt) & 0xffffu);
}

}  // namespace

// ---- DecodeStack ----------------------------------------------------------------------------------------------
namespace {
struct MatShape {
  int N, K;
};
std::vector<MatShape> layer_shapes(const DecodeShape& s) {
  return {{s.hidden, s.hidden}, {s.kv_dim, s.hidden}, {s.kv_dim, s.hidden}, {s.hidden, s.hidden},
          {s.ffn, s.hidden},    {s.ffn, s.hidden},    {s.hidden, s.ffn}};
}
int effective_head_dim(const DecodeShape& s) { return std::min(s.head_dim, s.kv_dim); }
}  // namespace

std::vector<bf16_t> decode_weights_bf16(int N, int K, std::uint64_t seed, int threads, const GemvFaults& faults) {
  std::vector<bf16_t> w(static_cast<std::size_t>(N) * K);
  const float k = static_cast<float>(std::max(K, 1));
  const float a = 1.0f / (faults.weights_over_k ? k : std::sqrt(k));  // (a planted fault: 1/K)
  const std::size_t n = w.size();
  const std::size_t chunk = 1 << 20;  // even: chunks start on a generator word
  const auto salt = static_cast<std::uint32_t>(splitmix64(seed));
  const int chunks = static_cast<int>((n + chunk - 1) / chunk);
  parallel_rows(chunks, 1, threads, [&](int c0, int c1) {
    for (int c = c0; c < c1; ++c) fill_uniform_bf16(w.data(), c * chunk, std::min(n, (c + 1) * chunk), salt, a);
  });
  return w;
}

DecodeStack::DecodeStack(const DecodeShape& s, const std::string& format, std::uint64_t seed, const GemvFaults& faults)
    : s_(s), format_(format), faults_(faults) {
  if (format != "bf16" && format != "nf4") throw std::invalid_argument("DecodeStack: format must be bf16 or nf4");
  const int hd = effective_head_dim(s);
  if (s.hidden < 1 || s.kv_dim < 1 || s.ffn < 1 || s.layers < 1 || hd < 1 || s.kv_dim % hd != 0 ||
      s.hidden % s.kv_dim != 0)
    throw std::invalid_argument("DecodeStack: bad shape (kv_dim must divide hidden, head_dim kv_dim)");
  if (format == "nf4" && (s.hidden % 64 != 0 || s.ffn % 64 != 0))
    throw std::invalid_argument("DecodeStack: nf4 needs hidden and ffn multiples of 64");
  const int threads = usable_cpus();
  const auto shapes = layer_shapes(s);
  for (int l = 0; l < s.layers; ++l)
    for (int m = 0; m < 7; ++m) {
      const std::uint64_t mseed = splitmix64(seed * 1000003ull + static_cast<std::uint64_t>(l * 7 + m));
      std::vector<bf16_t> w = decode_weights_bf16(shapes[m].N, shapes[m].K, mseed, threads, faults);
      if (format == "bf16")
        bf16_.push_back(std::move(w));
      else
        nf4_.push_back(quantize_nf4(w.data(), shapes[m].N, shapes[m].K, threads));
      if (faults_.nf4_nibbles_swapped && format == "nf4")  // a planted fault: the format's nibble order reversed
        for (std::uint8_t& b : nf4_.back().packed) b = static_cast<std::uint8_t>((b >> 4) | (b << 4));
    }
}

std::size_t DecodeStack::weight_bytes() const {
  std::size_t b = 0;
  // A planted fault counts elements for bytes.
  for (const auto& w : bf16_) b += w.size() * (faults_.bytes_as_elements ? 1 : sizeof(bf16_t));
  for (const auto& m : nf4_) b += faults_.nf4_scales_uncounted ? m.packed.size() : m.bytes();  // (a planted fault)
  return b;
}

double DecodeStack::flops() const {
  double f = 0;
  for (const auto& m : layer_shapes(s_)) f += (faults_.flops_fma_as_one ? 1.0 : 2.0) * m.N * m.K;  // (a planted fault)
  return f * s_.layers;
}

std::vector<const bf16_t*> DecodeStack::bf16_weights(int layer) const {
  std::vector<const bf16_t*> out;
  if (bf16_.empty() || layer < 0 || layer >= s_.layers) return out;
  for (int m = 0; m < 7; ++m) out.push_back(bf16_[static_cast<std::size_t>(layer) * 7 + m].data());
  return out;
}

const Nf4Matrix* DecodeStack::nf4_weight(int layer, int m) const {
  if (nf4_.empty() || layer < 0 || layer >= s_.layers || m < 0 || m >= 7) return nullptr;
  return &nf4_[static_cast<std::size_t>(layer) * 7 + m];
}

void DecodeStack::step(const float* x, float* out, const GemvOptions& o, float* layer_inputs, float* layer_qk) const {
  const int H = s_.hidden, KV = s_.kv_dim, F = s_.ffn, hd = effective_head_dim(s_);
  const int group = H / KV;  // query heads per kv head
  std::vector<float> h(x, x + H), q(H), k(KV), v(KV), a(H), t(H), g(F), u(F);
  if (faults_.stack_input_bf16)  // a planted fault: the step starts from x rounded to bf16
    for (float& e : h) e = from_bf16(to_bf16(e));
  const auto shapes = layer_shapes(s_);
  auto mv = [&](int l, int m, const float* in, float* o_) {
    const std::size_t i = static_cast<std::size_t>(l) * 7 + m;
    if (format_ == "bf16")
      gemv_bf16(bf16_[i].data(), shapes[m].N, shapes[m].K, in, o_, o);
    else
      gemv_nf4(nf4_[i], in, o_, o);
  };
  for (int l = 0; l < s_.layers; ++l) {
    if (layer_inputs) std::memcpy(layer_inputs + static_cast<std::size_t>(l) * H, h.data(), H * sizeof(float));
    if (!faults_.stack_q_skipped)  // (a planted fault: q's GEMV skipped, q left as the layer's input)
      mv(l, 0, h.data(), q.data());
    else
      std::copy(h.begin(), h.end(), q.begin());
    mv(l, 1, h.data(), k.data());
    mv(l, 2, h.data(), v.data());
    if (layer_qk) {
      float* qk = layer_qk + static_cast<std::size_t>(l) * (H + KV);
      std::memcpy(qk, q.data(), H * sizeof(float));
      std::memcpy(qk + H, k.data(), KV * sizeof(float));
    }
    // One token of context: softmax over one score is 1, each query head's output is its kv head's v.
    for (int qh = 0; qh < H / hd; ++qh) {
      const int kvh = qh / group;
      std::memcpy(&a[static_cast<std::size_t>(qh) * hd], &v[static_cast<std::size_t>(kvh) * hd], hd * sizeof(float));
    }
    mv(l, 3, a.data(), t.data());
    if (!faults_.stack_no_residual)  // a planted fault: the attention output replaces the residual stream
      for (int i = 0; i < H; ++i) h[i] += t[i];
    else
      std::memcpy(h.data(), t.data(), H * sizeof(float));
    mv(l, 4, h.data(), g.data());
    mv(l, 5, h.data(), u.data());
    for (int i = 0; i < F; ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
    mv(l, 6, g.data(), t.data());
    for (int i = 0; i < H; ++i) h[i] += t[i];
  }
  std::memcpy(out, h.data(), H * sizeof(float));
}

}  // namespace claimcheck::kernels
