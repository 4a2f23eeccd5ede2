// Host-side arithmetic of the CUDA attention kernel (plan.h's attention part): launch shape, key tiles visited,
// FLOPs. Plain C++, no CUDA header: the CPU tests cover it where no GPU is. The tile sizes come from
// attention_tiles.h, the header the kernel (attention.cu) is instantiated from.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "attention_tiles.h"
#include "claimcheck/kernels/cuda/plan.h"

namespace claimcheck::kernels::cuda {
namespace {

namespace tiles = attn_tiles;

void validate(const AttnDims& d) {
  if (d.D != 64 && d.D != 128)
    throw std::invalid_argument("attention: head dimension " + std::to_string(d.D) + " unsupported (64 or 128)");
  if (d.T < 1) throw std::invalid_argument("attention: T = " + std::to_string(d.T) + " (must be >= 1)");
  if (d.B < 1 || d.H < 1)
    throw std::invalid_argument("attention: B = " + std::to_string(d.B) + ", H = " + std::to_string(d.H) +
                                " (each must be >= 1)");
  // grid_y = B * H: CUDA's limit for gridDim.y.
  if (static_cast<long long>(d.B) * d.H > 65535)
    throw std::invalid_argument("attention: B * H = " + std::to_string(static_cast<long long>(d.B) * d.H) +
                                " exceeds the grid's y limit 65535");
}

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

AttnLaunch attention_launch(const AttnDims& d) {
  validate(d);
  AttnLaunch L;
  L.block_m = tiles::kBlockM;
  L.block_n = tiles::kBlockN;
  L.threads = tiles::kThreads;
  L.smem_bytes = tiles::smem_bytes(d.D);
  L.grid_x = static_cast<int>(ceil_div(d.T, tiles::kBlockM));
  L.grid_y = d.B * d.H;
  return L;
}

// Summed over every query tile of every (batch, head): the (query tile, key tile) pairs the kernel loads and
// multiplies. Query tile i (rows i*block_m .. min((i+1)*block_m, T) - 1) visits key tiles 0 .. ceil(end/block_n)-1
// with a causal mask (end = its last row + 1: the tiles holding a key <= some row of it), all ceil(T/block_n)
// without one.
long long attention_tiles_visited(const AttnDims& d, bool causal) {
  validate(d);
  const long long grid_x = ceil_div(d.T, tiles::kBlockM);
  long long per_head = 0;
  for (long long i = 0; i < grid_x; ++i) {
    const long long end = causal ? std::min<long long>((i + 1) * tiles::kBlockM, d.T) : d.T;
    per_head += ceil_div(end, tiles::kBlockN);
  }
  return per_head * d.B * d.H;
}

// FlashAttention's count: 2 T^2 D for Q K^T and 2 T^2 D for P V per head; a causal mask halves it (the convention,
// not the exact count of unmasked products, which is T (T + 1) / 2 per head for each).
double attention_flops(const AttnDims& d, bool causal) {
  const double full = 4.0 * d.B * d.H * static_cast<double>(d.T) * d.T * d.D;
  return causal ? full / 2 : full;
}

}  // namespace claimcheck::kernels::cuda
