// The GPU kernels of kernels/cuda_kernels.h: one thread per element (grid-stride loops; four at a
// time, as float4, for the activations on aligned arrays) for the activations and bias; one block
// per chunk of a parameter tensor for the optimizers' update over all of them
// (multi_tensor_update.h); one thread per row for softmax cross-entropy and per column for the
// bias gradient (the MLP's rows are at most a few thousand wide). Plain CUDA math (double erfc and
// exp for GELU; expf, expm1f, log1pf, tanhf) without fast-math, so the CPU rows' tolerances apply.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/gpu/cuda.h"
#include "nnperf/gpu/cuda_check.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/cuda_launch.cuh"

namespace nnperf::cuda_kernels {

namespace {

enum class Act { kRelu, kGelu, kSigmoid, kTanh, kElu, kLeakyRelu, kSilu, kMish };

Act act_of(const ActivationKernel& a) {
  const std::string_view n = a.name;
  if (n == "ReLU") return Act::kRelu;
  if (n == "GELU") return Act::kGelu;
  if (n == "Sigmoid") return Act::kSigmoid;
  if (n == "Tanh") return Act::kTanh;
  if (n == "ELU") return Act::kElu;
  if (n == "LeakyReLU") return Act::kLeakyRelu;
  if (n == "SiLU") return Act::kSilu;
  if (n == "Mish") return Act::kMish;
  cuda::fail(std::string("no CUDA kernel for activation ") + a.name);
}

constexpr float kLeakySlope = 0.01f;     // torch.nn.LeakyReLU default
constexpr float kMishThreshold = 20.0f;  // torch.nn.functional.softplus default threshold
constexpr double kInvSqrt2D = 0.70710678118654752440;
constexpr double kInvSqrt2PiD = 0.39894228040143267794;

__device__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
// sigmoid(x) and 1 - sigmoid(x) = sigmoid(-x), each to full float precision (1 - s would lose
// the low bits of the second as s nears 1).
__device__ void sigmoid_pair(float x, float& s, float& c) {
  if (x >= 0.0f) {
    const float e = expf(-x);
    s = 1.0f / (1.0f + e);
    c = e * s;
  } else {
    const float e = expf(x);
    c = 1.0f / (1.0f + e);
    s = e * c;
  }
}
__device__ float softplus(float x) { return x > kMishThreshold ? x : log1pf(expf(x)); }

__device__ float forward_one(Act a, float x) {
  switch (a) {
    case Act::kRelu: return x > 0.0f ? x : 0.0f;
    // In double, erfc(-x/sqrt2) rather than 1 + erf(x/sqrt2): no cancellation in the negative
    // tail, and no amplification of the argument's float rounding there (erfc's relative slope
    // is about 2|x|/sqrt2 there: measured 6e-7 relative at x = -3.5 in float on an H200).
    case Act::kGelu:
      return static_cast<float>(0.5 * x * erfc(-x * kInvSqrt2D));
    case Act::kSigmoid: return sigmoid(x);
    case Act::kTanh: return tanhf(x);
    case Act::kElu: return x > 0.0f ? x : expm1f(x);
    case Act::kLeakyRelu: return x > 0.0f ? x : kLeakySlope * x;
    case Act::kSilu: return x * sigmoid(x);
    case Act::kMish: return x * tanhf(softplus(x));
  }
  return 0.0f;
}

// f'(x), from the forward input.
__device__ float derivative_one(Act a, float x) {
  switch (a) {
    case Act::kRelu: return x > 0.0f ? 1.0f : 0.0f;
    case Act::kGelu:
      return static_cast<float>(0.5 * erfc(-x * kInvSqrt2D) +
                                x * kInvSqrt2PiD * exp(-0.5 * double{x} * x));
    case Act::kSigmoid: {
      float s, c;
      sigmoid_pair(x, s, c);
      return s * c;
    }
    case Act::kTanh: {
      const float t = tanhf(x);
      return 1.0f - t * t;
    }
    case Act::kElu: return x > 0.0f ? 1.0f : expf(x);
    case Act::kLeakyRelu: return x > 0.0f ? 1.0f : kLeakySlope;
    case Act::kSilu: {
      float s, c;
      sigmoid_pair(x, s, c);
      return s * (1.0f + x * c);
    }
    case Act::kMish: {
      const float t = tanhf(softplus(x));
      // d/dx softplus = sigmoid(x) (1 above the threshold, where softplus(x) = x).
      const float dsp = x > kMishThreshold ? 1.0f : sigmoid(x);
      return t + x * (1.0f - t * t) * dsp;
    }
  }
  return 0.0f;
}

__global__ void act_forward(Act a, const float* src, float* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = forward_one(a, src[i]);
  }
}

__global__ void act_backward(Act a, const float* src, const float* d_dst, float* d_src, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    d_src[i] = derivative_one(a, src[i]) * d_dst[i];
  }
}

// The two above on 16-byte-aligned arrays: four elements at a time (float4), the same function
// of each.
__global__ void act_forward4(Act a, const float* src, float* dst, int64_t n) {
  detail::by_groups_of_four(
      n,
      [&](int64_t g) {
        const float4 x = reinterpret_cast<const float4*>(src)[g];
        reinterpret_cast<float4*>(dst)[g] = make_float4(forward_one(a, x.x), forward_one(a, x.y),
                                                        forward_one(a, x.z), forward_one(a, x.w));
      },
      [&](int64_t k) { dst[k] = forward_one(a, src[k]); });
}

__global__ void act_backward4(Act a, const float* src, const float* d_dst, float* d_src,
                              int64_t n) {
  detail::by_groups_of_four(
      n,
      [&](int64_t g) {
        const float4 x = reinterpret_cast<const float4*>(src)[g];
        const float4 d = reinterpret_cast<const float4*>(d_dst)[g];
        reinterpret_cast<float4*>(d_src)[g] =
            make_float4(derivative_one(a, x.x) * d.x, derivative_one(a, x.y) * d.y,
                        derivative_one(a, x.z) * d.z, derivative_one(a, x.w) * d.w);
      },
      [&](int64_t k) { d_src[k] = derivative_one(a, src[k]) * d_dst[k]; });
}

__global__ void bias_rows(float* dst, const float* bias, int64_t mb, int64_t n, int64_t ld) {
  const int64_t total = mb * n;
  for (int64_t e = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[e / n * ld + e % n] += bias[e % n];
  }
}

__global__ void column_sums(const float* d_dst, float* d_bias, int64_t mb, int64_t n, int64_t ld) {
  // Grid-stride: blocks_for caps the grid at kMaxBlocks.
  for (int64_t j = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; j < n;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    double s = 0.0;
    for (int64_t i = 0; i < mb; ++i) s += d_dst[i * ld + j];
    d_bias[j] = static_cast<float>(s);
  }
}

struct LossAccumulator {
  double loss_sum;
  unsigned long long correct;
};

__global__ void softmax_xent(const float* logits, const int32_t* labels, int64_t mb, int64_t n,
                             float* d_logits, float grad_scale, float smoothing,
                             LossAccumulator* acc) {
  // Grid-stride: blocks_for caps the grid at kMaxBlocks.
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < mb;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float* x = logits + r * n;
    const int label = labels[r];
    float mx = x[0];
    int64_t arg = 0;
    for (int64_t c = 1; c < n; ++c) {
      if (x[c] > mx) {
        mx = x[c];
        arg = c;
      }
    }
    double sum = 0.0, sum_shifted = 0.0;
    for (int64_t c = 0; c < n; ++c) {
      const double z = static_cast<double>(x[c]) - mx;
      sum += exp(z);
      sum_shifted += z;
    }
    const double log_sum = log(sum);
    const double logp_label = static_cast<double>(x[label]) - mx - log_sum;
    const double sum_logp = sum_shifted - static_cast<double>(n) * log_sum;
    const double s = smoothing;
    const double loss = -((1.0 - s) * logp_label + s / static_cast<double>(n) * sum_logp);
    atomicAdd(&acc->loss_sum, loss);
    if (arg == label) atomicAdd(&acc->correct, 1ull);
    if (d_logits == nullptr) continue;
    float* d = d_logits + r * n;
    const float off = smoothing / static_cast<float>(n);
    for (int64_t c = 0; c < n; ++c) {
      const float p = static_cast<float>(exp(static_cast<double>(x[c]) - mx - log_sum));
      const float t = (c == label ? 1.0f - smoothing : 0.0f) + off;
      d[c] = (p - t) * grad_scale;
    }
  }
}

// Each block reads the step's coefficients from the table's slot (UpdateTable::coefficients).
__global__ void multi_sgd(const UpdateTensor* tensors, const UpdateChunk* chunks,
                          const SgdCoefficients* at) {
  const SgdCoefficients c = *at;
  walk_chunk(chunks[blockIdx.x], tensors, threadIdx.x, blockDim.x,
             [&](const UpdateTensor& t, int64_t j) { sgd_element(t.w, t.grad, t.s1, j, c); });
}

__global__ void multi_adam(const UpdateTensor* tensors, const UpdateChunk* chunks,
                           const AdamCoefficients* at) {
  const AdamCoefficients c = *at;
  walk_chunk(
      chunks[blockIdx.x], tensors, threadIdx.x, blockDim.x,
      [&](const UpdateTensor& t, int64_t j) { adam_element(t.w, t.grad, t.s1, t.s2, j, c); });
}

using detail::blocks_for;
using detail::kBlock;
using detail::launched;

}  // namespace

void activation_forward(const ActivationKernel& a, const float* src, float* dst, int64_t n) {
  detail::launch_elementwise(n, detail::aligned16({src, dst}), "activation forward", act_forward4,
                             act_forward, act_of(a), src, dst, n);
}

void activation_backward(const ActivationKernel& a, const float* src, const float* /*dst*/,
                         const float* d_dst, float* d_src, int64_t n) {
  detail::launch_elementwise(n, detail::aligned16({src, d_dst, d_src}), "activation backward",
                             act_backward4, act_backward, act_of(a), src, d_dst, d_src, n);
}

void add_bias_rows(float* dst, const float* bias, int64_t mb, int64_t n, int64_t ld) {
  cuda::ensure_device();
  if (mb <= 0 || n <= 0) return;
  bias_rows<<<blocks_for(mb * n), kBlock>>>(dst, bias, mb, n, ld);
  launched("add_bias_rows");
}

void sum_rows(const float* d_dst, float* d_bias, int64_t mb, int64_t n, int64_t ld) {
  cuda::ensure_device();
  if (n <= 0) return;
  column_sums<<<blocks_for(n), kBlock>>>(d_dst, d_bias, mb, n, ld);
  launched("sum_rows");
}

void queue_softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t mb, int64_t n,
                                 float* d_logits, float grad_scale, float label_smoothing,
                                 float* slot) {
  static_assert(sizeof(LossAccumulator) <= kLossSlotFloats * sizeof(float));
  cuda::ensure_device();
  auto* acc = reinterpret_cast<LossAccumulator*>(slot);
  cuda::check(cudaMemsetAsync(acc, 0, sizeof(LossAccumulator)), "cudaMemsetAsync");
  if (mb <= 0) return;
  softmax_xent<<<blocks_for(mb), kBlock>>>(logits, labels, mb, n, d_logits, grad_scale,
                                           label_smoothing, acc);
  launched("softmax_cross_entropy");
}

LossResult read_loss(const float* slot) {
  LossAccumulator host{};
  cuda::check(cudaMemcpy(&host, slot, sizeof host, cudaMemcpyDeviceToHost), "cudaMemcpy (loss)");
  return {host.loss_sum, static_cast<int64_t>(host.correct)};
}

UpdateTable update_table(std::span<const UpdateTensor> tensors) {
  cuda::ensure_device();
  std::vector<int64_t> sizes;
  UpdateTable table;
  table.tensors = tensors.size();
  table.s1 = table.s2 = true;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const UpdateTensor& t = tensors[i];
    if (t.n > 0 && (t.w == nullptr || t.grad == nullptr)) {
      cuda::fail("update table: tensor " + std::to_string(i) + " of " + std::to_string(t.n) +
                 " elements has no " + (t.w == nullptr ? "values" : "gradient"));
    }
    table.s1 = table.s1 && (t.n == 0 || t.s1 != nullptr);
    table.s2 = table.s2 && (t.n == 0 || t.s2 != nullptr);
    sizes.push_back(t.n);
  }
  const std::vector<UpdateChunk> chunks = update_chunks(sizes);
  table.blocks = static_cast<int64_t>(chunks.size());
  if (table.blocks >= int64_t{1} << 31) {
    cuda::fail("update table: " + std::to_string(table.blocks) + " chunks, more than a grid holds");
  }
  static_assert(sizeof(UpdateTensor) % alignof(UpdateChunk) == 0);
  const std::size_t head = tensors.size_bytes(), bytes = head + chunks.size() * sizeof(UpdateChunk);
  std::vector<float> staging((bytes + sizeof(float) - 1) / sizeof(float));
  if (!tensors.empty()) std::memcpy(staging.data(), tensors.data(), head);
  if (!chunks.empty()) {
    std::memcpy(reinterpret_cast<char*>(staging.data()) + head, chunks.data(),
                chunks.size() * sizeof(UpdateChunk));
  }
  table.rows = cuda::to_device(staging);
  table.coefficients = cuda::Buffer(
      (std::max(sizeof(SgdCoefficients), sizeof(AdamCoefficients)) + sizeof(float) - 1) /
      sizeof(float));
  return table;
}

namespace {

// The table's two arrays on the device.
const UpdateTensor* tensor_rows(const UpdateTable& t) {
  return reinterpret_cast<const UpdateTensor*>(t.rows.data());
}
const UpdateChunk* chunk_rows(const UpdateTable& t) {
  return reinterpret_cast<const UpdateChunk*>(reinterpret_cast<const char*>(t.rows.data()) +
                                              t.tensors * sizeof(UpdateTensor));
}

}  // namespace

namespace {

// The checks set_coefficients makes before it writes the slot.
void check_settable(const UpdateTable& table, UpdateTable::Rule rule) {
  cuda::ensure_device();
  if (table.rule != UpdateTable::Rule::kNone && table.rule != rule) {
    cuda::fail("update table: its rule (SGD or Adam) is that of its first coefficients");
  }
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cuda::check(cudaStreamIsCapturing(cudaStreamPerThread, &status), "cudaStreamIsCapturing");
  if (status != cudaStreamCaptureStatusNone) {
    cuda::fail("update coefficients set while this thread's stream is captured: set them first");
  }
}

}  // namespace

void set_coefficients(UpdateTable& table, const SgdCoefficients& c) {
  check_settable(table, UpdateTable::Rule::kSgd);
  cuda::upload_value(table.coefficients, c);
  table.rule = UpdateTable::Rule::kSgd;
  table.momentum = c.momentum != 0.0f;
}

void set_coefficients(UpdateTable& table, const AdamCoefficients& c) {
  check_settable(table, UpdateTable::Rule::kAdam);
  cuda::upload_value(table.coefficients, c);
  table.rule = UpdateTable::Rule::kAdam;
}

void multi_sgd_update(const UpdateTable& table) {
  cuda::ensure_device();
  if (table.rule != UpdateTable::Rule::kSgd) cuda::fail("SGD update: no SGD coefficients set");
  if (table.momentum && !table.s1) cuda::fail("SGD with momentum: a tensor has no buffer");
  if (table.blocks == 0) return;
  multi_sgd<<<static_cast<unsigned>(table.blocks), kBlock>>>(
      tensor_rows(table), chunk_rows(table),
      reinterpret_cast<const SgdCoefficients*>(table.coefficients.data()));
  launched("multi_sgd_update");
}

void multi_adam_update(const UpdateTable& table) {
  cuda::ensure_device();
  if (table.rule != UpdateTable::Rule::kAdam) cuda::fail("Adam update: no Adam coefficients set");
  if (!table.s1 || !table.s2) cuda::fail("Adam: a tensor has no moment buffers");
  if (table.blocks == 0) return;
  multi_adam<<<static_cast<unsigned>(table.blocks), kBlock>>>(
      tensor_rows(table), chunk_rows(table),
      reinterpret_cast<const AdamCoefficients*>(table.coefficients.data()));
  launched("multi_adam_update");
}

}  // namespace nnperf::cuda_kernels
