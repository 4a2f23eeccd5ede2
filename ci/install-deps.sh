#!/usr/bin/env bash
# Installs the Debian packages claimcheck needs (Debian 12, as root), and only what is missing: a user without root
# whose machine has them all goes on. `bash ci/install-deps.sh sanitize` adds clang for ci/sanitize.sh, `lint` adds
# clang-format and clang-tidy for ci/lint.sh (the README's commands need neither). LibTorch is not among them: it is the PyTorch 2.x that ci/setup-python.sh finds or
# installs (once per machine).
set -euo pipefail

packages=(
  cmake make g++ git pkg-config
  nlohmann-json3-dev libgtest-dev libbenchmark-dev
  libssl-dev libcli11-dev                # SHA-256 (OpenSSL EVP); the command line (CLI11)
  python3 python3-venv                   # the shared PyTorch environment is created from Debian's Python
  python3-jsonschema                     # tests/check_schema.py: expected/schema.json against the expected files
  fortunes                               # English text for the chapter 3 corpus
  libcpuinfo-dev                         # the core's microarchitecture where the table does not name it
)
if [ "${1:-}" = lint ]; then
  packages+=(clang-format clang-tidy)   # ci/lint.sh
fi
if [ "${1:-}" = sanitize ]; then
  packages+=(clang libclang-rt-14-dev)   # ci/sanitize.sh: ASan + UBSan and libFuzzer (the sanitize preset)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "claimcheck: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "claimcheck: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

