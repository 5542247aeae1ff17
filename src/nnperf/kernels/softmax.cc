// Softmax cross-entropy (with PyTorch's label smoothing) and row softmax. Stable: each row is
// shifted by its maximum, so exp never overflows and log never sees 0 (the max term gives
// sum >= 1). Exponentials in float, sums and the loss in double: rows are short (10..1000).
#include "nnperf/kernels/softmax.h"

#include <cmath>

namespace nnperf {

LossResult softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t mb, int64_t n,
                                 float* d_logits, float grad_scale, float label_smoothing) {
  LossResult result;
  const double s = label_smoothing;
  const double uniform = s / static_cast<double>(n);
  for (int64_t r = 0; r < mb; ++r) {
    const float* x = logits + r * n;
    const int32_t label = labels[r];
    // Everything read from x happens before d_logits (which may alias it) is written.
    float max = x[0];
    int64_t argmax = 0;
    double x_sum = 0.0;
    for (int64_t c = 0; c < n; ++c) {
      if (x[c] > max) {
        max = x[c];
        argmax = c;
      }
      x_sum += x[c];
    }
    const double x_label = x[label];
    double sum = 0.0;
    if (d_logits != nullptr) {
      float* d = d_logits + r * n;
      for (int64_t c = 0; c < n; ++c) {
        const float e = std::exp(x[c] - max);
        d[c] = e;
        sum += e;
      }
      const double inv_sum = 1.0 / sum;
      for (int64_t c = 0; c < n; ++c) {
        const double target = uniform + (c == label ? 1.0 - s : 0.0);
        d[c] = static_cast<float>((d[c] * inv_sum - target) * grad_scale);
      }
    } else {
      for (int64_t c = 0; c < n; ++c) sum += std::exp(x[c] - max);
    }
    const double lse = max + std::log(sum);
    // -sum_c target_c * (x_c - lse) = lse - (1 - s) * x_label - (s / n) * sum_c x_c
    result.loss_sum += lse - (1.0 - s) * x_label - uniform * x_sum;
    if (argmax == label) ++result.correct;
  }
  return result;
}

void softmax_rows(const float* src, float* dst, int64_t mb, int64_t n) {
  for (int64_t r = 0; r < mb; ++r) {
    const float* x = src + r * n;
    float* y = dst + r * n;
    float max = x[0];
    for (int64_t c = 1; c < n; ++c) max = x[c] > max ? x[c] : max;
    double sum = 0.0;
    for (int64_t c = 0; c < n; ++c) {
      y[c] = std::exp(x[c] - max);
      sum += y[c];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t c = 0; c < n; ++c) y[c] *= inv;
  }
}

}  // namespace nnperf
