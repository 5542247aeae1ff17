// The float64 reference convolution every algorithm is checked against: the definition in plain
// nested loops, no tricks. Also returns per output the sum of |src*wei| (+|bias|), the scale of
// the rounding error bound |y - ref| <= c * K * eps * sum|a*b| + eps * |ref|.
#include <cmath>
#include <cstdint>

#include "nnperf/core/interrupt.h"
#include "nnperf/kernels/conv/conv.h"

namespace nnperf {

void conv2d_reference(const ConvProblem& p, const float* src, const float* wei, const float* bias,
                      double* dst, double* abs_sum) {
  const int64_t oh = p.oh(), ow = p.ow(), icg = p.icg(), ocg = p.ocg();
  for (int64_t n = 0; n < p.mb; ++n) {
    for (int64_t o = 0; o < p.oc; ++o) {
      check_interrupt();  // a large problem's reference runs for minutes: Ctrl-C between planes
      const int64_t grp = o / ocg;
      for (int64_t y = 0; y < oh; ++y) {
        for (int64_t x = 0; x < ow; ++x) {
          double acc = 0.0, abs_acc = 0.0;
          for (int64_t c = 0; c < icg; ++c) {
            const int64_t ci = grp * icg + c;
            for (int64_t r = 0; r < p.kh; ++r) {
              const int64_t h = y * p.sh - p.ph + r * p.dh;
              if (h < 0 || h >= p.ih) continue;
              for (int64_t s = 0; s < p.kw; ++s) {
                const int64_t w = x * p.sw - p.pw + s * p.dw;
                if (w < 0 || w >= p.iw) continue;
                const double a = src[((n * p.ic + ci) * p.ih + h) * p.iw + w];
                const double b = wei[((o * icg + c) * p.kh + r) * p.kw + s];
                acc += a * b;
                abs_acc += std::fabs(a * b);
              }
            }
          }
          if (bias != nullptr) {
            acc += bias[o];
            abs_acc += std::fabs(static_cast<double>(bias[o]));
          }
          const int64_t idx = ((n * p.oc + o) * oh + y) * ow + x;
          dst[idx] = acc;
          if (abs_sum != nullptr) abs_sum[idx] = abs_acc;
        }
      }
    }
  }
}

}  // namespace nnperf
