#!/usr/bin/env bash
# Installs the Debian packages claimcheck needs (Debian 12), and only what is missing, and only as root: a user
# without root whose machine has them all goes on; one who lacks some gets one line naming them, and the way to
# build with packages and a PyTorch of their own (conda, pip). Groups beyond the README's commands:
# `sanitize` (clang, for ci/sanitize.sh), `lint` (clang-format and clang-tidy, for ci/lint.sh), `browser` (Chromium,
# for the report's browser test). LibTorch is not among them: it is the PyTorch 2.x that ci/setup-python.sh finds
# or installs (once per machine).
set -euo pipefail

packages=(
  cmake make g++ git pkg-config
  nlohmann-json3-dev libgtest-dev libbenchmark-dev
  libssl-dev libcli11-dev                # SHA-256 (OpenSSL EVP); the command line (CLI11)
  python3 python3-venv                   # the shared PyTorch environment is created from Debian's Python
  python3-jsonschema                     # tests/expected/check_schema.py: expected/schema.json against the expected files
  fortunes                               # English text for the chapter 3 corpus
  libcpuinfo-dev                         # the core's microarchitecture where the table does not name it
)
if [ "${1:-}" = lint ]; then
  packages+=(clang-format clang-tidy)   # ci/lint.sh
fi
if [ "${1:-}" = browser ]; then
  packages+=(chromium)                   # tests/cli/browser_report.py: report.html rendered and its DOM read back
fi
if [ "${1:-}" = sanitize ]; then
  packages+=(clang libclang-rt-14-dev)   # ci/sanitize.sh: ASan + UBSan and libFuzzer (the sanitize preset)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "claimcheck: missing Debian packages (installing them needs root: sudo apt-get install ${missing[*]}); without root, with your own compiler, CMake >= 3.23, nlohmann-json, GoogleTest, Google Benchmark, CLI11, OpenSSL and a python that imports torch >= 2.4: cmake --preset cpu -DCLAIMCHECK_PYTHON=\$(command -v python3) && cmake --build build -j && ctest --test-dir build" >&2
    exit 1
  fi
  echo "claimcheck: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

