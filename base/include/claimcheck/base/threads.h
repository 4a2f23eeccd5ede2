// How many CPUs this process may run on (its affinity mask, which is what a container or taskset grants),
// for the kernels' thread pools, the library rows of benchmarks and the hardware record alike.
#pragma once

namespace claimcheck {
int usable_cpus();
}  // namespace claimcheck
