#!/usr/bin/env bash
# Installs what claimcheck needs on Debian 12 (as root), and only what is missing.
# OpenBLAS matters: without libopenblas0-pthread Debian's LibTorch runs the reference BLAS
# (a 1024^2 fp32 matmul: 637 ms instead of 25 ms).
set -euo pipefail

packages=(
  cmake make g++ git pkg-config
  libtorch-dev libopenblas0-pthread      # LibTorch 1.13 (CPU) with an optimised BLAS
  nlohmann-json3-dev libgtest-dev libbenchmark-dev
  python3 python3-numpy                  # Python drivers (chapters 1-2)
  fortunes                               # English text for the chapter 3 corpus
)

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

# Which BLAS libblas.so.3 resolves to (recorded again at run time in the report's environment).
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) ;;
  *) echo "claimcheck: warning: libblas.so.3 is '$blas', not OpenBLAS: LibTorch matmuls will be slow" >&2 ;;
esac
