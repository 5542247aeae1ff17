// Pieces shared by the torchvision CNN builders: the options they read, a builder that adds nodes
// named like torchvision's module paths ("layer1.0.conv1", "features.3") and folds BatchNorm2d
// into the conv before it when asked, and the conv+linear MAC count used for model figures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/graph.h"
#include "nnperf/nn/relu6.h"

namespace nnperf {

struct CnnOptions {
  int64_t in_channels = 3;
  int64_t classes = 1000;
  // Fold every BatchNorm2d that directly follows a Conv2d into that conv (no BN node; inference
  // only). BNs after a Concat or a ReLU (DenseNet's pre-activation ones) stay nodes.
  bool fold_bn = false;
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
