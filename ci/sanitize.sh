#!/usr/bin/env bash
# ASan + UBSan, and the loaders fuzzed. The sanitize preset (clang, no LibTorch, no CUDA: build-sanitize/) builds the
# CLI, the unit tests and one libFuzzer target per loader (fuzz/: model config, expected file, quantisation format,
# hardware spec, command line); this runs the GoogleTest unit tests and `claimcheck run --label analytic` under
# the sanitizers, then each fuzzer for a fixed budget ($CLAIMCHECK_FUZZ_SECONDS, default 10 s each: 50 s in all)
# from its seeds (the repository's own files, fuzz/corpus/<target>/ for the command line and the inputs of past
# findings). Any sanitizer report, crash, hang (10 s on one input), leak, or finding (fuzz/fuzz_check.h: an exit 0
# with a negative or non-finite size, an untyped exception) fails the script; a finding's input is printed and kept
# under build-sanitize/fuzz/findings/. Reproduce: build-sanitize/fuzz/<target> <file>.
set -euo pipefail
bash "$(dirname "$0")/install-deps.sh" sanitize  # clang and its runtime, where missing
cd "$(dirname "$0")/.."
build=$PWD/build-sanitize  # absolute: fuzz_cli works in a scratch folder of its own
jobs=${CLAIMCHECK_SANITIZE_JOBS:-$(nproc)}
seconds=${CLAIMCHECK_FUZZ_SECONDS:-10}
asan=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1
export ASAN_OPTIONS=${ASAN_OPTIONS:-$asan}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CLAIMCHECK_ROOT=$PWD
unset CLAIMCHECK_FAULT
start=$SECONDS

cmake --preset sanitize >/dev/null
cmake --build "$build" -j"$jobs" --target claimcheck claimcheck_unit_tests claimcheck_gemv_tests claimcheck_fuzzers
echo "claimcheck sanitize: built in $((SECONDS - start)) s"

# The GoogleTest unit tests (harness, ledger, tolerances, reports, the CPU kernels against fp64); the Python CLI
# tests (label cli) run the Release build in `make test`, and the claims other than analytic ones time things.
ctest --test-dir "$build" -L '^unit$' -LE '^(cli|cuda|gpu)$' -E '^test_' --output-on-failure --no-tests=error -j"$jobs"
"$build"/claimcheck run --label analytic --quiet
echo "claimcheck sanitize: unit tests and analytic claims clean at $((SECONDS - start)) s"

status=0
mkdir -p "$build"/fuzz/findings "$build"/fuzz/tmp
while read -r name seeds; do
  [ -n "$name" ] || continue
  corpus="$build/fuzz/corpus/$name"  # what the fuzzer adds; the seed folders are only read
  mkdir -p "$corpus"
  log="$build/fuzz/$name.log"
  # The seed folders are separate arguments; fuzz_cli's scratch folder goes to $TMPDIR.
  # shellcheck disable=SC2086
  if TMPDIR="$build/fuzz/tmp" "$build/fuzz/$name" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -dict="$PWD/fuzz/claimcheck.dict" -artifact_prefix="$build/fuzz/findings/$name-" \
      "$corpus" $seeds >"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    echo "claimcheck fuzz: $name: ${execs:-?} inputs in $seconds s (${rate:-?}/s), no finding;" \
         "corpus $(find "$corpus" -type f | wc -l) + seeds"
  else
    status=1
    echo "claimcheck fuzz: $name: FINDING (log $log)" >&2
    grep -aE 'FINDING|runtime error|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|SUMMARY' "$log" | head -5 >&2 || true
    for f in $(sed -n "s/.*Test unit written to //p" "$log" | tr -d '\r'); do
      echo "  input $f (reproduce: $build/fuzz/$name $f):" >&2
      head -c 2000 "$f" | od -An -c | head -20 >&2
    done
  fi
done <"$build/fuzz/seeds.txt"
echo "claimcheck sanitize: done in $((SECONDS - start)) s"
exit "$status"
