// CnnBuilder node helpers and the MAC count.
#include "nnperf/models/cnn_blocks.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/nn/activation.h"
#include "nnperf/nn/add.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/concat.h"
#include "nnperf/nn/dropout.h"
#include "nnperf/nn/flatten.h"
#include "nnperf/nn/global_pool.h"
#include "nnperf/nn/linear.h"
#include "nnperf/nn/pool.h"

namespace nnperf {

int CnnBuilder::conv(const std::string& name, int input, int64_t ic, int64_t oc, int64_t k,
                     int64_t stride, int64_t pad, int64_t groups, bool bias) {
  return g_.add(name, std::make_unique<Conv2d>(ic, oc, k, k, stride, pad, 1, groups, bias, init_),
                {input});
}

int CnnBuilder::conv_bn(const std::string& conv_name, const std::string& bn_name, int input,
                        int64_t ic, int64_t oc, int64_t k, int64_t stride, int64_t pad,
                        int64_t groups, double eps) {
  auto c = std::make_unique<Conv2d>(ic, oc, k, k, stride, pad, 1, groups, false, init_);
  if (o_.fold_bn) {
    c->fold_batchnorm(std::make_unique<BatchNorm2d>(oc, eps));
    return g_.add(conv_name, std::move(c), {input});
  }
  const int id = g_.add(conv_name, std::move(c), {input});
  return batch_norm(bn_name, id, oc, eps);
}

int CnnBuilder::batch_norm(const std::string& name, int input, int64_t channels, double eps) {
  return g_.add(name, std::make_unique<BatchNorm2d>(channels, eps), {input});
}

int CnnBuilder::relu(const std::string& name, int input) {
  return g_.add(name, std::make_unique<Activation>(find_activation("ReLU")), {input});
}

int CnnBuilder::relu6(const std::string& name, int input) {
  return g_.add(name, std::make_unique<ReLU6>(), {input});
}

int CnnBuilder::max_pool(const std::string& name, int input, int64_t k, int64_t stride, int64_t pad,
                         bool ceil_mode) {
  return g_.add(name, std::make_unique<MaxPool2d>(k, stride, pad, ceil_mode), {input});
}

int CnnBuilder::avg_pool(const std::string& name, int input, int64_t k, int64_t stride) {
  return g_.add(name, std::make_unique<AvgPool2d>(k, stride), {input});
}

int CnnBuilder::adaptive_avg_pool(const std::string& name, int input, int64_t out_h,
                                  int64_t out_w) {
  return g_.add(name, std::make_unique<AdaptiveAvgPool2d>(out_h, out_w), {input});
}

int CnnBuilder::add(const std::string& name, std::vector<int> inputs) {
  return g_.add(name, std::make_unique<Add>(), std::move(inputs));
}

int CnnBuilder::concat(const std::string& name, std::vector<int> inputs) {
  if (inputs.size() == 1) return inputs[0];
  return g_.add(name, std::make_unique<Concat>(), std::move(inputs));
}

int CnnBuilder::flatten(const std::string& name, int input) {
  return g_.add(name, std::make_unique<Flatten>(), {input});
}

int CnnBuilder::dropout(const std::string& name, int input, double p) {
  return g_.add(name, std::make_unique<Dropout>(p, dropout_seed_++), {input});
}

int CnnBuilder::linear(const std::string& name, int input, int64_t in, int64_t out) {
  return g_.add(name, std::make_unique<Linear>(in, out), {input});
}

double conv_linear_macs(const Graph& g) {
  if (!g.planned()) throw Error("conv_linear_macs: the graph is not planned (MACs need shapes)");
  double macs = 0.0;
  for (int i = 1; i < g.size(); ++i) {
    const Layer& layer = g.layer(i);
    if (const auto* c = dynamic_cast<const Conv2d*>(&layer)) {
      macs += c->problem().macs();
    } else if (const auto* l = dynamic_cast<const Linear*>(&layer)) {
      macs += static_cast<double>(g.output_shape(i)[0]) * static_cast<double>(l->in_features()) *
              static_cast<double>(l->out_features());
    }
  }
  return macs;
}

}  // namespace nnperf
