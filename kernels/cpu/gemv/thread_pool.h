// The decode kernels' threads (kernels/cpu/gemv/, private to kernels/).
//
// Threads: a persistent pool whose workers spin briefly and then sleep; work is pulled in chunks (~256 KiB of
// weights) from an atomic counter, the calling thread working too and never waiting for a worker that has not
// started (a 2-core machine under load can take milliseconds to schedule one), only for workers inside the job.
// Results do not depend on the thread count (chunks are multiples of the 4-row block).
#pragma once
#include <cstddef>
#include <functional>

namespace claimcheck::kernels::gemv_detail {

// Rows [0, N) in chunks of `chunk` rows, pulled from a shared counter by `threads` threads.
void parallel_rows(int N, int chunk, int threads, const std::function<void(int, int)>& fn);
// Chunk of rows: ~`bytes` of weights (256 KiB unless said), a multiple of 4 rows, at most N / (4 * threads) so every
// thread gets work.
int row_chunk(int N, std::size_t row_bytes, int threads, std::size_t bytes = 256u << 10);

}  // namespace claimcheck::kernels::gemv_detail
