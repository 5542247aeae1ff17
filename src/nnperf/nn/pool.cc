// MaxPool2d / AvgPool2d: shapes, buffers and the argmax plan; the loops are kernels/pool.h's.
#include "nnperf/nn/pool.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "nnperf/core/error.h"
#include "nnperf/core/threads.h"
#include "nnperf/kernels/pool.h"

namespace nnperf {

namespace {
constexpr int64_t kMinElementsPerThread = 1 << 15;

int useful_threads(int threads, int64_t elements, int64_t jobs) {
  return nnperf::useful_threads(threads, static_cast<double>(elements), kMinElementsPerThread,
                                jobs);
}

int64_t floor_div(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
}  // namespace

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode) {
  int64_t out =
      floor_div(in + 2 * pad - (kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0), stride) + 1;
  // The last window must start inside the input or the left padding.
  if (ceil_mode && out > 0 && (out - 1) * stride >= in + pad) --out;
  return out;
}

Pool2dBase::Pool2dBase(const char* kind, int64_t kernel, int64_t stride, int64_t pad,
                       bool ceil_mode)
    : kind_(kind), k_(kernel), s_(stride == 0 ? kernel : stride), p_(pad), ceil_(ceil_mode) {
  if (k_ <= 0 || s_ <= 0 || p_ < 0) {
    throw Error(
        fmt::format("{}: kernel and stride must be positive, padding >= 0", base_describe()));
  }
  if (2 * p_ > k_) {
    // PyTorch: "pad should be at most half of effective kernel size".
    throw Error(
        fmt::format("{}: padding {} is more than half the kernel {}", base_describe(), p_, k_));
  }
}

std::string Pool2dBase::base_describe() const {
  std::string s = fmt::format("{}(k{}, s{}", kind_, k_, s_);
  if (p_ != 0) s += fmt::format(", p{}", p_);
  if (ceil_) s += ", ceil";
  return s + ")";
}

Shape Pool2dBase::plan(std::span<const Shape> src, const PlanContext& ctx) {
  const std::string me = describe();
  if (src.size() != 1) throw Error(fmt::format("{}: expected 1 input, got {}", me, src.size()));
  const Shape& x = src[0];
  if (x.rank() != 4) {
    throw Error(fmt::format("{}: expected input [mb, c, h, w], got {}", me, x.str()));
  }
  const int64_t oh = pool_output_size(x[2], k_, s_, p_, ceil_);
  const int64_t ow = pool_output_size(x[3], k_, s_, p_, ceil_);
  if (oh < 1 || ow < 1) {
    int64_t min_in = 1;
    while (pool_output_size(min_in, k_, s_, p_, ceil_) < 1) ++min_in;
    throw Error(fmt::format(
        "{}: input {} is too small: the output would be {}x{}; this layer needs at least {}x{}", me,
        x.str(), oh, ow, min_in, min_in));
  }
  planes_ = x[0] * x[1];
  ih_ = x[2];
  iw_ = x[3];
  oh_ = oh;
  ow_ = ow;
  training_ = ctx.training;
  threads_ = std::max(1, ctx.threads);
  return Shape{x[0], x[1], oh, ow};
}

PoolShape Pool2dBase::shape() const { return {planes_, ih_, iw_, oh_, ow_, k_, s_, p_}; }

// ---- MaxPool2d ----

Shape MaxPool2d::plan(std::span<const Shape> src, const PlanContext& ctx) {
  const Shape out = Pool2dBase::plan(src, ctx);
  if (ih_ * iw_ > std::numeric_limits<int32_t>::max()) {
    throw Error(fmt::format("{}: input planes above 2^31 elements are not supported", describe()));
  }
  argmax_.assign(training_ ? static_cast<std::size_t>(planes_ * oh_ * ow_) : 0, 0);
  threads_used_ = useful_threads(threads_, planes_ * oh_ * ow_ * k_ * k_, planes_);
  rows_.assign(static_cast<std::size_t>(threads_used_ * iw_), 0.0f);
  cols_.assign(training_ ? static_cast<std::size_t>(threads_used_ * iw_) : 0, 0);
  return out;
}

void MaxPool2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  maxpool2d_forward(shape(), src[0]->data(), dst.data(), training_ ? argmax_.data() : nullptr,
                    rows_.data(), cols_.data(), threads_used_);
}

void MaxPool2d::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                         const Tensor& d_dst, std::span<Tensor* const> d_src) {
  NNPERF_CHECK(training_, "{}: backward() needs a plan for training", describe());
  if (d_src[0] == nullptr) return;
  maxpool2d_backward(shape(), d_dst.data(), argmax_.data(), d_src[0]->data(), threads_);
}

double MaxPool2d::forward_flops() const {
  return static_cast<double>(planes_ * oh_ * ow_) * static_cast<double>(k_ * k_);
}

// ---- AvgPool2d ----

std::string AvgPool2d::describe() const {
  std::string s = base_describe();
  if (!count_include_pad_ && p_ > 0) s.insert(s.size() - 1, ", exclude pad");
  return s;
}

void AvgPool2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  avgpool2d_forward(shape(), count_include_pad_, src[0]->data(), dst.data(), threads_);
}

void AvgPool2d::backward(std::span<const Tensor* const> /*src*/, const Tensor& /*dst*/,
                         const Tensor& d_dst, std::span<Tensor* const> d_src) {
  if (d_src[0] == nullptr) return;
  avgpool2d_backward(shape(), count_include_pad_, d_dst.data(), d_src[0]->data(), threads_);
}

double AvgPool2d::forward_flops() const {
  return static_cast<double>(planes_ * oh_ * ow_) * static_cast<double>(k_ * k_ + 1);
}

}  // namespace nnperf
