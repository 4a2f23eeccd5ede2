// The counting CPU allocator of LibTorch tensors (chapters 3 and 4): live and peak bytes, phases, a cap that
// raises PyTorch's out-of-memory error. Only kernels/train/*.cpp include <torch/torch.h>.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace claimcheck::train {
// ---- counting allocator ------------------------------------------------------------
// Installs (once) a CPU allocator that counts live and peak bytes of every LibTorch CPU tensor.
void install_counting_allocator();
std::int64_t live_bytes();
std::int64_t peak_bytes();
void reset_peak();
// Chapter 4's timeline: each allocation remembers the phase tag current when it was made; a cap > 0 makes a
// request that would cross it throw PyTorch's out-of-memory error (c10::OutOfMemoryError); 0 lifts it.
struct LiveAllocation {
  const void* ptr;
  std::int64_t bytes;
  int phase;
};
void set_allocation_phase(int phase);
int allocation_phase();
// counts_request = false (a planted fault): the cap holds the live bytes before a request, not after it, so the
// allocation that crosses it succeeds and the error comes one allocation later.
void set_allocation_cap(std::int64_t bytes, bool counts_request = true);
std::vector<LiveAllocation> live_allocations();
// The live allocations (and the request) at the moment the cap was last crossed.
std::vector<LiveAllocation> allocations_at_last_oom(std::int64_t* requested);

}  // namespace claimcheck::train
