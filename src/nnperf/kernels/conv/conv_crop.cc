#include "nnperf/kernels/conv/conv_crop.h"

#include <algorithm>
#include <cstring>

namespace nnperf {

namespace {

// Live taps [lo, hi) along one axis: tap t reads in = o * s - pad + t * d for o in [0, out).
void live_range(int64_t in, int64_t out, int64_t k, int64_t s, int64_t pad, int64_t d, int64_t& lo,
                int64_t& hi) {
  lo = k;
  hi = 0;
  for (int64_t t = 0; t < k; ++t) {
    bool hit = false;  // some output reads inside [0, in) through tap t
    for (int64_t o = 0; o < out && !hit; ++o) {
      const int64_t x = o * s - pad + t * d;
      hit = x >= 0 && x < in;
    }
    if (hit) {
      lo = std::min(lo, t);
      hi = std::max(hi, t + 1);
    }
  }
}

}  // namespace

ConvCrop conv_live_taps(const ConvProblem& p) {
  ConvCrop c;
  if (!p.invalid_reason().empty()) return c;
  live_range(p.ih, p.oh(), p.kh, p.sh, p.ph, p.dh, c.i0, c.i1);
  live_range(p.iw, p.ow(), p.kw, p.sw, p.pw, p.dw, c.j0, c.j1);
  if (c.i1 <= c.i0 || c.j1 <= c.j0) return c;  // no live tap (cannot happen for a valid p)
  if (c.i1 - c.i0 == p.kh && c.j1 - c.j0 == p.kw) return c;
  ConvProblem q = p;
  q.kh = c.i1 - c.i0;
  q.kw = c.j1 - c.j0;
  q.ph = p.ph - c.i0 * p.dh;
  q.pw = p.pw - c.j0 * p.dw;
  if (q.ph < 0 || q.pw < 0 || !q.invalid_reason().empty() || q.oh() != p.oh() || q.ow() != p.ow()) {
    return c;
  }
  c.cropped = q;
  c.active = true;
  return c;
}

void conv_crop_weights(const ConvProblem& p, const ConvCrop& c, const float* w, float* wc) {
  const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, planes = p.oc * p.icg();
  for (int64_t n = 0; n < planes; ++n) {
    for (int64_t i = 0; i < kh; ++i) {
      std::memcpy(wc + (n * kh + i) * kw, w + (n * p.kh + c.i0 + i) * p.kw + c.j0,
                  static_cast<std::size_t>(kw) * sizeof(float));
    }
  }
}

void conv_uncrop_weight_grad(const ConvProblem& p, const ConvCrop& c, const float* dwc, float* dw) {
  const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, planes = p.oc * p.icg();
  std::fill(dw, dw + planes * p.kh * p.kw, 0.0f);
  for (int64_t n = 0; n < planes; ++n) {
    for (int64_t i = 0; i < kh; ++i) {
      std::memcpy(dw + (n * p.kh + c.i0 + i) * p.kw + c.j0, dwc + (n * kh + i) * kw,
                  static_cast<std::size_t>(kw) * sizeof(float));
    }
  }
}

}  // namespace nnperf
