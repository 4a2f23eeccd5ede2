// The six cuBLAS entry points the kernels call (decode.cu's library chain, probes.cu's GEMM peak), loaded on first
// use with dlopen instead of linked: libcublasLt's static initialisers cost every process that links cuBLAS about
// 70 ms at start (measured on a 2-vCPU AMD Zen 4 guest: an empty main 0.00 s, linked with libcublasLt 0.07 s), and
// most claimcheck processes never touch a GPU (account, list, a CPU claim, each planted-fault test's runs).
// Where the library cannot be loaded, cublasCreate says so (CUBLAS_STATUS_NOT_INITIALIZED, the reason in
// cublas_lazy_error()); the other entry points are reached only with a handle it made.
#include <cublas_v2.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

#include "claimcheck/kernels/cuda/stream.h"

namespace {

struct Cublas {
  void* lib = nullptr;
  std::string error;
  cublasStatus_t (*create)(cublasHandle_t*) = nullptr;
  cublasStatus_t (*destroy)(cublasHandle_t) = nullptr;
  cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t) = nullptr;
  cublasStatus_t (*set_workspace)(cublasHandle_t, void*, size_t) = nullptr;
  cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                            const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                            cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  const char* (*status_string)(cublasStatus_t) = nullptr;
};

template <class F>
bool bind(Cublas& c, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(c.lib, name));
  if (!f && c.error.empty()) c.error = std::string("cuBLAS has no ") + name;
  return f != nullptr;
}

// The cuBLAS of the toolkit built against (its major version's soname: the one the process may already hold through
// LibTorch, else found as the linker would, else in the toolkit's folder).
const Cublas& cublas() {
  static Cublas c;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string soname = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    for (const std::string& path : {soname, std::string(CLAIMCHECK_CUDA_LIBRARY_DIR) + "/" + soname}) {
      c.lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (c.lib) break;
      const char* why = dlerror();
      c.error += (c.error.empty() ? "" : "; ") + path + ": " + (why ? why : "not loaded");
    }
    if (!c.lib) {
      c.error = "cuBLAS could not be loaded (" + c.error + ")";
      return;
    }
    c.error.clear();
    const bool all = bind(c, c.create, "cublasCreate_v2") & bind(c, c.destroy, "cublasDestroy_v2") &
                     bind(c, c.set_stream, "cublasSetStream_v2") & bind(c, c.set_workspace, "cublasSetWorkspace_v2") &
                     bind(c, c.gemm_ex, "cublasGemmEx") & bind(c, c.status_string, "cublasGetStatusString");
    if (!all) c.create = nullptr;  // (the error names the first one missing)
  });
  return c;
}

}  // namespace

// Hidden too: the executable and the LibTorch checks module each link this library, and each must read its own
// loader's state (the executable exports its symbols to the module).
namespace claimcheck::kernels::cuda {
namespace detail {
__attribute__((visibility("hidden"))) const std::string& cublas_lazy_error() { return cublas().error; }
}  // namespace detail

__attribute__((visibility("hidden"))) bool cublas_loadable(std::string* why) {
  const Cublas& c = cublas();
  if (!c.create && why) *why = c.error;
  return c.create != nullptr;
}
}  // namespace claimcheck::kernels::cuda

// Hidden: they satisfy the kernels' calls in the module they are linked into, and never interpose on another
// library's cuBLAS calls (the executable exports its symbols to the LibTorch checks module; LibTorch has its own).
#define CLAIMCHECK_HIDDEN __attribute__((visibility("hidden")))

extern "C" {

CLAIMCHECK_HIDDEN cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) {
  const Cublas& c = cublas();
  return c.create ? c.create(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

CLAIMCHECK_HIDDEN cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  const Cublas& c = cublas();
  return c.destroy ? c.destroy(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

CLAIMCHECK_HIDDEN cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  const Cublas& c = cublas();
  return c.set_stream ? c.set_stream(handle, stream) : CUBLAS_STATUS_NOT_INITIALIZED;
}

CLAIMCHECK_HIDDEN cublasStatus_t CUBLASWINAPI cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace,
                                                                    size_t bytes) {
  const Cublas& c = cublas();
  return c.set_workspace ? c.set_workspace(handle, workspace, bytes) : CUBLAS_STATUS_NOT_INITIALIZED;
}

CLAIMCHECK_HIDDEN cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                                           cublasOperation_t transb, int m, int n, int k,
                                                           const void* alpha, const void* A, cudaDataType Atype,
                                                           int lda, const void* B, cudaDataType Btype, int ldb,
                                                           const void* beta, void* C, cudaDataType Ctype, int ldc,
                                                           cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  const Cublas& c = cublas();
  return c.gemm_ex ? c.gemm_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
                               ldc, computeType, algo)
                   : CUBLAS_STATUS_NOT_INITIALIZED;
}

CLAIMCHECK_HIDDEN const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  const Cublas& c = cublas();
  if (c.status_string) return c.status_string(status);
  return status == CUBLAS_STATUS_NOT_INITIALIZED ? "cuBLAS not initialized (not loaded)" : "cuBLAS status";
}

}  // extern "C"
