// The `cuda` and `cublas` GEMM rows in a build without the CUDA backend: their why_not already
// says the backend is missing (gpu/cuda.h), so reaching these means a caller skipped why_not.
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

void gemm_cuda_tiled(const GemmArgs&) {
  throw Error("GEMM 'cuda' cannot run: " + cuda::unavailable_reason());
}

std::string cublas_unusable_reason() { return cuda::unavailable_reason(); }

void gemm_cublas(const GemmArgs&) {
  throw Error("GEMM 'cublas' cannot run: " + cuda::unavailable_reason());
}

}  // namespace nnperf
