// GEMM row `cublas`: cuBLAS cublasSgemm (the vendor baseline on the GPU), operands in device
// memory, on the default stream. cuBLAS is column-major; a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so the call passes B before A with m and n swapped.
// libcublas is loaded with dlopen on first use, as cuDNN and NVML are, not linked: linked, every
// start of nnperf and of each test process mapped and initialised libcublas and libcublasLt
// (0.17 s per process on the 2-core build VM, 2026-11-28, GPU or not).
#include <cublas_v2.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda_check.h"
#include "nnperf/gpu/probe.h"
#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

namespace {

const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return "cuBLAS error";
  }
}

// The entry points this row calls, from the loaded library; `reason` says why it is unusable.
struct Api {
  void* lib = nullptr;
  decltype(&cublasGetProperty) GetProperty = nullptr;
  decltype(&cublasCreate_v2) Create = nullptr;
  decltype(&cublasDestroy_v2) Destroy = nullptr;
  decltype(&cublasSetMathMode) SetMathMode = nullptr;
  decltype(&cublasSetStream_v2) SetStream = nullptr;
  decltype(&cublasSgemm_v2) Sgemm = nullptr;
  std::string reason;
};

template <typename F>
void resolve(Api& a, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(a.lib, name));
  if (f == nullptr && a.reason.empty()) a.reason = fmt::format("libcublas has no {}", name);
}

// The cuBLAS of the header's major version: by its soname (LD_LIBRARY_PATH, ld.so.conf), then
// from the toolkit's library folder found at build time.
Api load() {
  Api a;
  const std::string soname = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
  std::string file, errors;
  a.lib =
      dlopen_first({soname, std::string(NNPERF_CUDA_LIBRARY_DIR) + "/" + soname}, &file, &errors);
  if (a.lib == nullptr) {
    a.reason = "no cuBLAS (" + errors + ")";
    return a;
  }
  resolve(a, a.GetProperty, "cublasGetProperty");
  int major = 0;
  if (a.GetProperty != nullptr && a.GetProperty(MAJOR_VERSION, &major) != CUBLAS_STATUS_SUCCESS) {
    a.reason = "cublasGetProperty failed";
  } else if (a.GetProperty != nullptr && major != CUBLAS_VER_MAJOR) {
    a.reason =
        fmt::format("cuBLAS {} found, but nnperf is built for cuBLAS {}", major, CUBLAS_VER_MAJOR);
  }
  resolve(a, a.Create, "cublasCreate_v2");
  resolve(a, a.Destroy, "cublasDestroy_v2");
  resolve(a, a.SetMathMode, "cublasSetMathMode");
  resolve(a, a.SetStream, "cublasSetStream_v2");
  resolve(a, a.Sgemm, "cublasSgemm_v2");
  return a;
}

// Loaded once per process and never destroyed: a thread's handle (below) is destroyed when the
// thread exits, which may be after static destruction has begun.
const Api& api() {
  static const Api* a = new Api(load());
  return *a;
}

void check(cublasStatus_t s, const char* call) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw Error(fmt::format("cuBLAS: {} failed: {} ({})", call, status_name(s), static_cast<int>(s)));
  }
}

// One handle per thread (cuBLAS handles are not to be shared between host threads), created on
// first use and kept for the thread's life, queueing on the thread's default stream. FP32 math
// mode: no TF32, so results are comparable with the CPU rows' float32 bound.
cublasHandle_t handle() {
  struct Holder {
    cublasHandle_t h = nullptr;
    ~Holder() {
      if (h != nullptr) (void)api().Destroy(h);
    }
  };
  thread_local Holder holder;
  if (holder.h == nullptr) {
    const Api& a = api();
    if (!a.reason.empty()) throw Error("GEMM 'cublas' cannot run: " + a.reason);
    check(a.Create(&holder.h), "cublasCreate");
    check(a.SetMathMode(holder.h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    // The thread's default stream, as our kernels' (capturable into a CUDA graph).
    check(a.SetStream(holder.h, cudaStreamPerThread), "cublasSetStream");
  }
  return holder.h;
}

int to_int(int64_t v, const char* what) {
  if (v > std::numeric_limits<int>::max()) {
    throw Error(fmt::format("GEMM 'cublas': {} = {} exceeds cublasSgemm's int range", what, v));
  }
  return static_cast<int>(v);
}

}  // namespace

std::string cublas_unusable_reason() { return api().reason; }

void gemm_cublas(const GemmArgs& g) {
  cuda::ensure_device();
  const GemmShape& s = g.shape;
  if (s.m == 0 || s.n == 0) return;
  const int m = to_int(s.m, "m"), n = to_int(s.n, "n"), k = to_int(s.k, "k");
  // A stored m x k (row-major) is, column-major, k x m = A^T; so op(A)^T in column-major terms
  // needs no transpose when A is not transposed in row-major terms, and vice versa.
  const cublasOperation_t op_b = s.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_a = s.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  // cuBLAS refuses a leading dimension below 1 even where the operand is empty (k = 0: A is m x 0
  // with lda 0), where it only scales C by beta.
  const auto ld = [](int64_t v, const char* what) { return std::max(1, to_int(v, what)); };
  const cublasHandle_t h = handle();
  check(api().Sgemm(h, op_b, op_a, n, m, k, &g.alpha, g.b, ld(g.ldb, "ldb"), g.a, ld(g.lda, "lda"),
                    &g.beta, g.c, ld(g.ldc, "ldc")),
        "cublasSgemm");
}

}  // namespace nnperf
