// BatchNorm2d: plans the shapes and buffers and calls the loops of kernels/batchnorm.h.
#include "nnperf/nn/batchnorm.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "nnperf/core/error.h"
#include "nnperf/kernels/batchnorm.h"

namespace nnperf {

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

std::string BatchNorm2d::dispatch() const {
  if (!training_ || plane_ == 0) return {};
  const BatchNormLayout layout = batchnorm_auto_layout({mb_, c_, plane_});
  return fmt::format("layout={} (a plane of {} values; blocks of channels take planes up to {}){}",
                     to_string(layout), plane_, kBatchNormBlockValues,
                     relu_ ? " + ReLU fused" : "");
}

std::pair<double, double> BatchNorm2d::channel_scale_shift(int64_t c) const {
  const double s =
      static_cast<double>(weight_[c]) / std::sqrt(static_cast<double>(running_var_[c]) + eps_);
  return {s, static_cast<double>(bias_[c]) - static_cast<double>(running_mean_[c]) * s};
}

void BatchNorm2d::inference_scale_shift(double* scale, double* shift) const {
  for (int64_t c = 0; c < c_; ++c) std::tie(scale[c], shift[c]) = channel_scale_shift(c);
}

void BatchNorm2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const BatchNormShape shape{mb_, c_, plane_};
  if (!training_) {
    for (int64_t c = 0; c < c_; ++c) {
      const auto [scale, shift] = channel_scale_shift(c);
      scale_[c] = static_cast<float>(scale);
      shift_[c] = static_cast<float>(shift);
    }
    batchnorm_apply(shape, src[0]->data(), scale_.data(), shift_.data(), dst.data(), threads_);
    return;
  }
  BatchNormTrainArgs a;
  a.shape = shape;
  a.x = src[0]->data();
  a.y = dst.data();
  a.gamma = weight_.data();
  a.beta = bias_.data();
  a.eps = eps_;
  a.momentum = momentum_;
  a.running_mean = running_mean_.data();
  a.running_var = running_var_.data();
  a.save_mean = save_mean_.data();
  a.save_inv = save_inv_.data();
  a.threads = threads_;
  a.relu = relu_;
  batchnorm_train_forward(a);
}

void BatchNorm2d::backward(std::span<const Tensor* const> src, const Tensor& dst,
                           const Tensor& d_dst, std::span<Tensor* const> d_src) {
  NNPERF_CHECK(training_, "{}: backward() needs a plan for training", describe());
  BatchNormBackwardArgs a;
  a.shape = BatchNormShape{mb_, c_, plane_};
  a.x = src[0]->data();
  a.dy = d_dst.data();
  a.dx = d_src[0] != nullptr ? d_src[0]->data() : nullptr;
  a.gamma = weight_.data();
  a.save_mean = save_mean_.data();
  a.save_inv = save_inv_.data();
  a.d_gamma = d_weight_.data();
  a.d_beta = d_bias_.data();
  a.threads = threads_;
  a.y = dst.data();
  a.relu = relu_;
  batchnorm_backward(a);
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
