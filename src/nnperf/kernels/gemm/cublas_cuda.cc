// GEMM row `cublas`: cuBLAS cublasSgemm (the vendor baseline on the GPU), operands in device
// memory, on the default stream. cuBLAS is column-major; a row-major C = op(A) op(B) is the
// column-major C^T = op(B)^T op(A)^T, so the call passes B before A with m and n swapped.
#include <cublas_v2.h>
#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <mutex>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda_check.h"
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
      if (h != nullptr) (void)cublasDestroy(h);
    }
  };
  thread_local Holder holder;
  if (holder.h == nullptr) {
    check(cublasCreate(&holder.h), "cublasCreate");
    check(cublasSetMathMode(holder.h, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    // The thread's default stream, as our kernels' (capturable into a CUDA graph).
    check(cublasSetStream(holder.h, cudaStreamPerThread), "cublasSetStream");
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
  check(cublasSgemm(handle(), op_b, op_a, n, m, k, &g.alpha, g.b, ld(g.ldb, "ldb"), g.a,
                    ld(g.lda, "lda"), &g.beta, g.c, ld(g.ldc, "ldc")),
        "cublasSgemm");
}

}  // namespace nnperf
