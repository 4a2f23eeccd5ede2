#!/usr/bin/env bash
# The nightly GPU job: build with CUDA (the project's kernels for sm_90a) against the host's pip torch (LibTorch
# 2.x, the torch that ci/setup-python.sh picks: the host's python3), run every claim the GPU allows, publish
# report-gpu/. Run from the repository root on a GPU host.
# Without a GPU, GPU checks report "skip" with the reason; they never pass.
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(bash ci/setup-python.sh)
# Header-only packages the host may lack (nlohmann-json, CLI11, OpenSSL's headers), unpacked with
# `dpkg -x pkg.deb third_party/` where a host has none of its own.
extra=()
[ -d third_party/usr ] && extra+=("-DCMAKE_PREFIX_PATH=$PWD/third_party/usr" "-DOPENSSL_ROOT_DIR=$PWD/third_party/usr")
cmake --preset cuda -DCLAIMCHECK_PYTHON="$py" "${extra[@]}"
cmake --build build-cuda -j"$(nproc)"
status=0
ctest --test-dir build-cuda --output-on-failure --no-tests=error -j4 || status=$?
build-cuda/claimcheck run --report report-gpu || status=$?
echo "report: $PWD/report-gpu/report.html"
exit $status
