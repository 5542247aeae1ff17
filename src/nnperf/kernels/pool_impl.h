// Max pooling's forward loops (pool.h), compiled once per instruction set: pool.cc (any x86-64)
// and pool_avx2.cc, each exporting its MaxPoolPaths (pool_internal.h). Plain loops the compiler
// vectorises for the TU's flags; comparisons only, so every path gives the same bits. Everything
// here has internal linkage: no AVX-compiled copy can be picked by the linker for the portable
// path.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "nnperf/kernels/pool.h"

namespace nnperf::detail {
namespace {

// The rescan of one output row in PyTorch's order ("val > maxval || isnan(val)": the first
// maximum, the last NaN), for a row whose windows may hold NaN: every window read whole.
void maxpool_row_scan(const PoolShape& s, const float* xp, int64_t oy, float* yrow, int32_t* arow) {
  for (int64_t ox = 0; ox < s.ow; ++ox) {
    int64_t h0, h1, w0, w1;
    pool_window(s, oy, ox, h0, h1, w0, w1);
    float best = xp[h0 * s.iw + w0];
    int64_t best_i = h0 * s.iw + w0;
    for (int64_t iy = h0; iy < h1; ++iy) {
      for (int64_t ix = w0; ix < w1; ++ix) {
        const float v = xp[iy * s.iw + ix];
        if (v > best || std::isnan(v)) {
          best = v;
          best_i = iy * s.iw + ix;
        }
      }
    }
    yrow[ox] = best;
    if (arow != nullptr) arow[ox] = static_cast<int32_t>(best_i);
  }
}

// The windows of one output row from its column maxima (colmax, and with the argmax wanted
// colidx: the flat index of each column's first maximum). A window's first maximum in scan order
// is, among its columns holding the maximum, the one whose first maximum has the smallest flat
// index. Windows that lie inside the row in full are done a window tap at a time across the row
// (vectorised); the clipped ones at the edges one by one.
void maxpool_windows(const PoolShape& s, int64_t oy, const float* colmax, const int32_t* colidx,
                     float* yrow, int32_t* arow) {
  const int64_t lo = std::min(s.ow, (s.p + s.s - 1) / s.s);  // first window with w0 >= 0
  const int64_t room = s.iw + s.p - s.k;  // windows below hi end inside the row: w0 + k <= iw
  const int64_t hi = room < 0 ? lo : std::clamp(room / s.s + 1, lo, s.ow);
  const auto clipped = [&](int64_t ox) {
    int64_t h0, h1, w0, w1;
    pool_window(s, oy, ox, h0, h1, w0, w1);
    float best = colmax[w0];
    for (int64_t ix = w0 + 1; ix < w1; ++ix) best = colmax[ix] > best ? colmax[ix] : best;
    yrow[ox] = best;
    if (arow == nullptr) return;
    int32_t idx = std::numeric_limits<int32_t>::max();
    for (int64_t ix = w0; ix < w1; ++ix) idx = colmax[ix] == best ? std::min(idx, colidx[ix]) : idx;
    arow[ox] = idx;
  };
  for (int64_t ox = 0; ox < lo; ++ox) clipped(ox);
  const float* c = colmax - s.p;  // window ox, tap j: c[ox * s + j]
  for (int64_t ox = lo; ox < hi; ++ox) yrow[ox] = c[ox * s.s];
  if (arow == nullptr) {
    for (int64_t j = 1; j < s.k; ++j) {
      for (int64_t ox = lo; ox < hi; ++ox) {
        const float v = c[ox * s.s + j];
        yrow[ox] = v > yrow[ox] ? v : yrow[ox];
      }
    }
  } else {
    const int32_t* ci = colidx - s.p;
    for (int64_t ox = lo; ox < hi; ++ox) arow[ox] = ci[ox * s.s];
    for (int64_t j = 1; j < s.k; ++j) {
      for (int64_t ox = lo; ox < hi; ++ox) {
        const float v = c[ox * s.s + j], b = yrow[ox];
        const int32_t cand = ci[ox * s.s + j], a = arow[ox];
        arow[ox] = v > b ? cand : (v == b && cand < a ? cand : a);
        yrow[ox] = v > b ? v : b;
      }
    }
  }
  for (int64_t ox = hi; ox < s.ow; ++ox) clipped(ox);
}

// One output row of max pooling: the column maxima over the window's rows (and, with the argmax
// wanted, where each column's first maximum is), contiguous and vectorised, then each window's
// maximum over those (maxpool_windows). A NaN, which max() would drop, is counted on the way; a
// row that has one is done again by maxpool_row_scan. With the argmax, the output is the input
// at it, as PyTorch's (the sign of a zero included).
void maxpool_row(const PoolShape& s, const float* xp, int64_t oy, float* colmax, int32_t* colidx,
                 float* yrow, int32_t* arow) {
  int64_t h0, h1, w0, w1;
  pool_window(s, oy, 0, h0, h1, w0, w1);
  const int64_t iw = s.iw;
  int nan = 0;
  const float* first = xp + h0 * iw;
  for (int64_t ix = 0; ix < iw; ++ix) {
    colmax[ix] = first[ix];
    nan |= first[ix] != first[ix];
  }
  const auto iw32 = static_cast<int32_t>(iw);  // a plane's flat index fits (nn/pool.cc checks)
  if (arow != nullptr) {
    const auto base = static_cast<int32_t>(h0 * iw);
    for (int32_t ix = 0; ix < iw32; ++ix) colidx[ix] = base + ix;
  }
  for (int64_t iy = h0 + 1; iy < h1; ++iy) {
    const float* row = xp + iy * iw;
    if (arow == nullptr) {
      for (int64_t ix = 0; ix < iw; ++ix) {
        const float v = row[ix];
        colmax[ix] = v > colmax[ix] ? v : colmax[ix];
        nan |= v != v;
      }
      continue;
    }
    // Written as a bitwise select and a max, with int32 indices: as `colidx[ix] = greater ?
    // base + ix : colidx[ix]` GCC stored the maxima or the indices with masked stores (vmaskmovps /
    // vpmaskmovd, slow on AMD cores, the next row's loads waiting on them) and left the portable
    // path's selects scalar. ResNet's stem pool with the argmax (pool_bench, one Zen 4 core):
    // AVX2 7.6 -> 5.7 ns per output at 32x32, 5.7 -> 3.4 at 112x112; portable 23.8 -> 7.7 and
    // 20.5 -> 5.0.
    const auto base = static_cast<int32_t>(iy * iw);
    for (int32_t ix = 0; ix < iw32; ++ix) {
      const float v = row[ix], m = colmax[ix];
      const int32_t take = -static_cast<int32_t>(v > m);  // all ones where v is the new maximum
      colidx[ix] = (colidx[ix] & ~take) | ((base + ix) & take);
      colmax[ix] = std::max(m, v);  // v > m ? v : m
      nan |= v != v;
    }
  }
  if (nan != 0) {
    maxpool_row_scan(s, xp, oy, yrow, arow);
    return;
  }
  maxpool_windows(s, oy, colmax, colidx, yrow, arow);
  if (arow != nullptr) {
    for (int64_t ox = 0; ox < s.ow; ++ox) yrow[ox] = xp[arow[ox]];
  }
}

// Every output row of one plane: xp, yp and ap (null: no argmax) at the plane's start; colmax
// and colidx hold iw values each.
void maxpool_plane(const PoolShape& s, const float* xp, float* yp, int32_t* ap, float* colmax,
                   int32_t* colidx) {
  for (int64_t oy = 0; oy < s.oh; ++oy) {
    maxpool_row(s, xp, oy, colmax, colidx, yp + oy * s.ow,
                ap != nullptr ? ap + oy * s.ow : nullptr);
  }
}

}  // namespace
}  // namespace nnperf::detail
