#include "nnperf/kernels/conv/conv_crop.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "nnperf/kernels/conv/conv_internal.h"

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

// Both copy whole OIHW planes in parallel; a plane's live taps are a few floats (one for a 3x3
// convolution of a 1x1 map), so they are copied element by element rather than by memcpy calls.
void conv_crop_weights(const ConvProblem& p, const ConvCrop& c, const float* w, float* wc,
                       int threads) {
  const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, planes = p.oc * p.icg();
  const int t = conv_useful_copy_threads(threads, planes * p.kh * p.kw, planes);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t n = 0; n < planes; ++n) {
    const float* src = w + (n * p.kh + c.i0) * p.kw + c.j0;
    float* dst = wc + n * kh * kw;
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) dst[i * kw + j] = src[i * p.kw + j];
    }
  }
}

void conv_uncrop_weight_grad(const ConvProblem& p, const ConvCrop& c, const float* dwc, float* dw,
                             int threads) {
  const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, planes = p.oc * p.icg(), khw = p.kh * p.kw;
  const int t = conv_useful_copy_threads(threads, planes * khw, planes);
#pragma omp parallel num_threads(t) if (t > 1)
  {
    // This thread's planes: zeroed in one pass, then the live taps written over the zeros.
    const int64_t id = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t n0 = planes * id / nt, n1 = planes * (id + 1) / nt;
    std::fill(dw + n0 * khw, dw + n1 * khw, 0.0f);
    for (int64_t n = n0; n < n1; ++n) {
      const float* src = dwc + n * kh * kw;
      float* dst = dw + (n * p.kh + c.i0) * p.kw + c.j0;
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) dst[i * p.kw + j] = src[i * kw + j];
      }
    }
  }
}

}  // namespace nnperf
