// GEMM through OpenBLAS's cblas_sgemm: the vendor baseline our own kernels are compared with.
// OpenBLAS keeps its own thread pool; its size is set globally by nnperf::set_threads
// (core/threads.h), so args.threads is not applied here.
#include <cblas.h>

#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

void gemm_blas(const GemmArgs& g) {
  const GemmShape& s = g.shape;
  if (s.m == 0 || s.n == 0) return;
  // BLAS rejects lda < max(1, k) even when k == 0 (and prints to stderr), so k == 0 stays here.
  if (s.k == 0) {
    gemm_scale_c(g);
    return;
  }
  cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
              s.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(s.m),
              static_cast<blasint>(s.n), static_cast<blasint>(s.k), g.alpha, g.a,
              static_cast<blasint>(g.lda), g.b, static_cast<blasint>(g.ldb), g.beta, g.c,
              static_cast<blasint>(g.ldc));
}

}  // namespace nnperf
