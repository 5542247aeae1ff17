// Pieces shared by the torchvision CNN builders: the options they read, a builder that adds nodes
// named like torchvision's module paths ("layer1.0.conv1", "features.3") and folds BatchNorm2d
// into the conv before it when asked, ReLU6 (MobileNetV2; not in the activation table, which
// drives the activation-timing study), and the conv+linear MAC count used for model figures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/graph.h"

namespace nnperf {

struct CnnOptions {
  int64_t in_channels = 3;
  int64_t classes = 1000;
  // Fold every BatchNorm2d that directly follows a Conv2d into that conv (no BN node; inference
  // only). BNs after a Concat or a ReLU (DenseNet's pre-activation ones) stay nodes.
  bool fold_bn = false;
};

// ReLU6: min(max(x, 0), 6); the gradient passes where 0 < x < 6 (PyTorch's hardtanh rule).
class ReLU6 : public Layer {
 public:
  std::string kind() const override { return "Activation"; }
  std::string describe() const override { return "ReLU6"; }
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override { return 2.0 * static_cast<double>(n_); }
  bool is_activation() const override { return true; }

 private:
  int64_t n_ = 0;
};

// Adds nodes to `g`; every method takes the producing node id(s) and returns the new node's id.
class CnnBuilder {
 public:
  CnnBuilder(Graph& g, const CnnOptions& o, ConvInit init) : g_(g), o_(o), init_(init) {}

  const CnnOptions& options() const { return o_; }
  int conv(const std::string& name, int input, int64_t ic, int64_t oc, int64_t k,
           int64_t stride = 1, int64_t pad = 0, int64_t groups = 1, bool bias = false);
  // Conv2d `conv_name` then BatchNorm2d `bn_name`, or (fold_bn) only the conv node, with the BN
  // folded in. Returns the last node.
  int conv_bn(const std::string& conv_name, const std::string& bn_name, int input, int64_t ic,
              int64_t oc, int64_t k, int64_t stride = 1, int64_t pad = 0, int64_t groups = 1,
              double eps = 1e-5);
  int batch_norm(const std::string& name, int input, int64_t channels, double eps = 1e-5);
  int relu(const std::string& name, int input);
  int relu6(const std::string& name, int input);
  int max_pool(const std::string& name, int input, int64_t k, int64_t stride, int64_t pad = 0,
               bool ceil_mode = false);
  int avg_pool(const std::string& name, int input, int64_t k, int64_t stride);
  int adaptive_avg_pool(const std::string& name, int input, int64_t out_h, int64_t out_w);
  int add(const std::string& name, std::vector<int> inputs);
  // A single input is returned as is (no node), as torch.cat of one tensor is a copy.
  int concat(const std::string& name, std::vector<int> inputs);
  int flatten(const std::string& name, int input);
  int dropout(const std::string& name, int input, double p);
  int linear(const std::string& name, int input, int64_t in, int64_t out);

 private:
  Graph& g_;
  CnnOptions o_;
  ConvInit init_;
  uint64_t dropout_seed_ = 0xD40u;
};

// Multiply-accumulates of the Conv2d and Linear nodes of a planned graph (biases, BN, pooling
// and activations not counted): the convention of torchvision's GFLOPS column and fvcore.
double conv_linear_macs(const Graph& g);

}  // namespace nnperf
