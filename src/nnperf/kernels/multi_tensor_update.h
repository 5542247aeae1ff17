// The optimizers' update on the GPU as one launch over every parameter tensor (what
// torch.optim's foreach and fused paths do): each tensor's elements are cut into chunks of at
// most kUpdateChunk, one block a chunk, and a device table lists each block's tensor and range.
// The per-element steps of torch.optim's SGD and Adam below are the code the kernel runs
// (kernels/elementwise_cuda.cu); plain C++ that nvcc also compiles for the device, so the host
// tests (tests/train/multi_tensor_update_test.cc) replay a launch thread by thread and check
// that it visits every element once and follows the CPU optimizer bit for bit. The device build
// is not bit-identical: nvcc contracts a * b + c into FMAs (its default --fmad=true), so the GPU
// tests hold the kernels to the float64 reference with a tolerance instead.
#pragma once
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "nnperf/kernels/adam.h"
#include "nnperf/kernels/host_device.h"

namespace nnperf {

// torch.optim.SGD (dampening 0) with this step's numbers: keep multiplies the momentum buffer
// (0 on the first step, whose buffer is the gradient; momentum after).
struct SgdCoefficients {
  float lr = 0, weight_decay = 0, momentum = 0, keep = 0;
  bool nesterov = false;
};

// Element j: g = grad + wd * w; without a buffer (momentum 0) w -= lr * g, else buf = keep * buf
// + g and w -= lr * (nesterov ? g + momentum * buf : buf).
NNPERF_HOST_DEVICE inline void sgd_element(float* w, const float* grad, float* buf, int64_t j,
                                           const SgdCoefficients& c) {
  const float g = grad[j] + c.weight_decay * w[j];
  if (buf == nullptr) {
    w[j] -= c.lr * g;
    return;
  }
  buf[j] = c.keep * buf[j] + g;
  w[j] -= c.lr * (c.nesterov ? g + c.momentum * buf[j] : buf[j]);
}

// Element j of torch.optim.Adam's step (kernels/adam.h's formula, the CPU optimizer's order).
NNPERF_HOST_DEVICE inline void adam_element(float* w, const float* grad, float* m, float* v,
                                            int64_t j, const AdamCoefficients& c) {
  const float g = grad[j] + c.weight_decay * w[j];
  m[j] = c.beta1 * m[j] + c.one_minus_beta1 * g;
  v[j] = c.beta2 * v[j] + (c.one_minus_beta2 * g) * g;
  const float denom = sqrtf(v[j]) * c.inv_sqrt_bc2 + c.eps;
  w[j] -= (c.step_size * m[j]) / denom;
}

// One parameter tensor of a multi-tensor update: its values, gradient and state (SGD: s1 the
// momentum buffer, null without momentum; Adam: s1 and s2 the two moments), n floats each.
struct UpdateTensor {
  float* w = nullptr;
  const float* grad = nullptr;
  float* s1 = nullptr;
  float* s2 = nullptr;
  int64_t n = 0;
};

// One block's work: elements [begin, end) of tensor `tensor`.
struct UpdateChunk {
  int64_t begin = 0, end = 0;
  int32_t tensor = 0;
};

inline constexpr int64_t kUpdateChunk = 8192;  // at most 32 elements a thread of 256

// The chunks of tensors of sizes[i] elements, tensor by tensor, each cut at multiples of
// kUpdateChunk (none for an empty tensor).
inline std::vector<UpdateChunk> update_chunks(std::span<const int64_t> sizes) {
  std::vector<UpdateChunk> chunks;
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    for (int64_t b = 0; b < sizes[t]; b += kUpdateChunk) {
      chunks.push_back(
          {b, b + kUpdateChunk < sizes[t] ? b + kUpdateChunk : sizes[t], static_cast<int32_t>(t)});
    }
  }
  return chunks;
}

// Thread `thread` of a `threads`-thread block runs elements begin + thread, begin + thread +
// threads, ... of its chunk: step(tensor, j) for each (a copy of the tensor's row).
template <typename Step>
NNPERF_HOST_DEVICE inline void walk_chunk(const UpdateChunk ch, const UpdateTensor* tensors,
                                          int64_t thread, int64_t threads, Step step) {
  const UpdateTensor t = tensors[ch.tensor];
  for (int64_t j = ch.begin + thread; j < ch.end; j += threads) step(t, j);
}

}  // namespace nnperf
