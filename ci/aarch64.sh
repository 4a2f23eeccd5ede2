#!/usr/bin/env bash
# AArch64 (issue 23, point 10): the harness, the analytic claims and the kernel unit tests cross-compiled on this
# x86-64 Debian 12 machine (g++-aarch64-linux-gnu, no LibTorch, no CUDA: the aarch64 preset) and run under qemu-user.
#
# Installs what is missing, once per machine: Debian's cross compiler, qemu-user and debootstrap; and an arm64 Debian
# tree, $CLAIMCHECK_AARCH64_SYSROOT (default /opt/sysroot-arm64, outside the repository), holding the target's
# libraries and the project's dependencies (debootstrap's first stage of a minimal bookworm, from the mirror this
# machine's apt uses, with the -dev packages below unpacked into it: no chroot, no binfmt). Then configures the
# aarch64 preset (build-aarch64/), builds the CLI and the two GoogleTest programs, and runs, under qemu-aarch64:
# `claimcheck list`, `claimcheck run --label analytic` (exit 0: no claim failed, errored or passed unexpectedly),
# the unit tests and the CPU kernel tests through ctest (the NEON GEMV path included: tests/kernels/test_gemv.cpp forces
# every path the CPU runs), and the measured claims, which skip (or leave their measured part pending) with the
# reason that the CPU is emulated (the hardware record's "emulated"). Prints the time of each stage.
#
#   bash ci/aarch64.sh     # CLAIMCHECK_AARCH64_SYSROOT moves the arm64 tree; CLAIMCHECK_AARCH64_JOBS the build's -j
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=${CLAIMCHECK_AARCH64_SYSROOT:-/opt/sysroot-arm64}
jobs=${CLAIMCHECK_AARCH64_JOBS:-$(nproc)}
build="build-aarch64"
t0=$SECONDS
last=$SECONDS
stage() {
  echo "ci aarch64: $1: $((SECONDS - last)) s (total $((SECONDS - t0)) s)"
  last=$SECONDS
}

# ---- the host's packages -----------------------------------------------------------------------------------------
packages=(g++-aarch64-linux-gnu qemu-user debootstrap cmake make)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ci aarch64: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
    exit 2
  fi
  echo "ci aarch64: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
stage "host packages"

# ---- the arm64 tree ----------------------------------------------------------------------------------------------
# What the target links or includes: OpenSSL's libcrypto (base/src/sha256.cpp), GoogleTest, nlohmann-json, CLI11.
# debootstrap's minbase brings the dynamic loader, libc, libstdc++ and libgcc that qemu-aarch64 -L loads them with.
target_packages=libssl-dev,libgtest-dev,nlohmann-json3-dev,libcli11-dev
# shellcheck source=/dev/null
suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
marker="$sysroot/.claimcheck-sysroot"
want="$suite arm64 minbase $target_packages"
if [ ! -f "$marker" ] || [ "$(cat "$marker")" != "$want" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "ci aarch64: creating the arm64 tree $sysroot needs root (or set CLAIMCHECK_AARCH64_SYSROOT)" >&2
    exit 2
  fi
  # The mirror this machine's apt uses for $suite (deb822 or one-line sources); debootstrap's own default otherwise.
  mirror=""
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    mirror=$(awk -v s="$suite" '/^URIs:/ {u = $2} /^Suites:/ {for (i = 2; i <= NF; i++) if ($i == s) {print u; exit}}' \
             /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$mirror" ] && [ -r /etc/apt/sources.list ]; then
    mirror=$(awk -v s="$suite" '$1 == "deb" && $3 == s {print $2; exit}' /etc/apt/sources.list)
  fi
  tmp="$sysroot.partial"
  rm -rf "$tmp"
  echo "ci aarch64: creating the arm64 tree $sysroot ($suite, from ${mirror:-the default mirror of debootstrap})"
  # --foreign: the first stage only (download and unpack), which needs no arm64 program to run.
  # shellcheck disable=SC2086
  debootstrap --foreign --arch=arm64 --variant=minbase --include="$target_packages" "$suite" "$tmp" $mirror \
    >"$tmp.log" 2>&1 || { tail -n 20 "$tmp.log" >&2; echo "ci aarch64: debootstrap failed (log $tmp.log)" >&2; exit 2; }
  # The first stage unpacks the required packages; the --include ones (and what they pull in) are only downloaded,
  # listed in debootstrap/base: unpack them too (their files only, no maintainer scripts).
  # shellcheck disable=SC2013  # (one line of names)
  for p in $(cat "$tmp/debootstrap/base"); do
    deb=$(awk -v p="$p" '$1 == p {print $2}' "$tmp/debootstrap/debpaths")
    dpkg-deb --fsys-tarfile "$tmp$deb" | tar -x --keep-directory-symlink -C "$tmp"
  done
  rm -f "$tmp"/var/cache/apt/archives/*.deb
  for f in usr/lib/aarch64-linux-gnu/libcrypto.so usr/lib/aarch64-linux-gnu/libgtest.a usr/lib/ld-linux-aarch64.so.1 \
           usr/lib/aarch64-linux-gnu/libstdc++.so.6 usr/include/nlohmann/json.hpp usr/include/CLI/CLI.hpp; do
    [ -e "$tmp/$f" ] || { echo "ci aarch64: the arm64 tree lacks $f" >&2; exit 2; }
  done
  echo "$want" >"$tmp/.claimcheck-sysroot"
  rm -rf "$sysroot" "$tmp.log"
  mv "$tmp" "$sysroot"
fi
stage "arm64 tree $sysroot"

# ---- configure and build -------------------------------------------------------------------------------------
cmake --preset aarch64 -DCLAIMCHECK_AARCH64_SYSROOT="$sysroot" \
      -DCMAKE_CROSSCOMPILING_EMULATOR="qemu-aarch64;-L;$sysroot" >"$build.configure.log" 2>&1 ||
  { tail -n 20 "$build.configure.log" >&2; echo "ci aarch64: configuring failed" >&2; exit 2; }
rm -f "$build.configure.log"
stage "configured"
cmake --build "$build" -j"$jobs" --target claimcheck claimcheck_unit_tests claimcheck_gemv_tests
stage "built (claimcheck, claimcheck_unit_tests, claimcheck_gemv_tests)"

# ---- run under qemu-user -------------------------------------------------------------------------------------
q=(qemu-aarch64 -L "$sysroot")
# (ELF e_machine, bytes 18-19: 0xb7 is EM_AARCH64)
[ "$(od -An -tx1 -j18 -N2 "$build/claimcheck" | tr -d ' ')" = b700 ] ||
  { echo "ci aarch64: $build/claimcheck is not an AArch64 program" >&2; exit 1; }
claims=$("${q[@]}" "$build/claimcheck" list | wc -l)
echo "ci aarch64: claimcheck list: $claims claims"
stage "claimcheck list"

"${q[@]}" "$build/claimcheck" run --label analytic --quiet --report "$build/report-analytic"
grep -q '"emulated"' "$build/report-analytic/report.json" ||
  { echo "ci aarch64: the hardware record does not say the CPU is emulated" >&2; exit 1; }
stage "analytic claims"

ctest --test-dir "$build" -L '^unit$' -LE '^(cli|cuda|gpu)$' -E '^test_' --output-on-failure --no-tests=error -j"$jobs"
stage "unit and kernel tests"

# Timed claims skip under emulation, with the reason: the measured claims skip, the measured parts of analytic
# claims stay pending (their analytic statements are judged as above); exit 0.
"${q[@]}" "$build/claimcheck" run --label measured --quiet --report "$build/report-measured"
grep -q "emulated CPU" "$build/report-measured/report.json" ||
  { echo "ci aarch64: no measured claim skipped for the emulated CPU" >&2; exit 1; }
stage "measured claims (skipped: emulated)"
echo "ci aarch64: done in $((SECONDS - t0)) s"
