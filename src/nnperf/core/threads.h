// One place sets the thread count for everything: OpenMP regions and OpenBLAS.
#pragma once
#include <string>

namespace nnperf {

// n <= 0 means "all logical CPUs"; n above the logical CPU count is capped to it with a warning.
// Returns the count in force afterwards.
int set_threads(int n);
int num_threads();
// OpenBLAS's own pool only (set_threads sets it to n as well). CNN inference keeps it at 1: its
// threads spin after each call and compete with the OpenMP team (gemm "blas" then splits the
// product over the caller's OpenMP threads itself; see kernels/gemm/blas.cc).
void set_blas_threads(int n);
// The BLAS library's own report: "OpenBLAS 0.3.21 ... (pthread, 2 threads)".
std::string blas_description();
int blas_threads();

}  // namespace nnperf
