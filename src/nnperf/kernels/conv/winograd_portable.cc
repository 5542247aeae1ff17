// Portable Winograd F(4x4, 3x3) stage kernels: scalar transforms and a GEMM micro-kernel on
// 4-float vector extensions. The reference path for machines without AVX2 and the
// NNPERF_SIMD=scalar test run; winograd_avx2.cc computes the same expressions in FMA registers.
#include <algorithm>
#include <cstdint>

#include "nnperf/kernels/conv/winograd_internal.h"

namespace nnperf::winograd {

namespace {

// r = B^T d for one column of 6 (Lavin & Gray's points 0, 1, -1, 2, -2, infinity):
//   B^T = [4  0 -5  0 1 0; 0 -4 -4  1 1 0; 0  4 -4 -1 1 0;
//          0 -2 -1  2 1 0; 0  2 -1 -2 1 0; 0  4  0 -5 0 1]
void input_1d(const float* d, float* r) {
  r[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
  r[1] = (d[3] + d[4]) - 4.0f * (d[1] + d[2]);
  r[2] = (d[4] - d[3]) + 4.0f * (d[1] - d[2]);
  r[3] = (d[4] - d[2]) + 2.0f * (d[3] - d[1]);
  r[4] = (d[4] - d[2]) - 2.0f * (d[3] - d[1]);
  r[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
}

// o = A^T m:  A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]
void output_1d(const float* m, float* o) {
  const float a12 = m[1] + m[2], s12 = m[1] - m[2], a34 = m[3] + m[4], s34 = m[3] - m[4];
  o[0] = m[0] + a12 + a34;
  o[1] = s12 + 2.0f * s34;
  o[2] = a12 + 4.0f * a34;
  o[3] = s12 + 8.0f * s34 + m[5];
}

int64_t at(const TileLayout& l, int64_t xi, int64_t t, int64_t c) {
  return xi * l.xi_stride + t * l.t_stride + (c / 8) * l.group_stride + c % 8;
}

void input_transform(const Geometry& g, const float* src, int64_t t0, int64_t count, float* v,
                     const TileLayout& lv) {
  const int64_t per_image = g.tiles_h * g.tiles_w, plane = g.ih * g.iw;
  for (int64_t t = t0; t < t0 + count; ++t) {
    const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
    const int64_t y0 = ty * kTile - g.ph, x0 = tx * kTile - g.pw;
    for (int64_t c = 0; c < g.icp; ++c) {
      float d[kAlpha][kAlpha] = {}, e[kAlpha][kAlpha], col[kAlpha], r[kAlpha];
      if (c < g.ic) {
        const float* s = src + (n * g.ic + c) * plane;
        for (int64_t y = 0; y < kAlpha; ++y) {
          if (y0 + y < 0 || y0 + y >= g.ih) continue;
          for (int64_t x = 0; x < kAlpha; ++x) {
            if (x0 + x >= 0 && x0 + x < g.iw) d[y][x] = s[(y0 + y) * g.iw + x0 + x];
          }
        }
      }
      for (int64_t y = 0; y < kAlpha; ++y) input_1d(d[y], e[y]);  // along x
      for (int64_t xx = 0; xx < kAlpha; ++xx) {                   // then along y
        for (int64_t y = 0; y < kAlpha; ++y) col[y] = e[y][xx];
        input_1d(col, r);
        for (int64_t xy = 0; xy < kAlpha; ++xy) v[at(lv, xy * kAlpha + xx, t - t0, c)] = r[xy];
      }
    }
  }
}

// 4-float vectors (GCC/Clang vector extensions: SSE2 on baseline x86-64, NEON elsewhere).
using V4 = float __attribute__((vector_size(16)));

V4 load4(const float* p) {
  V4 v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}

// M(j, half .. half+7) = sum_c U[c][half .. half+7] * V(j, c) for j < kNrT, over `groups` groups
// of 8 channels (V channel-blocked: tile j of a group at v + 8j): 8 output channels of the
// 16-wide panel at a time, so the 2 x kNrT accumulators fit in 16 SSE registers.
template <int kNrT>
void gemm_tile(int64_t groups, const float* u, const float* v, int64_t v_group, float* m,
               int64_t m_group) {
  for (int half = 0; half < kOcBlock; half += 8) {
    V4 acc[kNrT][2] = {};
    for (int64_t cg = 0; cg < groups; ++cg) {
      const float* ug = u + cg * 8 * kOcBlock + half;
      const float* vg = v + cg * v_group;
      for (int cc = 0; cc < 8; ++cc) {
        const V4 u0 = load4(ug + cc * kOcBlock), u1 = load4(ug + cc * kOcBlock + 4);
        for (int j = 0; j < kNrT; ++j) {
          const float b = vg[j * 8 + cc];
          acc[j][0] += u0 * b;
          acc[j][1] += u1 * b;
        }
      }
    }
    float* mh = m + (half / 8) * m_group;
    for (int j = 0; j < kNrT; ++j) __builtin_memcpy(mh + j * 8, acc[j], sizeof(acc[j]));
  }
}

void batched_gemm(const Geometry& g, const float* u, const float* v, const TileLayout& lv,
                  int64_t count, int64_t o0, int64_t o1, float* m, const TileLayout& lm) {
  using Tile = void (*)(int64_t, const float*, const float*, int64_t, float*, int64_t);
  static constexpr Tile kTiles[kNr + 1] = {nullptr,      gemm_tile<1>, gemm_tile<2>, gemm_tile<3>,
                                           gemm_tile<4>, gemm_tile<5>, gemm_tile<6>};
  for (int64_t xi = 0; xi < kXi; ++xi) {
    const float* u_xi = u + xi * g.ocp * g.icp;
    for (int64_t ob = o0; ob < o1; ob += kOcBlock) {
      const float* panel = u_xi + ob * g.icp;  // icp x 16
      for (int64_t tg = 0; tg < count; tg += kNr) {
        kTiles[std::min(kNr, count - tg)](g.icp / 8, panel, v + at(lv, xi, tg, 0), lv.group_stride,
                                          m + at(lm, xi, tg, ob - o0), lm.group_stride);
      }
    }
  }
}

void output_transform(const Geometry& g, const float* m, const TileLayout& lm, int64_t t0,
                      int64_t count, int64_t o0, int64_t o1, const float* bias, float* dst) {
  const int64_t per_image = g.tiles_h * g.tiles_w;
  for (int64_t t = t0; t < t0 + count; ++t) {
    const int64_t n = t / per_image, ty = t % per_image / g.tiles_w, tx = t % g.tiles_w;
    const int64_t oy = ty * kTile, ox = tx * kTile;
    const int64_t rows = std::min(kTile, g.oh - oy), cols = std::min(kTile, g.ow - ox);
    for (int64_t o = o0; o < o1; ++o) {
      float s[kTile][kAlpha], col[kAlpha], out[kTile];
      for (int64_t xx = 0; xx < kAlpha; ++xx) {  // along y
        for (int64_t xy = 0; xy < kAlpha; ++xy) {
          col[xy] = m[at(lm, xy * kAlpha + xx, t - t0, o - o0)];
        }
        output_1d(col, out);
        for (int64_t y = 0; y < kTile; ++y) s[y][xx] = out[y];
      }
      const float b = bias != nullptr ? bias[o] : 0.0f;
      for (int64_t y = 0; y < rows; ++y) {  // then along x
        output_1d(s[y], out);
        float* d = dst + ((n * g.oc + o) * g.oh + oy + y) * g.ow + ox;
        for (int64_t x = 0; x < cols; ++x) d[x] = out[x] + b;
      }
    }
  }
}

}  // namespace

const Kernels kKernelsPortable = {input_transform, batched_gemm, output_transform,
                                  transform_filters};

}  // namespace nnperf::winograd
