#!/usr/bin/env bash
# Appends a report to the published history and rebuilds the site (issue 36, point 3), on the gh-pages branch:
#   history/<machine>/<UTC time>-<commit>/   the report folder (report.json, report.html, report.md, junit.xml)
#   site/                                    `claimcheck site history --out site`: index.html (the matrix of each
#                                            machine's latest report), machines/*.html (the timelines), site.json
#   index.html, .nojekyll                    the branch's root sends a visitor to site/index.html
# The machine's folder is named from the report's records (`claimcheck site` groups by the records, not by folder).
# Several jobs may publish at once (the fleet's legs): a rejected push fetches the branch again, re-applies this
# report and rebuilds the site, up to five times.
#
#   bash ci/publish-history.sh REPORT_DIR [CLAIMCHECK]
#     CLAIMCHECK                the binary that builds the site (default build/claimcheck)
#     CLAIMCHECK_PAGES_REMOTE   the remote (default origin); CLAIMCHECK_PAGES_BRANCH the branch (default gh-pages)
#     CLAIMCHECK_PAGES_PUSH=0   build the commit in a worktree and stop before the push (a dry run)
set -euo pipefail
report=${1:?usage: ci/publish-history.sh REPORT_DIR [CLAIMCHECK]}
cc=$(realpath "${2:-build/claimcheck}")
remote=${CLAIMCHECK_PAGES_REMOTE:-origin}
branch=${CLAIMCHECK_PAGES_BRANCH:-gh-pages}
[ -f "$report/report.json" ] || { echo "ci/publish-history.sh: $report/report.json: field '(file)': missing" >&2; exit 2; }
report=$(realpath "$report")
cd "$(dirname "$0")/.."

# The run's folder: the machine (from its records) and the time and commit of the report.
folder=$(python3 - "$report/report.json" <<'EOF'
import json, re, sys
r = json.load(open(sys.argv[1], encoding="utf-8"))
rec = r.get("records") or {}
hw, sha = rec.get("hardware") or {}, ((rec.get("commit") or {}).get("sha") or "unknown")
name = str(hw.get("microarchitecture") or "").split("(")[0].strip() or str(hw.get("cpu_model") or "unknown-cpu")
gpu = hw.get("gpu")
if isinstance(gpu, dict):
    gpu = gpu.get("name")
if gpu:
    name += " " + str(gpu)
name += f" {hw.get('logical_cpus', '')}cpu"
slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60]
when = re.sub(r"[^0-9T]", "", str(r.get("generated_at") or ""))[:15] or "undated"
print(f"{slug}/{when}-{sha[:12]}")
EOF
)
wt=$(mktemp -d)
trap 'git worktree remove --force "$wt" >/dev/null 2>&1 || rm -rf "$wt"' EXIT

checkout() {  # the branch as the remote has it, or a new orphan branch
  rm -rf "$wt"
  git worktree prune
  if git fetch -q "$remote" "$branch" 2>/dev/null; then
    git worktree add -q --detach "$wt" FETCH_HEAD
  else
    git worktree add -q --detach "$wt" HEAD
    git -C "$wt" checkout -q --orphan "$branch.new"
    git -C "$wt" rm -rqf .
  fi
}
apply() {  # this report into history/, then the whole site again
  mkdir -p "$wt/history/$folder"
  cp -r "$report"/. "$wt/history/$folder/"
  "$cc" site "$wt/history" --out "$wt/site"
  printf '<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=site/index.html">\n<a href="site/index.html">claimcheck: which claims hold where</a>\n' >"$wt/index.html"
  touch "$wt/.nojekyll"
  git -C "$wt" add -A
  git -C "$wt" -c user.name="claimcheck" -c user.email="claimcheck@users.noreply.github.com" \
    commit -qm "history: $folder" --allow-empty
}
for attempt in 1 2 3 4 5; do
  checkout
  apply
  if [ "${CLAIMCHECK_PAGES_PUSH:-1}" = 0 ]; then
    trap - EXIT  # kept for a look: git worktree remove "$wt" when done
    echo "ci/publish-history.sh: history/$folder and the site built in $wt (not pushed: CLAIMCHECK_PAGES_PUSH=0)"
    exit 0
  fi
  if git -C "$wt" push -q "$remote" "HEAD:refs/heads/$branch"; then
    echo "ci/publish-history.sh: history/$folder published to $remote $branch"
    exit 0
  fi
  echo "ci/publish-history.sh: the push was rejected (attempt $attempt); fetching $branch again" >&2
  sleep $((attempt * 3))
done
echo "ci/publish-history.sh: $remote $branch: field '(push)': rejected five times" >&2
exit 1
