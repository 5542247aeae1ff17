// Backward-weights winograd_nonfused (winograd_backward_weights.cc): its transforms per SIMD
// level (winograd_bw_impl.h, compiled in winograd_backward_weights.cc for any x86-64 and in
// winograd_bw_avx2.cc with -mavx2 -mfma). Only plain structs and declarations here: nothing inline
// is compiled both with and without -mavx2.
#pragma once
#include <cstdint>

#include "nnperf/core/cpu.h"

namespace nnperf {

struct ConvBackwardArgs;

namespace winograd_bw {

// What the transforms need of the problem, computed once per run (ConvProblem's inline members
// stay out of the AVX2 file).
struct Geometry {
  int64_t ih, iw, oh, ow, ph, pw;
  int64_t th, tw;               // 2x2 output tiles per column and per row
  int64_t src_image, dy_image;  // floats from one image to the next in X and in dY
};

// Tiles are numbered over images, tile rows and tile columns; a transform covers tiles
// [t0, t0 + n) of one channel. Transform position xi's row starts at out + xi * stride, tile
// t0 + j at its j-th float; each row is written in whole vectors, up to 15 floats past tile n - 1
// (values of no tile).
struct Transforms {
  // out[xi][j] = (B^T X B)[xi] of tile t0 + j's 4x4 input patch, read from channel plane x of
  // image 0 (image k at x + k * src_image); zeros outside the image.
  void (*input)(const Geometry& g, const float* x, int64_t t0, int64_t n, float* out,
                int64_t stride);
  // out[xi][j] = (A dY A^T)[xi] of tile t0 + j's 2x2 output gradient, from channel plane dy of
  // image 0; zeros where an odd output's last tile row or column has no dY.
  void (*grad)(const Geometry& g, const float* dy, int64_t t0, int64_t n, float* out,
               int64_t stride);
  // dw[c][3x3] = G^T S G for c < icg, where S[xi] = m[xi * mg + c]: one output channel's dW
  // (OIHW) from its row of the 16 M matrices.
  void (*inverse)(const float* m, int64_t mg, int64_t icg, float* dw);
};
extern const Transforms kTransformsPortable;
extern const Transforms kTransformsAvx2;  // call only when the CPU has AVX2 + FMA
// The transforms for `level`, capped at what this CPU supports.
const Transforms& transforms_for(SimdLevel level);

}  // namespace winograd_bw

// The row with explicit transforms (tests run every SIMD path; the row uses active_simd()'s).
void conv_winograd_bw_run_with(const winograd_bw::Transforms& t, const ConvBackwardArgs& a);

}  // namespace nnperf
