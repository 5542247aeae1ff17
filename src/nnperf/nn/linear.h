// Linear (fully connected) layer: Y[mb x out] = X[mb x in] . W[in x out] + b, weights stored
// (in, out) as srivas63_CMSE401's MLP does, so the forward GEMM needs no transpose. All three GEMMs
// (forward, dW = X^T dY, dX = dY W^T) go through the GEMM algorithm chosen at plan time.
#pragma once
#include <cstdint>

#include "nnperf/core/workspace.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

enum class LinearInit {
  kTorchDefault,  // nn.Linear's kaiming_uniform(a = sqrt(5)): W, b ~ U(-1/sqrt(in), 1/sqrt(in))
  kHeNormal,      // srivas63_CMSE401: W ~ N(0, sqrt(2 / in)), b = 0
};

class Linear : public Layer {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true,
         LinearInit init = LinearInit::kTorchDefault);

  std::string kind() const override { return "Linear"; }
  std::string describe() const override;  // "Linear(784->512)"
  // "gemm=blocked forward m64n512k784 weight-grad ... input-grad ..."
  std::string dispatch() const override;
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  // The gradients are sized by a plan for training; an inference plan releases them (empty).
  std::vector<Param> params() override;
  int64_t num_params() const override { return weight_.numel() + bias_.numel(); }
  void init(Rng& rng) override;
  double forward_flops() const override;

  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  bool has_bias() const { return has_bias_; }
  Tensor& weight() { return weight_; }                     // [in, out]
  Tensor& bias() { return bias_; }                         // [out] (empty without bias)
  const Tensor& weight_grad() const { return d_weight_; }  // empty unless planned for training
  const Tensor& bias_grad() const { return d_bias_; }
  // The planned algorithm (null before plan) and the workspace it was given.
  const GemmAlgorithm* gemm() const { return gemm_; }
  std::size_t workspace_bytes() const { return workspace_.size(); }

 private:
  GemmArgs args(const GemmShape& shape, const float* a, int64_t lda, const float* b, int64_t ldb,
                float* c, int64_t ldc) const;

  int64_t in_, out_;
  bool has_bias_;
  LinearInit init_;
  Tensor weight_, bias_, d_weight_, d_bias_;
  const GemmAlgorithm* gemm_ = nullptr;
  int threads_ = 1;
  int64_t mb_ = 0;
  Workspace workspace_;
};

}  // namespace nnperf
