// Dead kernel taps: a tap row (column) whose input row (column) lies in the padding for every
// output position adds only zeros. A 3x3 "same" convolution of a 1x1 map (ResNet-18's layer4 at
// 32x32 input) reads nothing but its centre tap: it is the 1x1 convolution of the centre weights,
// with 1/9 of the arithmetic. conv_live_taps finds the live rectangle; the cropped problem, the
// cropped weights and the un-cropped weight gradient (dead taps: exactly 0) let any algorithm run
// the smaller problem with the same result.
#pragma once
#include <cstdint>

#include "nnperf/kernels/conv/conv.h"

namespace nnperf {

struct ConvCrop {
  int64_t i0 = 0, i1 = 0, j0 = 0, j1 = 0;  // live taps: rows [i0, i1), columns [j0, j1)
  bool active = false;  // false: every tap is live, or the cropped problem cannot be expressed
  ConvProblem cropped;  // p with kh = i1 - i0, kw = j1 - j0, ph -= i0 * dh, pw -= j0 * dw
};

// The live taps of p. The live rows form an interval (a tap is live when one output position
// reads inside the image, and both bounds on i are monotone); cropping is used when it removes
// taps, keeps the padding non-negative and gives the same output size (symmetric padding).
ConvCrop conv_live_taps(const ConvProblem& p);

// wc[o][c][i][j] = w[o][c][i0 + i][j0 + j] (OIHW, p's shapes), on up to `threads` threads.
void conv_crop_weights(const ConvProblem& p, const ConvCrop& c, const float* w, float* wc,
                       int threads = 1);
// dw = dwc in the live taps and 0 in the dead ones (their exact gradient).
void conv_uncrop_weight_grad(const ConvProblem& p, const ConvCrop& c, const float* dwc, float* dw,
                             int threads = 1);

}  // namespace nnperf
