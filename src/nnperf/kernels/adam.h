// The coefficients of one Adam step (torch.optim.Adam's update), shared by the optimizer
// (train/optimizer.cc, its AVX2 body) and the GPU kernel (kernels/elementwise_cuda.cu):
//   m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;  w -= step_size * m / (sqrt(v) * inv_sqrt_bc2 + eps)
// with g = grad + weight_decay * w.
#pragma once

namespace nnperf {

struct AdamCoefficients {
  float beta1, one_minus_beta1, beta2, one_minus_beta2, weight_decay;
  float step_size;     // lr / (1 - beta1^t)
  float inv_sqrt_bc2;  // 1 / sqrt(1 - beta2^t)
  float eps;
};

}  // namespace nnperf
