#include "nnperf/kernels/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/threads.h"
#include "nnperf/kernels/batchnorm_impl.h"
#include "nnperf/kernels/batchnorm_internal.h"

namespace nnperf {

namespace {

// Below this many elements a second thread costs more than it saves (~20 us of one core).
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements) {
  return nnperf::useful_threads(threads, static_cast<double>(elements), kMinElementsPerThread);
}

// The loops for the instruction set active_simd() allows.
const detail::BatchNormPaths& paths() {
  static const detail::BatchNormPaths portable{&detail::train_forward_channel,
                                               &detail::backward_channel, &detail::apply_rows};
  switch (active_simd()) {
    case SimdLevel::kAvx512:
      return detail::kBatchNormPathsAvx512;
    case SimdLevel::kAvx2:
      return detail::kBatchNormPathsAvx2;
    default:
      return portable;
  }
}

}  // namespace

void batchnorm_apply(const BatchNormShape& s, const float* x, const float* scale,
                     const float* shift, float* y, int threads) {
  const int t = useful_threads(threads, s.mb * s.channels * s.plane);
  const auto apply_rows = paths().apply_rows;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t r = 0; r < s.mb * s.channels; ++r) apply_rows(s, x, scale, shift, y, r, r + 1);
}

void batchnorm_train_forward(const BatchNormTrainArgs& a) {
  const BatchNormShape& s = a.shape;
  const int t = useful_threads(a.threads, s.mb * s.channels * s.plane);
  const auto channel = paths().train_forward_channel;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) channel(a, c);
}

void batchnorm_backward(const BatchNormBackwardArgs& a) {
  const BatchNormShape& s = a.shape;
  const int t = useful_threads(a.threads, s.mb * s.channels * s.plane);
  const auto channel = paths().backward_channel;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) channel(a, c);
}

void batchnorm_train_forward_reference(const BatchNormShape& s, const float* x, const float* gamma,
                                       const float* beta, double eps, double* y, double* mean,
                                       double* var) {
  const double count = static_cast<double>(s.mb * s.plane);
  for (int64_t c = 0; c < s.channels; ++c) {
    double m = 0, v = 0;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) m += x[(n * s.channels + c) * s.plane + i];
    m /= count;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const double d = x[(n * s.channels + c) * s.plane + i] - m;
        v += d * d;
      }
    v /= count;
    mean[c] = m;
    var[c] = v;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const int64_t k = (n * s.channels + c) * s.plane + i;
        y[k] = (x[k] - m) / std::sqrt(v + eps) * gamma[c] + beta[c];
      }
  }
}

void batchnorm_backward_reference(const BatchNormShape& s, const float* x, const float* dy,
                                  const float* gamma, double eps, double* dx, double* d_gamma,
                                  double* d_beta) {
  const double count = static_cast<double>(s.mb * s.plane);
  std::vector<double> y(static_cast<std::size_t>(s.mb * s.channels * s.plane));
  std::vector<double> mean(static_cast<std::size_t>(s.channels)), var(mean.size());
  std::vector<float> zeros(mean.size(), 0.0f);
  batchnorm_train_forward_reference(s, x, gamma, zeros.data(), eps, y.data(), mean.data(),
                                    var.data());
  for (int64_t c = 0; c < s.channels; ++c) {
    const double inv = 1.0 / std::sqrt(var[c] + eps);
    double sdy = 0, sdyx = 0;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const int64_t k = (n * s.channels + c) * s.plane + i;
        sdy += dy[k];
        sdyx += dy[k] * (x[k] - mean[c]) * inv;
      }
    d_gamma[c] = sdyx;
    d_beta[c] = sdy;
    for (int64_t n = 0; n < s.mb; ++n)
      for (int64_t i = 0; i < s.plane; ++i) {
        const int64_t k = (n * s.channels + c) * s.plane + i;
        const double xhat = (x[k] - mean[c]) * inv;
        dx[k] = gamma[c] * inv * (dy[k] - sdy / count - xhat * sdyx / count);
      }
  }
}

}  // namespace nnperf
