// Chapter 6 in LibTorch: a KV cache allocated for a config, its bytes counted by the allocator.
#include "claimcheck/train/perf.h"

#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <stdexcept>

#include <kineto/ActivityType.h>  // libkineto's activity kinds (shipped in LibTorch's include folder)
#include <torch/csrc/autograd/profiler_kineto.h>

#include <torch/cuda.h>

#include "decoder.h"

namespace claimcheck::train {
KvCacheMeasure allocate_kv_cache(const std::filesystem::path& config, int tokens, const std::string& fault) {
  if (tokens < 1) throw std::invalid_argument("allocate_kv_cache: tokens must be >= 1");
  const DecoderConfig c = read_decoder_config(config);
  install_counting_allocator();
  KvCacheMeasure m;
  m.tokens = tokens;
  m.layers = c.layers;
  m.kv_heads = fault == "kv_full_heads" ? c.heads : c.kv_heads;
  // (A planted fault takes the textbook hidden / heads for the head's width, which a config's head_dim may not be.)
  m.head_dim = fault == "kv_head_dim_from_hidden" ? c.hidden / c.heads : c.head_dim;
  const std::int64_t before = live_bytes();
  std::vector<torch::Tensor> cache;
  for (std::int64_t l = 0; l < c.layers; ++l)
    for (int kv = 0; kv < 2; ++kv) cache.push_back(torch::empty({1, m.kv_heads, tokens, m.head_dim}, torch::kBFloat16));
  m.bytes = live_bytes() - before;
  m.tensors = static_cast<std::int64_t>(cache.size());
  return m;
}

}  // namespace claimcheck::train
