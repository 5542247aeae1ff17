// Winograd's weight transform (winograd_internal.h's transform_filters), compiled once per
// instruction set: winograd.cc (any x86-64) and winograd_filter_avx2.cc, which CMakeLists.txt
// builds with contraction off, so both give the same bits. Internal linkage: no AVX2-compiled
// copy can be picked by the linker for the portable path.
#pragma once
#include <cstdint>

#include "nnperf/kernels/conv/winograd_internal.h"

namespace nnperf::winograd {
namespace {

// G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1]. The
// terms with a zero of G are left out (adding 0 * x changes nothing but the sign of a zero), so
// G's first and last rows (and columns of G^T) cost a multiply or nothing: about a third fewer
// operations than the dense products, each remaining one in the same order.
void filter_transform(const double (*g)[kFilterLanes], float (*u)[kFilterLanes]) {
  static constexpr double kG[kAlpha][3] = {{1.0 / 4, 0, 0},
                                           {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                           {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                           {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                           {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                           {0, 0, 1}};
  double gg[kAlpha][3][kFilterLanes];  // G g, per lane
  for (int j = 0; j < 3; ++j) {
    for (int64_t l = 0; l < kFilterLanes; ++l) {
      gg[0][j][l] = kG[0][0] * g[j][l];
      gg[kAlpha - 1][j][l] = g[6 + j][l];
    }
    for (int i = 1; i < kAlpha - 1; ++i) {
      for (int64_t l = 0; l < kFilterLanes; ++l) {
        gg[i][j][l] = kG[i][0] * g[j][l] + kG[i][1] * g[3 + j][l] + kG[i][2] * g[6 + j][l];
      }
    }
  }
  for (int i = 0; i < kAlpha; ++i) {
    float* first = u[i * kAlpha];
    float* last = u[i * kAlpha + kAlpha - 1];
    for (int64_t l = 0; l < kFilterLanes; ++l) {
      first[l] = static_cast<float>(gg[i][0][l] * kG[0][0]);
      last[l] = static_cast<float>(gg[i][2][l]);
    }
    for (int k = 1; k < kAlpha - 1; ++k) {
      for (int64_t l = 0; l < kFilterLanes; ++l) {
        u[i * kAlpha + k][l] = static_cast<float>(gg[i][0][l] * kG[k][0] + gg[i][1][l] * kG[k][1] +
                                                  gg[i][2][l] * kG[k][2]);
      }
    }
  }
}

}  // namespace
}  // namespace nnperf::winograd
