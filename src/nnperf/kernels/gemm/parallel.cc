// The naive loops split over rows of C with OpenMP: srivas63_CMSE401's "@njit(parallel=True)"
// version.
// Each row is independent, so a static schedule over rows needs no synchronisation; it shares
// the naive algorithm's memory traffic, so it scales only while memory bandwidth lasts.
#include <cstdint>

#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

void gemm_parallel(const GemmArgs& args) {
  const int64_t m = args.shape.m;
  const int threads = args.threads > 0 ? args.threads : 1;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < m; ++i) gemm_naive_rows(args, i, i + 1);
}

}  // namespace nnperf
