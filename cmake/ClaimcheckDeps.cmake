# Dependencies. LibTorch is the PyTorch 2.x (>= 2.4) that CLAIMCHECK_PYTHON imports, found through
# torch.utils.cmake_prefix_path (or a Torch package on CMAKE_PREFIX_PATH). CUDA is optional: without nvcc the
# rest builds and GPU checks report "skip" with the reason.
find_package(nlohmann_json 3.9 REQUIRED)
find_package(Threads REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
find_package(CLI11 CONFIG REQUIRED)

# ---- Python: the interpreter of the drivers, whose torch is the build's LibTorch -----------------------------
set(CLAIMCHECK_PYTHON "$ENV{CLAIMCHECK_PYTHON}" CACHE FILEPATH
    "Python whose torch (>= 2.4) is the LibTorch and which runs the Python drivers (ci/setup-python.sh prints one)")
if(NOT CLAIMCHECK_PYTHON)
  find_program(CLAIMCHECK_PYTHON_FOUND NAMES python3)
  set(CLAIMCHECK_PYTHON "${CLAIMCHECK_PYTHON_FOUND}" CACHE FILEPATH "" FORCE)
endif()
set(CLAIMCHECK_HOW_TO_POINT
    "set CLAIMCHECK_PYTHON=/path/to/python (torch >= 2.4 and numpy; `make` creates one: see the README) or pass -DCMAKE_PREFIX_PATH=<torch.utils.cmake_prefix_path>")

# ---- CUDA (before Torch: TorchConfig reads the CUDA language state) ---------------------------------------------
# The project's own CUDA targets are built for CLAIMCHECK_CUDA_ARCHITECTURES (presets: 90 on CPU machines; on GPU
# hosts 80, 86, 89, 90a and 100 with its PTX), whatever TorchConfig does to CMAKE_CUDA_ARCHITECTURES and
# CMAKE_CUDA_FLAGS. A device none of them runs on is refused with the reason (kernels/cuda/stream.cu).
set(CLAIMCHECK_CUDA_ARCHITECTURES "90" CACHE STRING "CUDA architectures of the project's own .cu targets")
set(CLAIMCHECK_CUDA_STATUS "off (CLAIMCHECK_WITH_CUDA=OFF)")
set(CLAIMCHECK_HAS_CUDA OFF)
if(CLAIMCHECK_WITH_CUDA)
  include(CheckLanguage)
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES ${CLAIMCHECK_CUDA_ARCHITECTURES})
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    find_package(CUDAToolkit REQUIRED)
    set(CLAIMCHECK_HAS_CUDA ON)
  else()
    set(CLAIMCHECK_CUDA_STATUS "nvcc not found: GPU checks will skip")
  endif()
endif()
set(claimcheck_cuda_flags_before_torch "${CMAKE_CUDA_FLAGS}")

# ---- LibTorch ----------------------------------------------------------------------------------------------------
option(CLAIMCHECK_TORCH_CUDA "Link LibTorch's CUDA libraries (GPU hosts); OFF: libtorch_cpu and libc10 only" OFF)
set(CLAIMCHECK_TORCH_STATUS "off (CLAIMCHECK_WITH_TORCH=OFF)")
set(CLAIMCHECK_HAS_TORCH OFF)
set(CLAIMCHECK_PYTHON_TORCH "")
if(CLAIMCHECK_WITH_TORCH)
  if(CLAIMCHECK_PYTHON)
    execute_process(
      COMMAND "${CLAIMCHECK_PYTHON}" -c "import torch; print(torch.__version__); print(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(rc EQUAL 0)
      string(REPLACE "\n" ";" out "${out}")
      list(GET out 0 CLAIMCHECK_PYTHON_TORCH)
      list(GET out 1 prefix)
      list(APPEND CMAKE_PREFIX_PATH "${prefix}")
    endif()
  endif()
  if(TORCH_CUDA_ARCH_LIST STREQUAL "" AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "9.0")  # no GPU to detect one from on a CPU machine
  endif()
  # The TorchConfig of CUDA 12 wheels (2.4.1 seen) requires the target CUDA::nvToolsExt, NVTX2's library, which
  # CUDA 12.9+ toolkits no longer ship. The project calls no NVTX; libtorch_cuda finds the wheel's own copy through
  # its RPATH where it is linked at all. An empty stand-in satisfies the check.
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND NOT TARGET CUDA::nvToolsExt)
    add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  endif()
  # TorchConfig warns about, then overrides, CMAKE_CUDA_ARCHITECTURES: hand it none, restore ours below.
  unset(CMAKE_CUDA_ARCHITECTURES)
  find_package(Torch QUIET)
  if(Torch_FOUND)
    # Torch_VERSION comes from TorchConfigVersion.cmake ("2.15.0").
    if(Torch_VERSION VERSION_LESS 2.4)
      message(FATAL_ERROR "claimcheck: LibTorch ${Torch_VERSION} at ${Torch_DIR} is older than 2.4 (asked: ${CLAIMCHECK_PYTHON}); ${CLAIMCHECK_HOW_TO_POINT}")
    endif()
    set(CLAIMCHECK_HAS_TORCH ON)
    # A CUDA wheel's libtorch_cuda.so finds NCCL, cuDNN, ... in site-packages/nvidia/*/lib through its own
    # RPATH at run time; the linker must look there too, before an older copy in the system's library cache.
    get_filename_component(claimcheck_site "${Torch_DIR}/../../../.." ABSOLUTE)
    file(GLOB claimcheck_nvidia_libs LIST_DIRECTORIES true "${claimcheck_site}/nvidia/*/lib")
    foreach(d IN LISTS claimcheck_nvidia_libs)
      string(APPEND CMAKE_EXE_LINKER_FLAGS " -Wl,-rpath-link,${d}")
      string(APPEND CMAKE_SHARED_LINKER_FLAGS " -Wl,-rpath-link,${d}")
    endforeach()
    # What the project's targets link: CLAIMCHECK_TORCH_LIBS. On CPU presets only libtorch_cpu and libc10 (the
    # CPU operators and their registration): a CUDA wheel's libtorch_cuda and its CUDA libraries add ~0.3 s of
    # static initialisation to every claimcheck call and nothing a CPU can use. The cuda preset links them all.
    if(CLAIMCHECK_TORCH_CUDA)
      set(CLAIMCHECK_TORCH_LIBS ${TORCH_LIBRARIES})
      set(claimcheck_torch_flavour "with its CUDA libraries")
    else()
      find_library(CLAIMCHECK_TORCH_CPU_LIBRARY torch_cpu PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
      find_library(CLAIMCHECK_C10_LIBRARY c10 PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
      if(NOT CLAIMCHECK_TORCH_CPU_LIBRARY OR NOT CLAIMCHECK_C10_LIBRARY)
        message(FATAL_ERROR "claimcheck: no libtorch_cpu / libc10 under ${TORCH_INSTALL_PREFIX}/lib; ${CLAIMCHECK_HOW_TO_POINT}")
      endif()
      add_library(claimcheck_torch_cpu INTERFACE)
      target_include_directories(claimcheck_torch_cpu SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
      target_link_libraries(claimcheck_torch_cpu INTERFACE ${CLAIMCHECK_TORCH_CPU_LIBRARY} ${CLAIMCHECK_C10_LIBRARY})
      target_compile_features(claimcheck_torch_cpu INTERFACE cxx_std_20)
      if(TORCH_CXX_FLAGS)
        separate_arguments(claimcheck_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
        target_compile_options(claimcheck_torch_cpu INTERFACE ${claimcheck_torch_flags})
      endif()
      set(CLAIMCHECK_TORCH_LIBS claimcheck_torch_cpu)
      set(claimcheck_torch_flavour "CPU libraries only")
    endif()
    set(CLAIMCHECK_TORCH_STATUS "${Torch_VERSION}, ${claimcheck_torch_flavour} (${Torch_DIR})")
  elseif(CLAIMCHECK_PYTHON_TORCH)
    message(FATAL_ERROR "claimcheck: ${CLAIMCHECK_PYTHON} imports torch ${CLAIMCHECK_PYTHON_TORCH} but CMake found no TorchConfig.cmake under its cmake_prefix_path; ${CLAIMCHECK_HOW_TO_POINT}")
  else()
    set(CLAIMCHECK_TORCH_STATUS "not found (${CLAIMCHECK_PYTHON} does not import torch): LibTorch checks will skip; ${CLAIMCHECK_HOW_TO_POINT}")
  endif()
endif()

if(CLAIMCHECK_HAS_CUDA)
  # TorchConfig appends its -gencode list to CMAKE_CUDA_FLAGS and sets CMAKE_CUDA_ARCHITECTURES OFF:
  # the project's .cu files include no LibTorch header, so they get the flags they had before.
  set(CMAKE_CUDA_FLAGS "${claimcheck_cuda_flags_before_torch}")
  set(CMAKE_CUDA_ARCHITECTURES ${CLAIMCHECK_CUDA_ARCHITECTURES})
  # Several architectures: nvcc compiles them side by side.
  list(LENGTH CLAIMCHECK_CUDA_ARCHITECTURES claimcheck_n_archs)
  if(claimcheck_n_archs GREATER 1)
    string(APPEND CMAKE_CUDA_FLAGS " --threads 0")
  endif()
  set(CLAIMCHECK_CUDA_STATUS "nvcc ${CMAKE_CUDA_COMPILER_VERSION}, project targets for CUDA architectures ${CLAIMCHECK_CUDA_ARCHITECTURES}: GPU checks run where a GPU is")
endif()

# PyPI's torch before 2.7 is built with the pre-C++11 libstdc++ ABI (TORCH_CXX_FLAGS says so). Everything that
# passes a std::string across a library boundary must then agree: the whole project is compiled that way, and
# GoogleTest is built from Debian's sources (/usr/src/googletest) with it; Debian's Google Benchmark is compiled
# with the new ABI and cannot be linked, so the benchmark is not built.
set(CLAIMCHECK_OLD_ABI OFF)
if(CLAIMCHECK_HAS_TORCH AND TORCH_CXX_FLAGS MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  set(CLAIMCHECK_OLD_ABI ON)
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=0)
  string(APPEND CLAIMCHECK_TORCH_STATUS "; pre-C++11 ABI: the project follows it, the benchmark is not built")
endif()

if(CLAIMCHECK_BUILD_TESTS)
  if(CLAIMCHECK_OLD_ABI)
    if(NOT EXISTS /usr/src/googletest/CMakeLists.txt)
      message(FATAL_ERROR "claimcheck: LibTorch ${Torch_VERSION} uses the pre-C++11 ABI; building GoogleTest alike needs its sources in /usr/src/googletest (Debian: libgtest-dev)")
    endif()
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
    if(NOT TARGET GTest::gtest_main)  # googletest 1.11+ defines these aliases itself
      add_library(GTest::gtest_main ALIAS gtest_main)
    endif()
  else()
    find_package(GTest REQUIRED)
  endif()
  include(GoogleTest)
endif()
if(NOT CLAIMCHECK_OLD_ABI)
  find_package(benchmark QUIET)
endif()
