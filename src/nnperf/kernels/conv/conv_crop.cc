#include "nnperf/kernels/conv/conv_crop.h"

#include <algorithm>

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

namespace {

// Planes per step of both copies: a block's full planes (9 floats each for 3x3) stay in L1/L2
// while each live tap makes its strided pass over them.
constexpr int64_t kPlaneBlock = 1024;

// Calls body(n0, n1) for blocks of planes [0, planes), split between up to `threads` threads.
template <typename Body>
void for_plane_blocks(int64_t planes, int64_t floats, int threads, const Body& body) {
  const int64_t blocks = conv_ceil_div(planes, kPlaneBlock);
  const int t = conv_useful_copy_threads(threads, floats, blocks);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t b = 0; b < blocks; ++b) {
    body(b * kPlaneBlock, std::min(planes, (b + 1) * kPlaneBlock));
  }
}

}  // namespace

// Both go tap by tap over a block of planes: one strided loop per live tap (dst[n * kc + t] =
// src[n * khw + off]). A plane's live taps are a few floats (one for a 3x3 convolution of a 1x1
// map), and a loop per plane over them took 5x as long: crop 0.59-0.63 ms against 0.12 for
// ResNet-18's 512x512 3x3 weights, un-crop (all planes zeroed in one pass, then the copy) 0.58-0.62
// against 0.22 (one Zen 4 core, data in L3). The un-crop zeroes a block right before its copies,
// while the block is in cache.
void conv_crop_weights(const ConvProblem& p, const ConvCrop& c, const float* w, float* wc,
                       int threads) {
  const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, kc = kh * kw, khw = p.kh * p.kw;
  const int64_t planes = p.oc * p.icg();
  for_plane_blocks(planes, planes * khw, threads, [&](int64_t n0, int64_t n1) {
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        const float* src = w + (c.i0 + i) * p.kw + c.j0 + j;
        float* dst = wc + i * kw + j;
        for (int64_t n = n0; n < n1; ++n) dst[n * kc] = src[n * khw];
      }
    }
  });
}

void conv_uncrop_weight_grad(const ConvProblem& p, const ConvCrop& c, const float* dwc, float* dw,
                             int threads) {
  const int64_t kh = c.i1 - c.i0, kw = c.j1 - c.j0, kc = kh * kw, khw = p.kh * p.kw;
  const int64_t planes = p.oc * p.icg();
  for_plane_blocks(planes, planes * khw, threads, [&](int64_t n0, int64_t n1) {
    std::fill(dw + n0 * khw, dw + n1 * khw, 0.0f);  // the block's dead taps: exactly 0
    for (int64_t i = 0; i < kh; ++i) {
      for (int64_t j = 0; j < kw; ++j) {
        const float* src = dwc + i * kw + j;
        float* dst = dw + (c.i0 + i) * p.kw + c.j0 + j;
        for (int64_t n = n0; n < n1; ++n) dst[n * khw] = src[n * kc];
      }
    }
  });
}

}  // namespace nnperf
