// Conv2d layer: a 2-D convolution whose algorithm is chosen per layer at plan time from the conv
// registry (kernels/conv/conv.h): a named algorithm (strict, or falling back with the reason),
// "guess" (lowest cost()) or "find" (timed once per problem, cached process-wide, like
// cudnnFind / torch.backends.cudnn.benchmark). Forward runs the chosen algorithm; each backward
// pass (data, weights) runs a row of its own registry (kernels/conv/conv_backward.h) chosen by the
// same rule: the named algorithm where that pass's registry has it, else guess or find.
// Weights are OIHW [oc, ic/g, kh, kw] as in PyTorch. An optional BatchNorm2d can be folded in
// (inference only): the layer then runs with w * s and (b - mean) * s + beta, s =
// gamma/sqrt(var+eps).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_crop.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/nn/batchnorm.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

class BatchNorm2d;

enum class ConvInit {
  kTorchDefault,    // nn.Conv2d's kaiming_uniform(a = sqrt(5)): W, b ~ U(-1/sqrt(fan_in), +)
  kHeNormal,        // W ~ N(0, sqrt(2 / fan_in)), b = 0 (torchvision DenseNet)
  kHeNormalFanOut,  // W ~ N(0, sqrt(2 / fan_out)), fan_out = oc*kh*kw, b = 0 (ResNet, VGG)
};

class Conv2d : public Layer {
 public:
  Conv2d(int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t stride = 1, int64_t pad = 0,
         int64_t dilation = 1, int64_t groups = 1, bool bias = true,
         ConvInit init = ConvInit::kTorchDefault);
  ~Conv2d() override;

  std::string kind() const override { return "Conv2d"; }
  // "Conv2d(64->128, k3x3, s2, p1)" (+ ", d2", ", g32", ", no bias", " + BN folded")
  std::string describe() const override;
  // "algo=winograd (requested guess) problem=mb1ic64ih56oc64kh3ph1", with
  // "; fallback from winograd: <reason>" when a named algorithm could not serve the layer.
  std::string dispatch() const override;
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  std::vector<Param> params() override;  // weight, [bias], [folded_bn.weight, folded_bn.bias]
  // The same count as params(), without marking the packed weights stale.
  int64_t num_params() const override {
    return weight_.numel() + bias_.numel() + (bn_ != nullptr ? bn_->num_params() : 0);
  }
  void init(Rng& rng) override;
  // 2 * MACs (+ one add per output for the bias, folded or not).
  double forward_flops() const override;

  // Takes `bn` (channels == oc) into this layer. Must precede plan(); planning for training
  // then fails, as folding is an inference-time rewrite.
  void fold_batchnorm(std::unique_ptr<BatchNorm2d> bn);
  BatchNorm2d* folded_batchnorm() { return bn_.get(); }

  // Packed weights (and the folded weights) are computed at plan time. When planned for
  // training, every forward recomputes them (the optimizer changes the weights in place between
  // steps). For inference, init(), params(), weight() and bias() mark them stale and the next
  // forward recomputes them once; call weights_changed() after writing the weights through any
  // other pointer (the folded BatchNorm's parameters included).
  void weights_changed() { stale_ = true; }
  // How many times the weights were prepared (folded and packed) since construction: once per
  // plan, then once per training forward or per inference forward after a change (tests).
  int64_t weight_preparations() const { return preparations_; }

  // After plan(): the algorithm that runs, why a requested one was replaced ("" if not), and
  // the problem (for the profiler's layers CSV).
  const ConvAlgorithm* algorithm() const { return algo_; }
  // When planned for training: the backward-data and backward-weights rows (else null).
  const ConvBackwardAlgorithm* backward_data_algorithm() const { return bwd_data_; }
  const ConvBackwardAlgorithm* backward_weights_algorithm() const { return bwd_weights_; }
  std::string fallback_reason() const { return fallback_reason_; }
  ConvProblem problem() const { return problem_; }
  const std::string& requested_algorithm() const { return requested_; }
  std::size_t workspace_bytes() const { return workspace_.size(); }

  int64_t in_channels() const { return ic_; }
  int64_t out_channels() const { return oc_; }
  int64_t kernel_h() const { return kh_; }
  int64_t kernel_w() const { return kw_; }
  int64_t stride() const { return stride_; }
  int64_t padding() const { return pad_; }
  int64_t dilation() const { return dilation_; }
  int64_t groups() const { return groups_; }
  bool has_bias() const { return has_bias_; }
  Tensor& weight() {
    stale_ = true;
    return weight_;
  }
  Tensor& bias() {
    stale_ = true;
    return bias_;
  }
  const Tensor& weight_grad() const { return d_weight_; }
  const Tensor& bias_grad() const { return d_bias_; }

 private:
  static ConvSelection selection(const PlanContext& ctx);
  ConvProblem problem_for(const Shape& x) const;  // this layer on input x (mb, ic, h, w)
  void prepare_weights();  // folded and cropped weights/bias and the algorithm's packed weights
  const float* base_weights() const;  // the folded weights, or the layer's own
  const float* run_weights() const;   // base_weights(), cropped to the live taps when cropping
  // What the algorithms run: the cropped problem when dead taps were dropped, else problem_.
  const ConvProblem& run_problem() const { return crop_.active ? crop_.cropped : problem_; }
  const float* run_bias() const;

  int64_t ic_, oc_, kh_, kw_, stride_, pad_, dilation_, groups_;
  bool has_bias_;
  ConvInit init_;
  Tensor weight_, bias_, d_weight_, d_bias_;
  std::unique_ptr<BatchNorm2d> bn_;
  Tensor folded_weight_, folded_bias_;

  ConvProblem problem_;
  // Live taps (kernels/conv/conv_crop.h): with guess or find, a kernel whose outer taps read only
  // padding runs as the smaller convolution of its live taps; a named algorithm runs the layer
  // as it is.
  ConvCrop crop_;
  Tensor cropped_weight_, cropped_grad_;
  const ConvAlgorithm* algo_ = nullptr;
  const ConvBackwardAlgorithm* bwd_data_ = nullptr;
  const ConvBackwardAlgorithm* bwd_weights_ = nullptr;
  std::string requested_;
  std::string fallback_reason_;
  double find_ms_ = -1.0;  // the winner's time when chosen by "find"
  bool training_ = false;
  bool stale_ = true;
  int64_t preparations_ = 0;
  int threads_ = 1;
  Workspace workspace_;
  Workspace packed_;
  bool has_packed_ = false;
};

}  // namespace nnperf
