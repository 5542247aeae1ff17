// Windowed pooling over [mb, c, h, w] with PyTorch's semantics: MaxPool2d (padding counts as
// -inf, ceil_mode as torchvision's GoogLeNet uses it, backward routes each gradient to the argmax
// saved by the forward when planned for training) and AvgPool2d (count_include_pad, PyTorch's
// default true). Square kernel, stride and padding; dilation 1.
#pragma once
#include <cstdint>
#include <vector>

#include "nnperf/kernels/pool.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

// PyTorch's pooling_output_shape: floor((in + 2p - k [+ s - 1 in ceil mode]) / s) + 1, minus one
// in ceil mode when the last window would start in the right padding. May be <= 0 (too small).
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode);

// Shared shape logic of MaxPool2d and AvgPool2d.
class Pool2dBase : public Layer {
 public:
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  int64_t kernel() const { return k_; }
  int64_t stride() const { return s_; }
  int64_t padding() const { return p_; }
  bool ceil_mode() const { return ceil_; }
  PoolShape shape() const;  // the planned shape, for kernels/pool.h (and the GPU's)

 protected:
  // stride 0 means stride = kernel (PyTorch's default).
  Pool2dBase(const char* kind, int64_t kernel, int64_t stride, int64_t pad, bool ceil_mode);
  std::string base_describe() const;  // "MaxPool2d(k3, s2, p1, ceil)"

  const char* kind_;
  int64_t k_, s_, p_;
  bool ceil_;
  bool training_ = false;
  int threads_ = 1;
  int64_t planes_ = 0, ih_ = 0, iw_ = 0, oh_ = 0, ow_ = 0;
};

class MaxPool2d : public Pool2dBase {
 public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0, int64_t pad = 0, bool ceil_mode = false)
      : Pool2dBase("MaxPool2d", kernel, stride, pad, ceil_mode) {}
  std::string kind() const override { return "MaxPool2d"; }
  std::string describe() const override { return base_describe(); }
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override;  // one comparison per window element

 private:
  std::vector<int32_t> argmax_;  // per output: index into its input plane (training only)
  std::vector<float> rows_;      // per thread: one input row of column maxima
  std::vector<int32_t> cols_;    // per thread: where they are (training only)
  int threads_used_ = 1;
};

class AvgPool2d : public Pool2dBase {
 public:
  explicit AvgPool2d(int64_t kernel, int64_t stride = 0, int64_t pad = 0, bool ceil_mode = false,
                     bool count_include_pad = true)
      : Pool2dBase("AvgPool2d", kernel, stride, pad, ceil_mode),
        count_include_pad_(count_include_pad) {}
  std::string kind() const override { return "AvgPool2d"; }
  std::string describe() const override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override;  // one add per window element + one multiply
  bool count_include_pad() const { return count_include_pad_; }

 private:
  bool count_include_pad_;  // the divisor: kernels/pool.h's avgpool_divisor
};

}  // namespace nnperf
