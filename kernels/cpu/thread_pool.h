// The CPU kernels' threads (private to kernels/cpu): the GEMV and GEMM kernels (gemv/), the bf16 matmul and the
// attention kernels share one pool.
//
// Threads: a persistent pool whose workers spin briefly and then sleep; work is pulled in chunks (~256 KiB of
// weights) from an atomic counter, the calling thread working too and never waiting for a worker that has not
// started (a 2-core machine under load can take milliseconds to schedule one), only for workers inside the job.
// Results do not depend on the thread count (chunks are multiples of the 4-row block).
#pragma once
#include <cstddef>
#include <functional>

namespace claimcheck::kernels {

// Rows [0, N) in chunks of `chunk` rows, pulled from a shared counter by `threads` threads. Jobs run one at a time
// (a second caller waits for the first): fn must not start a job of its own, which would wait for itself.
void parallel_rows(int N, int chunk, int threads, const std::function<void(int, int)>& fn);
// fn(i) for i in [0, n), one item at a time pulled from a shared counter by `threads` threads (the caller one of
// them): work whose items differ in cost (a matmul's blocks, attention's causal tiles).
template <typename Fn>
void parallel_items(int n, int threads, Fn fn) {
  parallel_rows(n, 1, threads, [&](int i0, int i1) {
    for (int i = i0; i < i1; ++i) fn(i);
  });
}
// Chunk of rows: ~`bytes` of weights (256 KiB unless said), a multiple of 4 rows, at most N / (4 * threads) so every
// thread gets work.
int row_chunk(int N, std::size_t row_bytes, int threads, std::size_t bytes = 256u << 10);

}  // namespace claimcheck::kernels
