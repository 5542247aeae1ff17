// Helpers shared by the model tests (one binary, test_models): a fast seeded weight init.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>

#include "nnperf/core/rng.h"
#include "nnperf/nn/conv2d.h"
#include "nnperf/nn/graph.h"
#include "nnperf/nn/linear.h"

namespace nnperf::test {

// A fast fan-in-scaled uniform init (the layers' own init is tested in tests/nn; drawing 138M
// normals for VGG-16 would take seconds): conv weights [oc, icg, kh, kw] and Linear weights
// [in, out] ~ U(+-sqrt(6 / fan_in)) keep activations O(1) through ReLUs; biases ~ U(+-0.1);
// BN parameters keep gamma 1, beta 0.
inline void fast_init(Graph& g, uint64_t seed) {
  Rng rng(seed);
  auto fill = [&](Tensor& t, float bound) {
    rng.fill_uniform(std::span<float>(t.data(), static_cast<std::size_t>(t.numel())), -bound,
                     bound);
  };
  for (int i = 1; i < g.size(); ++i) {
    if (auto* c = dynamic_cast<Conv2d*>(&g.layer(i))) {
      const double fan_in = static_cast<double>(c->weight().numel() / c->out_channels());
      fill(c->weight(), static_cast<float>(std::sqrt(6.0 / fan_in)));
      if (c->has_bias()) fill(c->bias(), 0.1f);
    } else if (auto* l = dynamic_cast<Linear*>(&g.layer(i))) {
      fill(l->weight(), static_cast<float>(std::sqrt(6.0 / static_cast<double>(l->in_features()))));
      if (l->has_bias()) fill(l->bias(), 0.1f);
    }
  }
}

}  // namespace nnperf::test
