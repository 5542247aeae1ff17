// BatchNorm2d: per-channel loops (channel c of image n is one contiguous plane of h*w values).
// Statistics accumulate in double with two passes (mean, then centred squares), so a batch
// with a large mean loses no precision; the elementwise passes run in float.
#include "nnperf/nn/batchnorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {
// Below this many elements a second thread costs more than it saves (~20 us of one core).
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements) {
  return static_cast<int>(
      std::clamp<int64_t>(elements / kMinElementsPerThread, 1, std::max(1, threads)));
}
}  // namespace

BatchNorm2d::BatchNorm2d(int64_t channels, double eps, double momentum)
    : c_(channels), eps_(eps), momentum_(momentum) {
  if (c_ <= 0) throw Error(fmt::format("BatchNorm2d({}): channels must be positive", c_));
  if (!(eps_ > 0.0)) throw Error(fmt::format("BatchNorm2d({}): eps must be positive", c_));
  if (!(momentum_ >= 0.0 && momentum_ <= 1.0)) {
    throw Error(fmt::format("BatchNorm2d({}): momentum {} is outside [0, 1]", c_, momentum_));
  }
  weight_ = Tensor::zeros({c_});
  bias_ = Tensor::zeros({c_});
  d_weight_ = Tensor::zeros({c_});
  d_bias_ = Tensor::zeros({c_});
  running_mean_ = Tensor::zeros({c_});
  running_var_ = Tensor::zeros({c_});
  weight_.fill(1.0f);
  running_var_.fill(1.0f);
}

std::string BatchNorm2d::describe() const {
  if (eps_ == 1e-5) return fmt::format("BatchNorm2d({})", c_);
  return fmt::format("BatchNorm2d({}, eps {})", c_, eps_);
}

Shape BatchNorm2d::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  const Shape& x = src[0];
  if (x.rank() != 4 || x[1] != c_) {
    throw Error(fmt::format("{}: expected input [mb, {}, h, w], got {}", describe(), c_, x.str()));
  }
  mb_ = x[0];
  plane_ = x[2] * x[3];
  training_ = ctx.training;
  threads_ = std::max(1, ctx.threads);
  if (training_ && mb_ * plane_ < 2) {
    // PyTorch: "Expected more than 1 value per channel when training".
    throw Error(fmt::format("{}: training needs more than 1 value per channel, input is {}",
                            describe(), x.str()));
  }
  scale_.assign(static_cast<std::size_t>(c_), 0.0f);
  shift_.assign(static_cast<std::size_t>(c_), 0.0f);
  save_mean_.assign(training_ ? static_cast<std::size_t>(c_) : 0, 0.0);
  save_inv_.assign(training_ ? static_cast<std::size_t>(c_) : 0, 0.0);
  return x;
}

void BatchNorm2d::inference_scale_shift(double* scale, double* shift) const {
  for (int64_t c = 0; c < c_; ++c) {
    const double s =
        static_cast<double>(weight_[c]) / std::sqrt(static_cast<double>(running_var_[c]) + eps_);
    scale[c] = s;
    shift[c] = static_cast<double>(bias_[c]) - static_cast<double>(running_mean_[c]) * s;
  }
}

void BatchNorm2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  float* y = dst.data();
  const int64_t plane = plane_, mb = mb_, channels = c_;
  const int t = useful_threads(threads_, mb * channels * plane);
  if (!training_) {
    for (int64_t c = 0; c < channels; ++c) {
      const double s =
          static_cast<double>(weight_[c]) / std::sqrt(static_cast<double>(running_var_[c]) + eps_);
      scale_[c] = static_cast<float>(s);
      shift_[c] = static_cast<float>(static_cast<double>(bias_[c]) - running_mean_[c] * s);
    }
    const float* scale = scale_.data();
    const float* shift = shift_.data();
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
    for (int64_t r = 0; r < mb * channels; ++r) {
      const float s = scale[r % channels], b = shift[r % channels];
      const float* xr = x + r * plane;
      float* yr = y + r * plane;
      for (int64_t i = 0; i < plane; ++i) yr[i] = xr[i] * s + b;
    }
    return;
  }
  const double count = static_cast<double>(mb * plane);
  double* save_mean = save_mean_.data();
  double* save_inv = save_inv_.data();
  float* running_mean = running_mean_.data();
  float* running_var = running_var_.data();
  const float* gamma = weight_.data();
  const float* beta = bias_.data();
  const double eps = eps_, momentum = momentum_;
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < channels; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < mb; ++n) {
      const float* xp = x + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) sum += xp[i];
    }
    const double mean = sum / count;
    double sq = 0.0;
    for (int64_t n = 0; n < mb; ++n) {
      const float* xp = x + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) {
        const double d = xp[i] - mean;
        sq += d * d;
      }
    }
    const double var = sq / count;
    const double inv = 1.0 / std::sqrt(var + eps);
    save_mean[c] = mean;
    save_inv[c] = inv;
    running_mean[c] = static_cast<float>((1.0 - momentum) * running_mean[c] + momentum * mean);
    running_var[c] = static_cast<float>((1.0 - momentum) * running_var[c] +
                                        momentum * var * count / (count - 1.0));
    const float s = static_cast<float>(gamma[c] * inv);
    const float b = static_cast<float>(beta[c] - mean * gamma[c] * inv);
    for (int64_t n = 0; n < mb; ++n) {
      const float* xp = x + (n * channels + c) * plane;
      float* yp = y + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) yp[i] = xp[i] * s + b;
    }
  }
}

void BatchNorm2d::backward(std::span<const Tensor* const> src, const Tensor& /*dst*/,
                           const Tensor& d_dst, std::span<Tensor* const> d_src) {
  NNPERF_CHECK(training_, "{}: backward() needs a plan for training", describe());
  const float* x = src[0]->data();
  const float* dy = d_dst.data();
  float* dx = d_src[0] != nullptr ? d_src[0]->data() : nullptr;
  const int64_t plane = plane_, mb = mb_, channels = c_;
  const double count = static_cast<double>(mb * plane);
  const double* save_mean = save_mean_.data();
  const double* save_inv = save_inv_.data();
  const float* gamma = weight_.data();
  float* d_gamma = d_weight_.data();
  float* d_beta = d_bias_.data();
  const int t = useful_threads(threads_, mb * channels * plane);
  // xhat = (x - mean) * inv; d_gamma = sum dy * xhat; d_beta = sum dy;
  // dx = gamma * inv * (dy - d_beta / M - xhat * d_gamma / M), M = mb * h * w.
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < channels; ++c) {
    const double mean = save_mean[c], inv = save_inv[c];
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t n = 0; n < mb; ++n) {
      const float* xp = x + (n * channels + c) * plane;
      const float* dyp = dy + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) {
        sum_dy += dyp[i];
        sum_dy_xhat += dyp[i] * (xp[i] - mean) * inv;
      }
    }
    d_gamma[c] = static_cast<float>(sum_dy_xhat);
    d_beta[c] = static_cast<float>(sum_dy);
    if (dx == nullptr) continue;
    const double k = gamma[c] * inv;
    const double mean_dy = sum_dy / count, mean_dy_xhat = sum_dy_xhat / count;
    for (int64_t n = 0; n < mb; ++n) {
      const float* xp = x + (n * channels + c) * plane;
      const float* dyp = dy + (n * channels + c) * plane;
      float* dxp = dx + (n * channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) {
        const double xhat = (xp[i] - mean) * inv;
        dxp[i] = static_cast<float>(k * (dyp[i] - mean_dy - xhat * mean_dy_xhat));
      }
    }
  }
}

std::vector<Param> BatchNorm2d::params() {
  return {{"weight", &weight_, &d_weight_}, {"bias", &bias_, &d_bias_}};
}

void BatchNorm2d::init(Rng& /*rng*/) {
  weight_.fill(1.0f);
  bias_.zero();
  running_mean_.zero();
  running_var_.fill(1.0f);
}

double BatchNorm2d::forward_flops() const {
  return static_cast<double>(mb_ * c_ * plane_) * (training_ ? 5.0 : 2.0);
}

}  // namespace nnperf
