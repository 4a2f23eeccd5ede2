#!/usr/bin/env bash
# CI stage (proposed for .ci/run): the oldest PyTorch the README supports. The shared environment of torch 2.4.1
# (created once per machine by ci/setup-python.sh, like the pinned one; numpy 1.x, so NumPy 1 is covered too), a
# build against it in build-torch24 (only the CLI, its LibTorch module and the seeded-run program that
# ch06.same_seed_identical starts; no CUDA: the project's .cu files include no LibTorch header, and the cuda preset
# compiles them against the pinned torch), then the analytic and LibTorch
# claims, every part of each (the LibTorch measured parts of analytic claims, and ch04.fsdp_per_gpu's FSDP2 driver,
# which says which torch it needs where it cannot run). Exit status: 0 when no claim failed, errored or passed
# unexpectedly; 1 otherwise (the claim lines above it say which); 2 when the set-up or the build stopped.
#
#   bash ci/torch-oldest.sh     # CLAIMCHECK_OLDEST_TORCH / _NUMPY / _BUILD change the torch, numpy and build dir
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
torch=${CLAIMCHECK_OLDEST_TORCH:-2.4.1}
numpy=${CLAIMCHECK_OLDEST_NUMPY:-1.26.4}
build=${CLAIMCHECK_OLDEST_BUILD:-build-torch24}
t0=$(date +%s)
stage() { echo "ci: torch ${torch}: $1 at $(( $(date +%s) - t0 )) s"; }

py=$(CLAIMCHECK_TORCH_PIN="$torch" CLAIMCHECK_NUMPY_PIN="$numpy" bash ci/setup-python.sh) || exit 2
stage "Python $py"
mkdir -p "$build"
cmake --preset cpu -B "$build" -DCLAIMCHECK_PYTHON="$py" -DCLAIMCHECK_WITH_CUDA=OFF >"$build/configure.log" 2>&1 || {
  tail -n 20 "$build/configure.log"; echo "ci: torch ${torch}: configuring $build failed" >&2; exit 2; }
grep -m1 "claimcheck: LibTorch" "$build/configure.log" || true
cmake --build "$build" -j"$(nproc)" --target claimcheck claimcheck_seeded_run || { echo "ci: torch ${torch}: building $build failed" >&2; exit 2; }
stage "built"

# The analytic claims and those that require LibTorch, by id: a --label naming a kind would leave the claims' other
# parts out (an analytic claim's measured part is LibTorch work: the allocator's ledger, FSDP2).
mapfile -t ids < <("$build/claimcheck" list --json | "$py" -c '
import json, sys
for c in json.load(sys.stdin):
    if "analytic" in c["kind"] or "libtorch" in c["requires"]:
        print(c["id"])')
[ "${#ids[@]}" -gt 0 ] || { echo "ci: torch ${torch}: no analytic or LibTorch claim listed" >&2; exit 2; }
args=()
for id in "${ids[@]}"; do args+=(--claim "$id"); done
"$build/claimcheck" run "${args[@]}" --report "$build/report"
rc=$?
stage "${#ids[@]} claims run (exit $rc)"
# What did not run here, and why: a skip (ch03.item_sync's, for want of a GPU) or a pending part (ch04.fsdp_per_gpu's
# FSDP2 on CPU processes, which needs torch 2.7), so that a skip hiding a break is seen.
[ -f "$build/report/report.json" ] && "$py" - "$build/report/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["claims"]:
    if c["status"] == "skip":
        print(f"ci: skipped {c['id']}: {c['reason']}")
    for p in c.get("details", {}).get("pending", []):
        print(f"ci: pending in {c['id']}: {p}")
PY
# 77: everything skipped, i.e. no LibTorch in a build made for it; 2: a check error; 1: a failure or an xpass.
[ "$rc" -eq 0 ] || exit 1
