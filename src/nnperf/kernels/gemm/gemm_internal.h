// Entry points of the GEMM algorithms, named here once for the registry table in
// gemm_registry.cc (and for tests that need one algorithm's internals). Not part of the public
// interface: layers go through gemm_algorithms() / find_gemm().
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

void gemm_naive(const GemmArgs& args);
void gemm_parallel(const GemmArgs& args);
void gemm_blocked(const GemmArgs& args);
void gemm_blas(const GemmArgs& args);
// The GPU rows: a, b and c are device pointers; the work is queued on the default stream and the
// call returns before it finishes (cuda::synchronize() or an event waits for it).
void gemm_cuda_tiled(const GemmArgs& args);
void gemm_cublas(const GemmArgs& args);
// Why cuBLAS cannot be loaded ("no cuBLAS (...)", a version or entry point it lacks), or "".
std::string cublas_unusable_reason();

std::size_t gemm_blocked_workspace_bytes(const GemmShape& shape, int threads);

// Rows [i0, i1) of C computed by the naive loops; naive.cc runs all rows, parallel.cc splits them.
void gemm_naive_rows(const GemmArgs& args, int64_t i0, int64_t i1);

// C = beta * C (C is not read when beta == 0, as in BLAS): the whole GEMM when k == 0.
void gemm_scale_c(const GemmArgs& args);

}  // namespace nnperf
