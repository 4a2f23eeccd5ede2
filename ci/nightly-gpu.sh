#!/usr/bin/env bash
# The nightly GPU job: build with CUDA against the host's pip torch (LibTorch 2.x), run every
# claim the GPU allows, publish report-gpu/. Run from the repository root on a GPU host.
# Without a GPU, GPU checks report "skip" with the reason; they never pass.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
# nlohmann_json: the Debian header package, carried to the host if it has none.
extra=()
[ -d third_party/nlohmann/usr/share/cmake/nlohmann_json ] &&
  extra+=("-Dnlohmann_json_DIR=$PWD/third_party/nlohmann/usr/share/cmake/nlohmann_json")
cmake --preset cuda -DCMAKE_PREFIX_PATH="$prefix" "${extra[@]}"
cmake --build build-cuda -j"$(nproc)"
status=0
ctest --test-dir build-cuda --output-on-failure --no-tests=error -j4 || status=$?
build-cuda/claimcheck run --report report-gpu || status=$?
echo "report: $PWD/report-gpu/report.html"
exit $status
