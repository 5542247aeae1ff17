// Dropout: identity when planned for inference (a copy into the node's output); when planned for
// training, each forward draws a fresh mask from its own seeded Rng, keeping an element with
// probability 1 - p and scaling kept ones by 1 / (1 - p) (inverted dropout, as PyTorch), and
// backward multiplies by the same mask.
#pragma once
#include <cstdint>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

class Dropout : public Layer {
 public:
  explicit Dropout(double p = 0.5, uint64_t seed = 0x5EED0D0Eull);

  std::string kind() const override { return "Dropout"; }
  std::string describe() const override;  // "Dropout(p=0.5)"
  Shape plan(std::span<const Shape> src, const PlanContext& ctx) override;
  void forward(std::span<const Tensor* const> src, Tensor& dst) override;
  void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                std::span<Tensor* const> d_src) override;
  double forward_flops() const override;  // one multiply per element when training

  double p() const { return p_; }
  // The mask of the last training forward: 0 or 1 / (1 - p) per element.
  const std::vector<float>& mask() const { return mask_; }
  void reseed(uint64_t seed) { rng_.reseed(seed); }

 private:
  double p_;
  Rng rng_;
  bool training_ = false;
  int64_t n_ = 0;
  std::vector<float> mask_;
};

}  // namespace nnperf
