#include "nnperf/kernels/batchnorm.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace nnperf {

namespace {

// Below this many elements a second thread costs more than it saves (~20 us of one core).
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements) {
  return static_cast<int>(
      std::clamp<int64_t>(elements / kMinElementsPerThread, 1, std::max(1, threads)));
}

constexpr int kLanes = 8;

// Sum of f(i) over one plane in kLanes float64 accumulators, added up in a fixed order.
template <class F>
double plane_sum(int64_t n, F f) {
  double acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) acc[l] += f(i + l);
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += f(i);
  return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

}  // namespace

void batchnorm_apply(const BatchNormShape& s, const float* x, const float* scale,
                     const float* shift, float* y, int threads) {
  const int t = useful_threads(threads, s.mb * s.channels * s.plane);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t r = 0; r < s.mb * s.channels; ++r) {
    const float sc = scale[r % s.channels], sh = shift[r % s.channels];
    const float* xr = x + r * s.plane;
    float* yr = y + r * s.plane;
    for (int64_t i = 0; i < s.plane; ++i) yr[i] = xr[i] * sc + sh;
  }
}

void batchnorm_train_forward(const BatchNormTrainArgs& a) {
  const BatchNormShape& s = a.shape;
  const double count = static_cast<double>(s.mb * s.plane);
  const int t = useful_threads(a.threads, s.mb * s.channels * s.plane);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < s.mb; ++n) {
      const float* xp = a.x + (n * s.channels + c) * s.plane;
      sum += plane_sum(s.plane, [xp](int64_t i) { return static_cast<double>(xp[i]); });
    }
    const double mean = sum / count;
    double sq = 0.0;
    for (int64_t n = 0; n < s.mb; ++n) {
      const float* xp = a.x + (n * s.channels + c) * s.plane;
      sq += plane_sum(s.plane, [xp, mean](int64_t i) {
        const double d = xp[i] - mean;
        return d * d;
      });
    }
    const double var = sq / count;
    const double inv = 1.0 / std::sqrt(var + a.eps);
    a.save_mean[c] = mean;
    a.save_inv[c] = inv;
    a.running_mean[c] =
        static_cast<float>((1.0 - a.momentum) * a.running_mean[c] + a.momentum * mean);
    a.running_var[c] = static_cast<float>((1.0 - a.momentum) * a.running_var[c] +
                                          a.momentum * var * count / (count - 1.0));
    // y = (x - mean) * s + beta in float64: a large mean does not cancel away the spread.
    const double sc = a.gamma[c] * inv, beta = a.beta[c];
    for (int64_t n = 0; n < s.mb; ++n) {
      const float* xp = a.x + (n * s.channels + c) * s.plane;
      float* yp = a.y + (n * s.channels + c) * s.plane;
      for (int64_t i = 0; i < s.plane; ++i) yp[i] = static_cast<float>((xp[i] - mean) * sc + beta);
    }
  }
}

void batchnorm_backward(const BatchNormBackwardArgs& a) {
  const BatchNormShape& s = a.shape;
  const double count = static_cast<double>(s.mb * s.plane);
  const int t = useful_threads(a.threads, s.mb * s.channels * s.plane);
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < s.channels; ++c) {
    const double mean = a.save_mean[c], inv = a.save_inv[c];
    double sum_dy = 0.0, sum_dy_x = 0.0;
    for (int64_t n = 0; n < s.mb; ++n) {
      const float* xp = a.x + (n * s.channels + c) * s.plane;
      const float* dyp = a.dy + (n * s.channels + c) * s.plane;
      sum_dy += plane_sum(s.plane, [dyp](int64_t i) { return static_cast<double>(dyp[i]); });
      sum_dy_x += plane_sum(s.plane, [xp, dyp, mean](int64_t i) {
        return static_cast<double>(dyp[i]) * (xp[i] - mean);
      });
    }
    const double sum_dy_xhat = sum_dy_x * inv;
    a.d_gamma[c] = static_cast<float>(sum_dy_xhat);
    a.d_beta[c] = static_cast<float>(sum_dy);
    if (a.dx == nullptr) continue;
    // dx = k * (dy - mean_dy - (x - mean) * inv * mean_dy_xhat), in float64 (x - mean keeps
    // its precision when the mean is large against the spread).
    const double k = a.gamma[c] * inv;
    const double mean_dy = sum_dy / count, mean_dy_xhat = sum_dy_xhat / count;
    const double p = -k * inv * mean_dy_xhat, q = -k * mean_dy;
    for (int64_t n = 0; n < s.mb; ++n) {
      const float* xp = a.x + (n * s.channels + c) * s.plane;
      const float* dyp = a.dy + (n * s.channels + c) * s.plane;
      float* dxp = a.dx + (n * s.channels + c) * s.plane;
      for (int64_t i = 0; i < s.plane; ++i) {
        dxp[i] = static_cast<float>(k * dyp[i] + p * (xp[i] - mean) + q);
      }
    }
  }
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
