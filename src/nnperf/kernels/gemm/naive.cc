// The naive GEMM: plain loops in one thread, srivas63_CMSE401's "low-level loops" baseline that
// the other algorithms are measured against. Loop order i-k-j (row-major: the inner loop streams a
// row of op(B) and a row of C); when B is transposed, i-j-k dot products keep both operands
// contiguous.
// No blocking and no intrinsics; whatever the compiler vectorises on its own is all it gets.
#include <cstdint>

#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

void gemm_naive_rows(const GemmArgs& g, int64_t i0, int64_t i1) {
  const GemmShape& s = g.shape;
  // op(A)[i][p]: A is m x k (row i contiguous), or k x m when transposed.
  const int64_t a_row = s.trans_a ? 1 : g.lda;
  const int64_t a_col = s.trans_a ? g.lda : 1;
  for (int64_t i = i0; i < i1; ++i) {
    const float* a = g.a + i * a_row;
    float* c = g.c + i * g.ldc;
    if (s.trans_b) {
      for (int64_t j = 0; j < s.n; ++j) {
        const float* b = g.b + j * g.ldb;
        float acc = 0.0f;
        for (int64_t p = 0; p < s.k; ++p) acc += a[p * a_col] * b[p];
        c[j] = g.beta == 0.0f ? g.alpha * acc : g.alpha * acc + g.beta * c[j];
      }
      continue;
    }
    if (g.beta == 0.0f) {
      for (int64_t j = 0; j < s.n; ++j) c[j] = 0.0f;
    } else if (g.beta != 1.0f) {
      for (int64_t j = 0; j < s.n; ++j) c[j] *= g.beta;
    }
    for (int64_t p = 0; p < s.k; ++p) {
      const float aip = g.alpha * a[p * a_col];
      const float* b = g.b + p * g.ldb;
      for (int64_t j = 0; j < s.n; ++j) c[j] += aip * b[j];
    }
  }
}

void gemm_naive(const GemmArgs& args) { gemm_naive_rows(args, 0, args.shape.m); }

}  // namespace nnperf
