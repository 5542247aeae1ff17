// The blocked GEMM's driver (GotoBLAS/BLIS loop nest, packing, micro-kernel), written once over a
// SIMD traits type K and instantiated by blocked.cc (portable vectors), blocked_avx2.cc and
// blocked_avx512.cc. Everything here has internal linkage and uses no standard-library inline
// code, so instructions compiled with -mavx2 / -mavx512f can never be picked by the linker for a
// caller compiled for baseline x86-64.
//
// Loop nest (jc, pc, ic, jr, ir), C += op(A) op(B) block by block, per thread:
//   jc: nc columns of C  -> pack op(B)[pc:pc+kc, jc:jc+nc] (this thread's columns of it; L3)
//   pc: kc of the k sum    (first block applies beta, later blocks accumulate)
//   ic: mc rows          -> pack op(A)[ic:ic+mc, pc:pc+kc] (L2)
//   jr: one nr-wide micro-panel of packed B (kc x nr, stays in L1 across the ir loop)
//   ir: one mr-tall micro-panel of packed A -> micro-kernel: mr x nr tile of C in registers.
// Packing absorbs trans_a/trans_b and zero-pads partial panels, so all four transpose cases
// run the same micro-kernel; edge tiles use masked loads/stores of C.
// Threads own disjoint cells of a threads_m x threads_n grid over C and pack their own panels
// into their own workspace slices, so they never wait for each other until the region ends.
// A shared B panel would save one copy of B packing (~2% of the time at 1024^3) but costs two
// barriers per k block, and a barrier costs a whole scheduler time slice (milliseconds) when
// another process holds one of the cores; one join per call is all we pay now.
#pragma once
#include <omp.h>

#include <cstdint>
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/simd_transpose.h"

namespace nnperf::blocked_gemm {
namespace {

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }
inline int64_t ceil_div_i64(int64_t a, int64_t b) { return (a + b - 1) / b; }

// op(A)[ic:ic+mc, pc:pc+kc] -> mr-row micro-panels; element (i, p) of panel q lands at
// dst[q*mr*kc + p*mr + i]. Rows past mc are zero so every micro-kernel call runs a full tile.
template <int MR>
void pack_a(const Plan& pl, int64_t ic, int64_t mc, int64_t pc, int64_t kc, float* dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t rows = min_i64(MR, mc - i0);
    if (!pl.trans_a) {
      const float* src = pl.a + (ic + i0) * pl.lda + pc;  // row i at src + i*lda
      if (rows == MR) {
        for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) dst[p * MR + i] = src[i * pl.lda + p];
        }
      } else {
        for (int64_t p = 0; p < kc; ++p) {
          for (int i = 0; i < MR; ++i) dst[p * MR + i] = i < rows ? src[i * pl.lda + p] : 0.0f;
        }
      }
    } else {
      const float* src = pl.a + pc * pl.lda + ic + i0;  // op(A) column p at src + p*lda
      if (rows == MR) {
        for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 16
          for (int i = 0; i < MR; ++i) dst[p * MR + i] = src[p * pl.lda + i];
        }
      } else {
        for (int64_t p = 0; p < kc; ++p) {
          for (int i = 0; i < MR; ++i) dst[p * MR + i] = i < rows ? src[p * pl.lda + i] : 0.0f;
        }
      }
    }
    dst += MR * kc;
  }
}

#if defined(__AVX2__)
using simd::transpose_8x8;  // packing op(B) = B^T is otherwise a large share of small GEMMs
#endif

// Micro-panels [q0, q1) of op(B)[pc:pc+kc, jc:jc+nc] (nr columns each); element (p, j) of panel q
// lands at dst[(q-q0)*nr*kc + p*nr + j]. Columns past nc are zero.
template <int NR>
void pack_b(const Plan& pl, int64_t jc, int64_t nc, int64_t pc, int64_t kc, int64_t q0, int64_t q1,
            float* dst) {
  for (int64_t q = q0; q < q1; ++q) {
    const int64_t j0 = q * NR;
    const int64_t cols = min_i64(NR, nc - j0);
    float* d = dst + (q - q0) * NR * kc;
    if (!pl.trans_b) {
      const float* src = pl.b + pc * pl.ldb + jc + j0;  // row p of op(B) at src + p*ldb
      if (cols == NR) {
        for (int64_t p = 0; p < kc; ++p) {
#pragma GCC unroll 32
          for (int j = 0; j < NR; ++j) d[p * NR + j] = src[p * pl.ldb + j];
        }
      } else {
        for (int64_t p = 0; p < kc; ++p) {
          for (int j = 0; j < NR; ++j) d[p * NR + j] = j < cols ? src[p * pl.ldb + j] : 0.0f;
        }
      }
    } else {
      const float* src = pl.b + (jc + j0) * pl.ldb + pc;  // column j of op(B) at src + j*ldb
      int64_t p0 = 0;
#if defined(__AVX2__)
      if constexpr (NR % 8 == 0) {
        if (cols == NR) {
          for (; p0 + 8 <= kc; p0 += 8) {
            for (int j = 0; j < NR; j += 8) {
              transpose_8x8(src + j * pl.ldb + p0, pl.ldb, d + p0 * NR + j, NR);
            }
          }
        }
      }
#endif
      for (int64_t j = 0; j < cols; ++j) {
        for (int64_t p = p0; p < kc; ++p) d[p * NR + j] = src[j * pl.ldb + p];
      }
      for (int64_t j = cols; j < NR; ++j) {
        for (int64_t p = p0; p < kc; ++p) d[p * NR + j] = 0.0f;
      }
    }
  }
}

// C[0:mr, 0:nr] = alpha * (A micro-panel x packed B micro-panel) + beta * C, with the kMr x kNr
// tile accumulated in registers; mr/nr < the tile only at the edges of C. kPackedA: A is a packed
// micro-panel (element (i, p) at a[p*kMr + i]); otherwise A is read in place at a[i*rs_a +
// p*cs_a], rows past mr re-reading row mr-1 (in bounds; their results are never stored).
template <class K, bool kPackedA>
inline void micro_kernel(int64_t kc, const float* __restrict a, int64_t rs_a, int64_t cs_a,
                         const float* __restrict b, float* c, int64_t ldc, int64_t mr, int64_t nr,
                         float alpha, float beta) {
  using V = typename K::V;
  constexpr int MR = K::kMr, NV = K::kNv, W = K::kWidth, NR = NV * W;
  V acc[MR][NV];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = K::zero();
    // C is read (beta != 0 or a later k block) and written only after the k loop: start
    // fetching its rows now, so that the tile's update does not wait on L3 or memory.
    __builtin_prefetch(c + i * ldc, 1, 3);
    __builtin_prefetch(c + i * ldc + NR - 1, 1, 3);
  }
  if constexpr (kPackedA) {
#pragma GCC unroll 2
    for (int64_t p = 0; p < kc; ++p) {
      V bv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) bv[v] = K::load(b + v * W);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const V av = K::set1(a[i]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = K::fmadd(av, bv[v], acc[i][v]);
      }
      a += MR;
      b += NR;
    }
  } else {
    const float* rows[MR];
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) rows[i] = a + (i < mr ? i : mr - 1) * rs_a;
    int64_t off = 0;
#pragma GCC unroll 2
    for (int64_t p = 0; p < kc; ++p) {
      V bv[NV];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) bv[v] = K::load(b + v * W);
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
        const V av = K::set1(rows[i][off]);
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[i][v] = K::fmadd(av, bv[v], acc[i][v]);
      }
      off += cs_a;
      b += NR;
    }
  }
  const V va = K::set1(alpha);
  const V vb = K::set1(beta);
  if (mr == MR && nr == NR) {
    if (beta == 0.0f) {  // C is not read (it may hold NaN), as in BLAS
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) K::storeu(c + i * ldc + v * W, K::mul(va, acc[i][v]));
      }
    } else if (beta == 1.0f) {
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          float* cp = c + i * ldc + v * W;
          K::storeu(cp, K::fmadd(va, acc[i][v], K::loadu(cp)));
        }
      }
    } else {
#pragma GCC unroll 16
      for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) {
          float* cp = c + i * ldc + v * W;
          K::storeu(cp, K::fmadd(va, acc[i][v], K::mul(vb, K::loadu(cp))));
        }
      }
    }
    return;
  }
  // Edge tile: masked loads/stores touch only the mr x nr part of C.
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    if (i >= mr) break;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      const int64_t left = nr - v * W;
      if (left <= 0) break;
      const int count = left < W ? static_cast<int>(left) : W;
      float* cp = c + i * ldc + v * W;
      V r = K::mul(va, acc[i][v]);
      if (beta != 0.0f) r = K::fmadd(vb, K::load_partial(cp, count), r);
      K::store_partial(cp, r, count);
    }
  }
}

// Everything virtual thread `vt` computes: rows [i_lo, i_hi) x micro-panels [q_lo, q_hi) of
// each nc block of C, its grid cell, with its own packed panels.
template <class K>
void run_cell(const Plan& pl, int vt) {
  constexpr int MR = K::kMr, NR = K::kNv * K::kWidth;
  const int tm = pl.threads_m, tn = pl.threads_n;
  const int ti = vt / tn, tj = vt % tn;
  const int64_t m_panels = ceil_div_i64(pl.m, MR);
  const int64_t i_lo = ti * m_panels / tm * MR;
  const int64_t i_hi = min_i64(pl.m, (ti + 1) * m_panels / tm * MR);
  if (i_lo >= i_hi) return;
  float* b_pack = pl.pack + vt * (pl.b_pack_floats + pl.a_pack_floats);
  float* a_pack = b_pack + pl.b_pack_floats;
  const int64_t rs_a = pl.trans_a ? 1 : pl.lda;  // op(A)[i][p] at a[i*rs_a + p*cs_a]
  const int64_t cs_a = pl.trans_a ? pl.lda : 1;
  for (int64_t jc = 0; jc < pl.n; jc += pl.nc) {
    const int64_t nc = min_i64(pl.nc, pl.n - jc);
    const int64_t n_panels = ceil_div_i64(nc, NR);
    const int64_t q_lo = tj * n_panels / tn;
    const int64_t q_hi = (tj + 1) * n_panels / tn;
    if (q_lo >= q_hi) continue;
    for (int64_t pc = 0; pc < pl.k; pc += pl.kc) {
      const int64_t kc = min_i64(pl.kc, pl.k - pc);
      const float beta = pc == 0 ? pl.beta : 1.0f;
      pack_b<NR>(pl, jc, nc, pc, kc, q_lo, q_hi, b_pack);
      if (!pl.pack_a) {  // few B micro-panels: each A element is used once or twice, read in place
        for (int64_t q = q_lo; q < q_hi; ++q) {
          const float* b = b_pack + (q - q_lo) * NR * kc;
          const int64_t nr = min_i64(NR, nc - q * NR);
          for (int64_t ir = i_lo; ir < i_hi; ir += MR) {
            micro_kernel<K, false>(kc, pl.a + ir * rs_a + pc * cs_a, rs_a, cs_a, b,
                                   pl.c + ir * pl.ldc + jc + q * NR, pl.ldc, min_i64(MR, i_hi - ir),
                                   nr, pl.alpha, beta);
          }
        }
        continue;
      }
      for (int64_t ic = i_lo; ic < i_hi; ic += pl.mc) {
        const int64_t mc = min_i64(pl.mc, i_hi - ic);
        pack_a<MR>(pl, ic, mc, pc, kc, a_pack);
        for (int64_t q = q_lo; q < q_hi; ++q) {
          const float* b = b_pack + (q - q_lo) * NR * kc;
          const int64_t nr = min_i64(NR, nc - q * NR);
          float* c = pl.c + ic * pl.ldc + jc + q * NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            micro_kernel<K, true>(kc, a_pack + ir * kc, 1, MR, b, c + ir * pl.ldc, pl.ldc,
                                  min_i64(MR, mc - ir), nr, pl.alpha, beta);
          }
        }
      }
    }
  }
}

template <class K>
void run_plan(const Plan& pl) {
  static_assert(K::kNv * K::kWidth * 4 % 32 == 0, "packed B rows must keep vector alignment");
  if (pl.threads <= 1) {  // no OpenMP region at all: small problems pay no fork/join
    run_cell<K>(pl, 0);
    return;
  }
  // The plan's threads are virtual: if OpenMP gives a smaller team (nested parallelism, thread
  // limits), each real thread runs several cells, so the result never depends on the team size.
#pragma omp parallel num_threads(pl.threads)
  {
    const int team = omp_get_num_threads();
    for (int vt = omp_get_thread_num(); vt < pl.threads; vt += team) run_cell<K>(pl, vt);
  }
}

}  // namespace
}  // namespace nnperf::blocked_gemm
