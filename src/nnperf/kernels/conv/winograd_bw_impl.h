// Backward-weights winograd_nonfused's transforms (winograd_bw_internal.h), written once over
// SIMD traits K (kernels/simd_traits.h) and compiled per level: winograd_backward_weights.cc
// (portable) and winograd_bw_avx2.cc. The two input transforms take K::kWidth tiles per vector and
// their tiles kPiece at a time, in two steps:
//  1. gather: per tile row of the piece, the input rows its tiles read are copied (zeros for
//     padding and for an odd output's missing last row or column) into arrays laid out in tile
//     order, 2 floats per tile: a[r] holds columns 0-1 of each tile's patch row r, c[r] columns
//     2-3 (X), rows[r] dY row r's 2 columns. Tile k's pair is at 2k, across tile rows and
//     images, so
//  2. transform: K::kWidth tiles per vector read their pairs with K::load_even_odd, and every
//     store is a whole vector (the piece's last may also write up to kMaxWidth - 1 floats past
//     it: the next piece overwrites them, or they fall in the room out's rows keep for them).
// A vector's tiles may come from several tile rows (a first version vectorised within each tile
// row: at 7x7 maps, 4 tiles a row, half of every vector was wasted). The transforms only add and
// subtract, and the inverse's halvings are exact: every level gives the same bits. Internal
// linkage and no standard-library inline code, so no AVX2 copy can be picked by the linker for
// the portable path.
#pragma once
#include <cstdint>

#include "nnperf/kernels/conv/conv_simd.h"
#include "nnperf/kernels/conv/winograd_bw_internal.h"
#include "nnperf/kernels/simd_traits.h"

namespace nnperf::winograd_bw {
namespace {

constexpr int64_t kPiece = 256;                         // tiles per gather: 2 KiB per array
constexpr int64_t kMaxWidth = 16;                       // the widest K::kWidth
constexpr int64_t kPairs = 2 * kPiece + 2 * kMaxWidth;  // floats per array, with the overrun

using conv_simd::max_i64;
using conv_simd::min_i64;

// Walks tiles [t, end) tile row by tile row: img, ty, tx of the current one; len tiles from it
// lie in its tile row. One division at the start, none per row (ResNet-18's 2x2 maps at 32x32
// input have one tile per row).
struct Strips {
  const Geometry& g;
  int64_t img, ty, tx, len, left;
  Strips(const Geometry& geo, int64_t t, int64_t end) : g(geo), left(end - t) {
    img = t / (g.th * g.tw);
    ty = t / g.tw % g.th;
    tx = t % g.tw;
    len = min_i64(g.tw - tx, left);
  }
  bool done() const { return left == 0; }
  void next() {
    left -= len;
    tx += len;
    if (tx == g.tw) {
      tx = 0;
      if (++ty == g.th) {
        ty = 0;
        ++img;
      }
    }
    len = min_i64(g.tw - tx, left);
  }
};

// row[i] = src[x0 + i] for i < cols where 0 <= x0 + i < width, else 0 (src == nullptr: all 0);
// in whole vectors, so up to K::kWidth - 1 floats past cols are written too (0 or copied). src is
// read only where the row is copied.
template <class K>
inline void copy_padded(const float* src, int64_t x0, int64_t width, int64_t cols, float* row) {
  constexpr int64_t w = K::kWidth;
  const int64_t lo = src == nullptr ? cols : min_i64(max_i64(0, -x0), cols);
  const int64_t hi = src == nullptr ? cols : max_i64(lo, min_i64(cols, width - x0));
  const typename K::V zero = K::zero();
  for (int64_t i = 0; i < lo; i += w) K::storeu(row + i, zero);
  int64_t i = lo;
  for (; i + w <= hi; i += w) K::storeu(row + i, K::loadu(src + x0 + i));
  if (i < hi) K::storeu(row + i, K::load_partial(src + x0 + i, static_cast<int>(hi - i)));
  for (i = hi; i < cols; i += w) K::storeu(row + i, zero);
}

// Zeros from the piece's last pair to what its last vector reads.
template <class K>
inline void zero_tail(float* row, int64_t len) {
  const int64_t end = 2 * ((len + K::kWidth - 1) / K::kWidth * K::kWidth);
  for (int64_t i = 2 * len; i < end; i += K::kWidth) K::storeu(row + i, K::zero());
}

// B^T d B per tile:
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
template <class K>
void input_transform(const Geometry& g, const float* x, int64_t t0, int64_t n, float* out,
                     int64_t stride) {
  using V = typename K::V;
  alignas(64) float a[4][kPairs], c[4][kPairs];
  for (int64_t p0 = 0; p0 < n; p0 += kPiece) {
    const int64_t len = min_i64(kPiece, n - p0);
    int64_t at = 0;  // tiles gathered
    for (Strips s(g, t0 + p0, t0 + p0 + len); !s.done(); at += s.len, s.next()) {
      const float* image = x + s.img * g.src_image;
      const int64_t x0 = 2 * s.tx - g.pw;
      for (int r = 0; r < 4; ++r) {
        const int64_t y = 2 * s.ty - g.ph + r;
        const float* src = y >= 0 && y < g.ih ? image + y * g.iw : nullptr;
        copy_padded<K>(src, x0, g.iw, 2 * s.len, a[r] + 2 * at);
        copy_padded<K>(src, x0 + 2, g.iw, 2 * s.len, c[r] + 2 * at);
      }
    }
    for (int r = 0; r < 4; ++r) {
      zero_tail<K>(a[r], len);
      zero_tail<K>(c[r], len);
    }
    float* o = out + p0;
    for (int64_t k = 0; k < len; k += K::kWidth) {
      V d[4][4];
      for (int r = 0; r < 4; ++r) {
        K::load_even_odd(a[r] + 2 * k, d[r][0], d[r][1]);
        K::load_even_odd(c[r] + 2 * k, d[r][2], d[r][3]);
      }
      V e[4][4];  // B^T d
      for (int q = 0; q < 4; ++q) {
        e[0][q] = K::sub(d[0][q], d[2][q]);
        e[1][q] = K::add(d[1][q], d[2][q]);
        e[2][q] = K::sub(d[2][q], d[1][q]);
        e[3][q] = K::sub(d[1][q], d[3][q]);
      }
      for (int r = 0; r < 4; ++r) {  // (B^T d) B
        float* p = o + r * 4 * stride + k;
        K::storeu(p, K::sub(e[r][0], e[r][2]));
        K::storeu(p + stride, K::add(e[r][1], e[r][2]));
        K::storeu(p + 2 * stride, K::sub(e[r][2], e[r][1]));
        K::storeu(p + 3 * stride, K::sub(e[r][1], e[r][3]));
      }
    }
  }
}

// A dY A^T per tile: A = [1 0; 1 1; 1 -1; 0 -1], so each of a column's rows is g0, g0 + g1,
// g0 - g1 or -g1, and the same along the rows.
template <class K>
void grad_transform(const Geometry& g, const float* dy, int64_t t0, int64_t n, float* out,
                    int64_t stride) {
  using V = typename K::V;
  alignas(64) float rows[2][kPairs];
  for (int64_t p0 = 0; p0 < n; p0 += kPiece) {
    const int64_t len = min_i64(kPiece, n - p0);
    int64_t at = 0;  // tiles gathered
    for (Strips s(g, t0 + p0, t0 + p0 + len); !s.done(); at += s.len, s.next()) {
      const float* image = dy + s.img * g.dy_image;
      for (int r = 0; r < 2; ++r) {
        const int64_t y = 2 * s.ty + r;
        const float* src = y < g.oh ? image + y * g.ow : nullptr;
        copy_padded<K>(src, 2 * s.tx, g.ow, 2 * s.len, rows[r] + 2 * at);
      }
    }
    zero_tail<K>(rows[0], len);
    zero_tail<K>(rows[1], len);
    float* o = out + p0;
    const V zero = K::zero();
    for (int64_t k = 0; k < len; k += K::kWidth) {
      V g00, g01, g10, g11;
      K::load_even_odd(rows[0] + 2 * k, g00, g01);
      K::load_even_odd(rows[1] + 2 * k, g10, g11);
      const V c0[4] = {g00, K::add(g00, g10), K::sub(g00, g10), K::sub(zero, g10)};
      const V c1[4] = {g01, K::add(g01, g11), K::sub(g01, g11), K::sub(zero, g11)};
      for (int r = 0; r < 4; ++r) {
        float* p = o + r * 4 * stride + k;
        K::storeu(p, c0[r]);
        K::storeu(p + stride, K::add(c0[r], c1[r]));
        K::storeu(p + 2 * stride, K::sub(c0[r], c1[r]));
        K::storeu(p + 3 * stride, K::sub(zero, c1[r]));
      }
    }
  }
}

// dW = G^T S G per input channel, K::kWidth channels per vector (M's rows are contiguous in c):
//   G^T = [1 .5 .5 0; 0 .5 -.5 0; 0 .5 .5 1]
// The 9 taps of each channel are contiguous in dW (OIHW), so each vector's 9 results are written
// out channel by channel from a small buffer.
template <class K>
void inverse_transform(const float* m, int64_t mg, int64_t icg, float* dw) {
  using V = typename K::V;
  const V half = K::set1(0.5f);
  alignas(64) float taps[9][kMaxWidth];
  for (int64_t c = 0; c < icg; c += K::kWidth) {
    const int live = static_cast<int>(min_i64(K::kWidth, icg - c));
    V s[4][4];
    for (int xi = 0; xi < 16; ++xi) {
      const float* q = m + xi * mg + c;
      s[xi / 4][xi % 4] = live == K::kWidth ? K::loadu(q) : K::load_partial(q, live);
    }
    V h[3][4];  // G^T s
    for (int q = 0; q < 4; ++q) {
      const V sum = K::mul(half, K::add(s[1][q], s[2][q]));
      h[0][q] = K::add(s[0][q], sum);
      h[1][q] = K::mul(half, K::sub(s[1][q], s[2][q]));
      h[2][q] = K::add(sum, s[3][q]);
    }
    for (int r = 0; r < 3; ++r) {  // (G^T s) G
      const V sum = K::mul(half, K::add(h[r][1], h[r][2]));
      K::storeu(taps[r * 3], K::add(h[r][0], sum));
      K::storeu(taps[r * 3 + 1], K::mul(half, K::sub(h[r][1], h[r][2])));
      K::storeu(taps[r * 3 + 2], K::add(sum, h[r][3]));
    }
    float* out = dw + c * 9;
    for (int l = 0; l < live; ++l) {
      for (int tap = 0; tap < 9; ++tap) out[l * 9 + tap] = taps[tap][l];
    }
  }
}

}  // namespace
}  // namespace nnperf::winograd_bw
