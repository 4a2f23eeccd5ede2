#!/usr/bin/env bash
# The nightly GPU job (issue 10): build with CUDA (the project's kernels for sm_90a) against the host's pip torch
# (LibTorch 2.x, the torch that ci/setup-python.sh picks: the host's python3), only the targets the GPU run needs,
# in parallel; run the CUDA tests (host-side and on the device), every claim, and the GPU benchmarks; publish
# report-gpu/ (report.html, report.json, report.md, junit.xml, the benchmark JSON and its rows). Run from the
# repository root on a GPU host. Without a GPU, GPU checks and tests report "skip" with the reason; never pass.
# Budget: 8 minutes, build included, on a 16-core H200 host. CLAIMCHECK_NIGHTLY_BENCH=0 leaves the benchmarks out.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
stage() { echo "nightly-gpu: $1 ($(( $(date +%s) - start )) s)"; }
py=$(bash ci/setup-python.sh)
# Header-only packages the host may lack (nlohmann-json, CLI11, OpenSSL's headers), unpacked with
# `dpkg -x pkg.deb third_party/` where a host has none of its own.
extra=()
[ -d third_party/usr ] && extra+=("-DCMAKE_PREFIX_PATH=$PWD/third_party/usr" "-DOPENSSL_ROOT_DIR=$PWD/third_party/usr")
cmake --preset cuda -DCLAIMCHECK_PYTHON="$py" "${extra[@]}" >/dev/null
stage configured
# What the GPU run needs: the CLI (and its LibTorch checks module), the seeded-run driver of ch06.same_seed_identical,
# the CUDA tests, the GPU benchmark.
# Those this configuration has: without Google Benchmark (or with a pre-C++11-ABI LibTorch) there is no benchmark,
# without LibTorch no seeded-run driver; the report then says what did not run.
want=(claimcheck claimcheck_seeded_run claimcheck_cuda_tests claimcheck_cuda_selftest)
[ "${CLAIMCHECK_NIGHTLY_BENCH:-1}" != 0 ] && want+=(claimcheck_bench_gpu)
have=$(cmake --build build-cuda --target help)
targets=()
for t in "${want[@]}"; do
  if grep -qx "\.\.\. $t" <<<"$have"; then targets+=("$t"); else echo "nightly-gpu: no target $t in this configuration"; fi
done
cmake --build build-cuda -j"$(nproc)" --target "${targets[@]}"
stage built
# The previous night's report.json, kept outside the checkout (actions/checkout cleans the workspace; a
# self-hosted runner keeps its home). CLAIMCHECK_PREVIOUS_DIR moves it.
previous=${CLAIMCHECK_PREVIOUS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/report-gpu-previous}
status=0
mkdir -p report-gpu.new
ctest --test-dir build-cuda -L cuda --output-on-failure --no-tests=error || status=$?
stage "cuda tests (exit $status)"
rows=()
if [ -x build-cuda/claimcheck_bench_gpu ]; then
  # 9 repetitions: the rows' per-repetition samples are what compare's U test judges against last night's (fewer: inconclusive).
  build-cuda/claimcheck_bench_gpu --benchmark_repetitions=9 --benchmark_min_time=0.05 \
    --benchmark_out=report-gpu.new/bench_gpu.json --benchmark_out_format=json || status=$?
  python3 ci/bench_gpu_ratios.py report-gpu.new/bench_gpu.json report-gpu.new/bench_rows_gpu.json || status=$?
  [ -s report-gpu.new/bench_rows_gpu.json ] && rows=(--benchmarks report-gpu.new/bench_rows_gpu.json)
  stage benchmarks
fi
stamp=$(mktemp)
build-cuda/claimcheck run --report report-gpu "${rows[@]}" || status=$?
# The benchmark JSON beside the report it fed.
[ -d report-gpu ] && cp report-gpu.new/* report-gpu/ 2>/dev/null || true
rm -rf report-gpu.new
stage "claims (exit $status)"
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
stage "done (exit $status)"
exit $status
