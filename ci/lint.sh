#!/usr/bin/env bash
# The whole tree held to the project's layout (.clang-format), and the files a change touches to its clang-tidy checks (.clang-tidy: the changed C++ sources of the harness, the answer key, base
# and the CPU kernels, against build/compile_commands.json), and its commits' subjects to 72 characters. The change:
# everything since $CLAIMCHECK_LINT_BASE (default: the parent commit), and what is not committed yet.
# usage: bash ci/lint.sh   (after a build in build/: make build)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${CLAIMCHECK_LINT_BASE:-HEAD~1}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "lint: no commit $base to compare with: nothing to lint"
  exit 0
fi
for tool in git-clang-format clang-tidy; do
  command -v "$tool" >/dev/null || { echo "lint: $tool is missing (Debian: bash ci/install-deps.sh lint)" >&2; exit 2; }
done
rc=0
# The whole tree's layout (it was put through clang-format once: .git-blame-ignore-revs), then the change's lines.
mapfile -t tracked < <(git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' '*.inc')
if ! clang-format --dry-run -Werror "${tracked[@]}" 2>/tmp/claimcheck-lint-format.$$; then
  grep -m 20 'error:' /tmp/claimcheck-lint-format.$$ >&2 || true
  echo "lint: files of the tree differ from .clang-format's layout (clang-format -i FILE fixes one)" >&2
  rc=1
fi
rm -f /tmp/claimcheck-lint-format.$$
if ! out=$(git clang-format --diff "$base" -- '*.cpp' '*.h' '*.cu' '*.cuh' '*.inc' 2>&1); then rc=1; fi
if [ -n "$out" ] && ! grep -q -e '^no modified files' -e '^clang-format did not modify' <<<"$out"; then
  echo "$out"
  echo "lint: the lines above differ from .clang-format's layout (git clang-format $base fixes them)" >&2
  rc=1
fi
db=build/compile_commands.json
mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- 'harness/src/*.cpp' 'reference/src/*.cpp' \
                     'base/src/*.cpp' 'kernels/cpu/*.cpp' ':!reference/src/torch/*' | sort -u)
if ((${#files[@]})); then
  if [ ! -f "$db" ]; then
    echo "lint: no $db (build first: make build)" >&2
    exit 2
  fi
  db_dir=$(mktemp -d)
  trap 'rm -rf "$db_dir"' EXIT
  python3 ci/compile_db_per_source.py build "$db_dir" >/dev/null  # unity builds list their unity files only
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    echo "lint: clang-tidy $f"
    clang-tidy -p "$db_dir" --quiet "$f" 2>/dev/null || rc=1
  done
fi
# Commit subjects: at most 72 characters (git log --oneline stays readable; the evidence goes in the body).
while IFS= read -r line; do
  subject=${line#* }
  if [ "${#subject}" -gt 72 ]; then
    echo "lint: commit ${line%% *}: its subject is ${#subject} characters (at most 72; the evidence goes in the body)" >&2
    rc=1
  fi
done < <(git log --format='%h %s' "$base..HEAD")
[ $rc -eq 0 ] && echo "lint: the tree holds to .clang-format, the change to .clang-tidy, its commit subjects to 72 characters"
exit $rc
