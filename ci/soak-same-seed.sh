#!/usr/bin/env bash
# Soak test of ch06.same_seed_identical (not a ctest: ~10 s a run): runs the claim N times (default 200) and counts
#  - the claim's verdicts (the recipe that holds: seed, deterministic algorithms, MKL_CBWR=COMPATIBLE), and
#  - how often the series' recipe alone (MKL_CBWR removed) gave two different runs, with the first divergent steps.
# usage: ci/soak-same-seed.sh [N] [BUILD_DIR]     (after `make build`; prints one line per 20 runs and a summary)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-200}
build=${2:-build}
[ -x "$build/claimcheck" ] || { echo "soak: $build/claimcheck not built (make build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A verdicts=()
alone_diverged=0
steps=""
for i in $(seq 1 "$n"); do
  rc=0
  "$build/claimcheck" run --claim ch06.same_seed_identical --report "$tmp/r" --quiet >/dev/null 2>&1 || rc=$?
  read -r status alone step < <(python3 - "$tmp/r/report.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["claims"][0]
a = c["details"].get("series_recipe_alone", {})
d = a.get("first_divergence") or {}
print(c["status"], a.get("identical", "?"), d.get("step", "-"))
PY
)
  verdicts[$status]=$(( ${verdicts[$status]:-0} + 1 ))
  if [ "$alone" = "0" ]; then alone_diverged=$((alone_diverged + 1)); steps="$steps $step"; fi
  if (( i % 20 == 0 )); then
    echo "soak: $i runs: $(for k in "${!verdicts[@]}"; do printf '%s %s ' "$k" "${verdicts[$k]}"; done)| series' recipe alone diverged in $alone_diverged"
  fi
done
echo "soak: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $n runs of ch06.same_seed_identical"
echo "soak: verdicts: $(for k in "${!verdicts[@]}"; do printf '%s %s ' "$k" "${verdicts[$k]}"; done)"
echo "soak: the series' recipe alone (no MKL_CBWR) gave two different runs in $alone_diverged of $n pairs${steps:+ (first divergent steps:$steps)}"
[ "${verdicts[pass]:-0}" -eq "$n" ]
