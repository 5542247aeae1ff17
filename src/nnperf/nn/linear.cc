// Linear layer: shape checks and GEMM selection at plan time, then three GEMM calls per step.
#include "nnperf/nn/linear.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnperf/core/error.h"
#include "nnperf/kernels/elementwise.h"

namespace nnperf {

Linear::Linear(int64_t in_features, int64_t out_features, bool bias, LinearInit init)
    : in_(in_features), out_(out_features), has_bias_(bias), init_(init) {
  if (in_ <= 0 || out_ <= 0) {
    throw Error(fmt::format("Linear({}->{}): in and out features must be positive", in_, out_));
  }
  weight_ = Tensor::zeros({in_, out_});
  if (has_bias_) bias_ = Tensor::zeros({out_});
  // d_weight_ / d_bias_ are sized by a plan for training only: VGG16's classifier would
  // otherwise hold 124 M floats (0.49 GB) of gradients in an inference plan.
}

std::string Linear::describe() const {
  return fmt::format("Linear({}->{}{})", in_, out_, has_bias_ ? "" : ", no bias");
}

std::string Linear::dispatch() const {
  if (gemm_ == nullptr) return {};
  const GemmShape fwd{false, false, mb_, out_, in_};
  const GemmShape dw{true, false, in_, out_, mb_};
  const GemmShape dx{false, true, mb_, in_, out_};
  return fmt::format("gemm={} forward {} weight-grad {} input-grad {}", gemm_->name, fwd.str(),
                     dw.str(), dx.str());
}

Shape Linear::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  const Shape& x = src[0];
  if (x.rank() != 2 || x[1] != in_) {
    throw Error(fmt::format("{}: expected input [mb, {}], got {}", describe(), in_, x.str()));
  }
  mb_ = x[0];
  threads_ = std::max(1, ctx.threads);
  gemm_ = ctx.gemm != nullptr ? ctx.gemm : &find_gemm("blas");
  if (gemm_->device != Device::kCpu) {
    throw Error(fmt::format("{}: GEMM algorithm '{}' runs on a GPU; CPU tensors need a CPU one",
                            describe(), gemm_->name));
  }
  // Forward Y = X W; backward dW = X^T dY and dX = dY W^T.
  std::vector<GemmShape> shapes = {{false, false, mb_, out_, in_}};
  if (ctx.training) {
    shapes.push_back({true, false, in_, out_, mb_});
    shapes.push_back({false, true, mb_, in_, out_});
    if (d_weight_.shape() != weight_.shape()) d_weight_ = Tensor::zeros(weight_.shape());
    if (has_bias_ && d_bias_.shape() != bias_.shape()) d_bias_ = Tensor::zeros(bias_.shape());
  } else {
    // Gradients are written before they are read (backward overwrites them), so an inference
    // plan may drop them; a later plan for training sizes them again.
    d_weight_ = Tensor();
    d_bias_ = Tensor();
  }
  std::size_t bytes = 0;
  for (const GemmShape& s : shapes) {
    const std::string why = gemm_->why_not(s);
    if (!why.empty()) {
      throw Error(fmt::format("{}: GEMM algorithm '{}' cannot run {}: {}", describe(), gemm_->name,
                              s.str(), why));
    }
    bytes = std::max(bytes, gemm_->workspace_bytes(s, threads_));
  }
  workspace_.reserve(bytes);
  return Shape{mb_, out_};
}

GemmArgs Linear::args(const GemmShape& shape, const float* a, int64_t lda, const float* b,
                      int64_t ldb, float* c, int64_t ldc) const {
  return gemm_args(shape, a, lda, b, ldb, c, ldc, workspace_.data(), threads_);
}

void Linear::forward(std::span<const Tensor* const> src, Tensor& dst) {
  const float* x = src[0]->data();
  gemm_->run(args({false, false, mb_, out_, in_}, x, in_, weight_.data(), out_, dst.data(), out_));
  if (has_bias_) add_bias_rows(dst.data(), bias_.data(), mb_, out_, out_);
}

void Linear::backward(std::span<const Tensor* const> src, const Tensor& /*dst*/,
                      const Tensor& d_dst, std::span<Tensor* const> d_src) {
  const float* x = src[0]->data();
  const float* dy = d_dst.data();
  // dW[in x out] = X^T[in x mb] . dY[mb x out]
  gemm_->run(args({true, false, in_, out_, mb_}, x, in_, dy, out_, d_weight_.data(), out_));
  if (has_bias_) sum_rows(dy, d_bias_.data(), mb_, out_, out_);
  // dX[mb x in] = dY[mb x out] . W^T[out x in]; skipped for the graph input (no consumer).
  if (d_src[0] != nullptr) {
    gemm_->run(
        args({false, true, mb_, in_, out_}, dy, out_, weight_.data(), out_, d_src[0]->data(), in_));
  }
}

std::vector<Param> Linear::params() {
  std::vector<Param> p = {{"weight", &weight_, &d_weight_}};
  if (has_bias_) p.push_back({"bias", &bias_, &d_bias_});
  return p;
}

void Linear::init(Rng& rng) {
  const double fan_in = static_cast<double>(in_);
  std::span<float> w(weight_.data(), static_cast<std::size_t>(weight_.numel()));
  if (init_ == LinearInit::kHeNormal) {
    const float stddev = static_cast<float>(std::sqrt(2.0 / fan_in));
    fill_in_parts(w, [&](std::span<float> part) { rng.fill_normal(part, 0.0f, stddev); });
    if (has_bias_) bias_.zero();
  } else {
    // kaiming_uniform(a = sqrt(5)): gain = sqrt(2 / (1 + 5)), bound = gain * sqrt(3 / fan_in)
    // = 1 / sqrt(fan_in); PyTorch draws the bias from the same bound.
    const float bound = static_cast<float>(1.0 / std::sqrt(fan_in));
    fill_in_parts(w, [&](std::span<float> part) { rng.fill_uniform(part, -bound, bound); });
    if (has_bias_) {
      rng.fill_uniform(std::span<float>(bias_.data(), static_cast<std::size_t>(out_)), -bound,
                       bound);
    }
  }
}

double Linear::forward_flops() const {
  const double mb = static_cast<double>(mb_);
  return 2.0 * mb * static_cast<double>(in_) * static_cast<double>(out_) +
         (has_bias_ ? mb * static_cast<double>(out_) : 0.0);
}

}  // namespace nnperf
