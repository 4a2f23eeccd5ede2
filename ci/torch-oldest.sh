#!/usr/bin/env bash
# CI stage (proposed for .ci/run): the oldest PyTorch the README supports. The shared environment of torch 2.4.1
# (created once per machine by ci/setup-python.sh, like the pinned one; numpy 1.x, so NumPy 1 is covered too), a
# build against it in build-torch24 (only the CLI, its LibTorch module and the seeded-run program that
# ch06.same_seed_identical starts; no CUDA: the project's .cu files include no LibTorch header, and the cuda preset
# compiles them against the pinned torch), then the analytic and LibTorch
# claims, every part of each (the LibTorch measured parts of analytic claims, and ch04.fsdp_per_gpu's FSDP2 driver,
# which says which torch it needs where it cannot run). Exit status: 0 when no claim errored or passed unexpectedly
# and none failed except a setup-specific one; 1 otherwise (the claim lines above it say which); 2 when the set-up or
# the build stopped. A setup-specific claim (its expected file says so: ch06.mfu, the seed variance, ...) measures
# this stack, and an older torch's BLAS is a different stack: its failure is printed as this torch's verdict, with
# its figure, and does not stop CI (2.4.1's fp32 training step ran 5-10 % slower than 2.15's on the same Zen 3, MFU
# 34.7-42.9 % against 40.9-48.6 %); every other failure does. Under the pinned torch each claim's own ctest judges
# it.
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
# FSDP2 on CPU processes, which needs torch 2.7), so that a skip hiding a break is seen; then the gate.
[ -f "$build/report/report.json" ] || { echo "ci: torch ${torch}: no report.json (claimcheck exit $rc)" >&2; exit 1; }
"$py" - "$build/report/report.json" "$torch" "$rc" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
torch, rc = sys.argv[2], int(sys.argv[3])
stop = []
for c in r["claims"]:
    if c["status"] == "skip":
        print(f"ci: skipped {c['id']}: {c['reason']}")
    for p in c.get("details", {}).get("pending", []):
        print(f"ci: pending in {c['id']}: {p}")
    if c["status"] == "fail" and c.get("setup_specific"):
        print(f"ci: torch {torch}: setup-specific, this stack's verdict (not a stop): {c['id']} fail: {c['reason'][:300]}")
    elif c["status"] in ("fail", "xpass", "error"):
        stop.append(f"{c['id']} {c['status']}")
if stop:
    print(f"ci: torch {torch}: stops CI: {', '.join(stop)}")
# claimcheck's exit 2 (bad input, a check error) or 77 (everything skipped: no LibTorch in a build made for it) stops
# CI whatever the claims say.
sys.exit(1 if stop or rc not in (0, 1) else 0)
PY
