// One place sets the thread count for everything: OpenMP regions and OpenBLAS.
#pragma once
#include <string>

namespace nnperf {

// n <= 0 means "all logical CPUs". Returns the count in force afterwards.
int set_threads(int n);
int num_threads();
// The BLAS library's own report: "OpenBLAS 0.3.21 ... (pthread, 2 threads)".
std::string blas_description();
int blas_threads();

}  // namespace nnperf
