// GEMM through OpenBLAS's cblas_sgemm: the vendor baseline our own kernels are compared with.
// OpenBLAS's thread count is set globally by nnperf::set_threads (core/threads.h); its threads are
// OpenMP's with its OpenMP build (which CMake prefers), a pool of its own with the pthread build.
// When that count is one (set_blas_threads(1), as CNN runs do) and the caller allows several
// threads, the product is split into column (or row) slices, one cblas_sgemm per OpenMP thread,
// each on the caller's team: a pthread pool's threads spin after every call and would otherwise
// compete for the cores with the OpenMP team of the next layer. With the OpenMP build the slices
// and OpenBLAS's own threads measured level (ResNet-18 training steps with --algorithm gemm on 2
// threads, 2026-11-28), so the slicing stays for both builds.
#include <cblas.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "nnperf/core/threads.h"
#include "nnperf/kernels/elementwise.h"
#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

namespace {

// Below ~2 MFLOP per thread (~25 us of one core) a slice costs more than it saves.
constexpr double kMinFlopsPerThread = 2e6;
constexpr int64_t kSliceAlign = 16;  // columns/rows per slice: a multiple of OpenBLAS's tiles

void sgemm(const GemmArgs& g, int64_t m, int64_t n, const float* a, const float* b, float* c) {
  const GemmShape& s = g.shape;
  cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
              s.trans_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(s.k), g.alpha, a,
              static_cast<blasint>(g.lda), b, static_cast<blasint>(g.ldb), g.beta, c,
              static_cast<blasint>(g.ldc));
}

}  // namespace

void gemm_blas(const GemmArgs& g) {
  const GemmShape& s = g.shape;
  if (s.m == 0 || s.n == 0) return;
  // BLAS rejects lda < max(1, k) even when k == 0 (and prints to stderr), so k == 0 stays here.
  if (s.k == 0) {
    gemm_scale_c(g);
    return;
  }
  const double flops =
      2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  const bool split_n = s.n >= s.m;
  const int64_t extent = split_n ? s.n : s.m;
  const int t = useful_threads(g.threads, flops, kMinFlopsPerThread,
                               (extent + kSliceAlign - 1) / kSliceAlign);
  if (t <= 1 || blas_threads() > 1) {
    sgemm(g, s.m, s.n, g.a, g.b, g.c);
    return;
  }
#pragma omp parallel num_threads(t)
  {
    const auto [lo, hi] =
        slice_of(extent, kSliceAlign, omp_get_thread_num(), omp_get_num_threads());
    if (hi > lo) {
      if (split_n) {  // columns [lo, hi) of op(B) and C
        const float* b = s.trans_b ? g.b + lo * g.ldb : g.b + lo;
        sgemm(g, s.m, hi - lo, g.a, b, g.c + lo);
      } else {  // rows [lo, hi) of op(A) and C
        const float* a = s.trans_a ? g.a + lo : g.a + lo * g.lda;
        sgemm(g, hi - lo, s.n, a, g.b, g.c + lo * g.ldc);
      }
    }
  }
}

}  // namespace nnperf
