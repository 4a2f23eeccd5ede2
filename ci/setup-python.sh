#!/usr/bin/env bash
# Prints the Python interpreter claimcheck builds against (its torch is the LibTorch) and runs its drivers with:
# one that imports torch >= 2.4 and numpy. In this order:
#   1. $CLAIMCHECK_PYTHON, when set (it must qualify: nothing is installed into an interpreter you name);
#   2. `python3` on PATH, when it already imports torch >= 2.4 and numpy (the user's own PyTorch);
#   3. the shared environment $CLAIMCHECK_VENV (default: ${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/torch-2.15.0),
#      created once per machine with the pinned torch and numpy from PyPI (about 5.4 GB with its CUDA wheels)
#      and reused by every clone and CI run after that.
# $CLAIMCHECK_TORCH_PIN (with $CLAIMCHECK_NUMPY_PIN) asks for the shared environment of another torch, e.g. the oldest
# one supported: CLAIMCHECK_TORCH_PIN=2.4.1 CLAIMCHECK_NUMPY_PIN=1.26.4 gives .../claimcheck/torch-2.4.1 (created once
# per machine as in 3; ci/torch-oldest.sh). A pin skips 1 and 2: it names the environment wanted.
# On failure: one line on stderr naming the interpreter, what it has and how to point the build elsewhere; exit 2.
set -uo pipefail

DEFAULT_TORCH_PIN=2.15.0
TORCH_PIN=${CLAIMCHECK_TORCH_PIN:-$DEFAULT_TORCH_PIN}
NUMPY_PIN=${CLAIMCHECK_NUMPY_PIN:-2.4.6}
# transformers and peft for tests/cli/account_diff.py only (account's figures against what they build); optional:
# without them that test skips. Installed into the default shared environment only (not into one of another pin,
# whose torch they may not support, and never into an interpreter you name).
HF_PINS="transformers==5.24.0 peft==0.21.2"
[ "$TORCH_PIN" = "$DEFAULT_TORCH_PIN" ] || HF_PINS=""
MIN_TORCH=2.4
HOW="set CLAIMCHECK_PYTHON=/path/to/python (with torch >= ${MIN_TORCH} and numpy) or pass -DCMAKE_PREFIX_PATH=<torch.utils.cmake_prefix_path> to cmake"

die() { echo "claimcheck: $*" >&2; exit 2; }

# "OK <torch version>" when $1 imports torch >= MIN_TORCH and numpy; else a short reason.
probe() {
  "$1" - <<PY 2>/dev/null || echo "cannot run"
import sys
try:
    import torch
except Exception as e:
    print(f"Python {sys.version.split()[0]} without torch ({type(e).__name__})"); sys.exit(0)
v = torch.__version__.split("+")[0]
major, minor = (int(x) for x in v.split(".")[:2])
if (major, minor) < tuple(int(x) for x in "${MIN_TORCH}".split(".")):
    print(f"Python {sys.version.split()[0]} with torch {torch.__version__}, older than ${MIN_TORCH}"); sys.exit(0)
try:
    import numpy
except Exception:
    print(f"Python {sys.version.split()[0]} with torch {torch.__version__} but without numpy"); sys.exit(0)
print(f"OK {torch.__version__}")
PY
}

if [ -n "${CLAIMCHECK_TORCH_PIN:-}" ]; then
  :  # a pin names the shared environment wanted: neither $CLAIMCHECK_PYTHON nor python3 stands in for it
elif [ -n "${CLAIMCHECK_PYTHON:-}" ]; then
  what=$(probe "$CLAIMCHECK_PYTHON")
  case "$what" in OK*) echo "$CLAIMCHECK_PYTHON"; exit 0 ;; esac
  die "CLAIMCHECK_PYTHON=$CLAIMCHECK_PYTHON: $what; $HOW"
fi

if [ -z "${CLAIMCHECK_TORCH_PIN:-}" ] && command -v python3 >/dev/null 2>&1; then
  what=$(probe "$(command -v python3)")
  case "$what" in OK*) command -v python3; exit 0 ;; esac
fi

venv=${CLAIMCHECK_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/claimcheck/torch-${TORCH_PIN}}
stamp="$venv/.claimcheck-complete"
if [ ! -f "$stamp" ]; then
  mkdir -p "$(dirname "$venv")" || die "cannot create $(dirname "$venv"); $HOW"
  exec 9>"$venv.lock"
  flock 9  # another clone may be installing the same environment: wait for it
  if [ ! -f "$stamp" ]; then
    base=/usr/bin/python3
    [ -x "$base" ] || base=$(command -v python3 || true)
    [ -n "$base" ] || die "no python3 to create $venv from; $HOW"
    rm -rf "$venv"
    echo "claimcheck: creating $venv (torch==${TORCH_PIN}, numpy==${NUMPY_PIN}; once per machine, several GB with its CUDA wheels)" >&2
    "$base" -m venv "$venv" >/dev/null 2>&1 || die "$base -m venv $venv failed (Debian: apt-get install python3-venv); $HOW"
    log=$(mktemp)
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
         "torch==${TORCH_PIN}" "numpy==${NUMPY_PIN}" >"$log" 2>&1; then
      last=$(grep -v '^\s*$' "$log" | tail -n 1)
      rm -rf "$venv" "$log"
      die "pip could not install torch==${TORCH_PIN} into $venv (${last:-no output}); $HOW"
    fi
    rm -f "$log"
    what=$(probe "$venv/bin/python")
    case "$what" in OK*) ;; *) rm -rf "$venv"; die "$venv/bin/python: $what after installing; $HOW" ;; esac
    touch "$stamp"
  fi
fi
hf_stamp="$venv/.claimcheck-hf-$(echo "$HF_PINS" | tr ' =' '_-')"
if [ -n "$HF_PINS" ] && [ ! -f "$hf_stamp" ]; then
  exec 9>"$venv.lock"
  flock 9
  if [ ! -f "$hf_stamp" ]; then
    # shellcheck disable=SC2086
    if "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $HF_PINS >/dev/null 2>&1; then
      touch "$hf_stamp"
    else
      echo "claimcheck: could not install $HF_PINS into $venv (no network?): tests/cli/account_diff.py will skip" >&2
    fi
  fi
fi
what=$(probe "$venv/bin/python")
case "$what" in OK*) echo "$venv/bin/python"; exit 0 ;; esac
die "$venv/bin/python: $what (remove $venv to have it created again); $HOW"
