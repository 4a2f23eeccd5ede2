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
# The previous night's report.json, kept outside the checkout (actions/checkout cleans the workspace; a
# self-hosted runner keeps its home). CLAIMCHECK_PREVIOUS_DIR moves it.
previous=${CLAIMCHECK_PREVIOUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/report-gpu-previous}
status=0
ctest --test-dir build-cuda --output-on-failure --no-tests=error -j4 || status=$?
stamp=$(mktemp)
build-cuda/claimcheck run --report report-gpu || status=$?
echo "report: $PWD/report-gpu/report.html"
# What changed since the previous night, when this run wrote a report: report-gpu/compare.md and compare.json.
# A regression (exit 1) or an unreadable previous report (exit 2) fails the job when nothing else has; the exit
# status is otherwise the failing step's, as before. The new report then becomes the previous one, so a regression
# is reported on the night it appears (report.md keeps naming the claims that fail).
if [ -n "$(find report-gpu/report.json -newer "$stamp" 2>/dev/null)" ]; then
  if [ -f "$previous/report.json" ]; then
    rc=0
    build-cuda/claimcheck compare "$previous/report.json" report-gpu/report.json \
      --markdown report-gpu/compare.md --json report-gpu/compare.json || rc=$?
    echo "compare with the previous report (exit $rc): $PWD/report-gpu/compare.md"
    if [ "$status" -eq 0 ]; then status=$rc; fi
  fi
  mkdir -p "$previous" && cp report-gpu/report.json "$previous/report.json"
fi
rm -f "$stamp"
exit $status
