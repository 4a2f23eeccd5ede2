# AArch64 Linux, cross-compiled on an x86-64 Debian host with Debian's g++-aarch64-linux-gnu (its own libc and
# libstdc++ under /usr/aarch64-linux-gnu) and run under qemu-user (issue 23, point 10; ci/aarch64.sh sets it all up).
#
# The third-party libraries of the target (OpenSSL's libcrypto, GoogleTest; nlohmann-json and CLI11, header-only)
# come from an arm64 Debian tree outside the repository, CLAIMCHECK_AARCH64_SYSROOT (default /opt/sysroot-arm64:
# debootstrap --foreign --arch=arm64 --variant=minbase with those -dev packages unpacked into it). It is not a full
# sysroot (no libc headers): the compiler keeps its own, CMake looks for packages there only, and qemu-aarch64 -L
# loads the target's shared libraries (the dynamic loader, libc, libstdc++, libcrypto) from it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CLAIMCHECK_AARCH64_SYSROOT "$ENV{CLAIMCHECK_AARCH64_SYSROOT}" CACHE PATH "arm64 Debian tree with the target's libraries")
if(NOT CLAIMCHECK_AARCH64_SYSROOT)
  set(CLAIMCHECK_AARCH64_SYSROOT /opt/sysroot-arm64 CACHE PATH "" FORCE)
endif()

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Packages and libraries from the arm64 tree (and the cross compiler's own prefix); programs from the host.
set(CMAKE_FIND_ROOT_PATH "${CLAIMCHECK_AARCH64_SYSROOT}" /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

# Debian's multiarch include folder (openssl/configuration.h lives there), which the cross compiler does not search in
# a tree that is not its sysroot; and the tree's libraries for the linker's resolution of libcrypto's own needs.
set(CMAKE_CXX_STANDARD_INCLUDE_DIRECTORIES "${CLAIMCHECK_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,${CLAIMCHECK_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-Wl,-rpath-link,${CLAIMCHECK_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")

# ctest (and gtest_discover_tests) run the target's programs under qemu-user with the tree's libraries; the aarch64
# preset sets the same.
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L "${CLAIMCHECK_AARCH64_SYSROOT}")
endif()
