// The GPU kernels beside the CPU ones: the same operations and semantics as activations.h,
// elementwise.h, softmax.h and the optimizers' updates (train/optimizer.cc), and for CNN inference
// and training pool.h's pools, BatchNorm, Add, Concat and Dropout with their backward passes, on
// device pointers, queued on the default stream (asynchronous unless a result must come back to the
// host). Built in kernels/elementwise_cuda.cu, kernels/cnn_cuda.cu and kernels/cnn_train_cuda.cu;
// without the CUDA backend every entry throws
// the reason (kernels/cuda_kernels_nocuda.cc). Tests: tests/gpu/cuda_kernels_test.cc and
// cuda_cnn_kernels_test.cc against the float64 references and tolerances of the CPU rows.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>

#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/adam.h"
#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/multi_tensor_update.h"
#include "nnperf/kernels/pool.h"
#include "nnperf/kernels/softmax.h"

namespace nnperf::cuda_kernels {

// The activation row `a` (one of activation_kernels()): dst = f(src); d_src = f'(src) * d_dst,
// with src the forward input and dst its output, as ActivationKernel::forward/backward.
void activation_forward(const ActivationKernel& a, const float* src, float* dst, int64_t n);
void activation_backward(const ActivationKernel& a, const float* src, const float* dst,
                         const float* d_dst, float* d_src, int64_t n);

// dst[i][j] += bias[j] over mb rows of n (row stride ld); d_bias[j] = sum_i d_dst[i][j].
void add_bias_rows(float* dst, const float* bias, int64_t mb, int64_t n, int64_t ld);
void sum_rows(const float* d_dst, float* d_bias, int64_t mb, int64_t n, int64_t ld);

// softmax.h's softmax_cross_entropy on device logits and labels (labels in [0, n), checked by the
// caller), queued: the loss sum and the count of correct rows go to `slot`, device memory of
// kLossSlotFloats floats (cudaMalloc-aligned), zeroed first; read_loss waits for the queued work
// and brings them back. Nothing synchronises in between, so a step's loss can be captured into a
// CUDA graph and read once the whole step has run.
inline constexpr std::size_t kLossSlotFloats = 4;  // a double and an unsigned 64-bit count
void queue_softmax_cross_entropy(const float* logits, const int32_t* labels, int64_t mb, int64_t n,
                                 float* d_logits, float grad_scale, float label_smoothing,
                                 float* slot);
LossResult read_loss(const float* slot);

// ---- the optimizers' update: every parameter tensor in one launch (multi_tensor_update.h) ----
// The tensors and their chunks in device memory, uploaded once by update_table and launched over
// at every step; made again when a tensor's buffers move (state allocated, a checkpoint loaded).
// The step's coefficients live in the table's own device slot: every launch reads them there, so
// a launch captured into a CUDA graph takes those set before each replay.
struct UpdateTable {
  cuda::Buffer rows;          // the UpdateTensor rows, then the UpdateChunk rows, as bytes
  cuda::Buffer coefficients;  // SgdCoefficients or AdamCoefficients, as set_coefficients wrote
  std::size_t tensors = 0;
  int64_t blocks = 0;           // chunks: one block each
  bool s1 = false, s2 = false;  // every tensor has that state buffer
  // What set_coefficients last wrote, checked on the host when a launch is queued.
  enum class Rule { kNone, kSgd, kAdam } rule = Rule::kNone;
  bool momentum = false;  // the SGD coefficients' momentum is not 0
};
// Throws Error naming the tensor when one with elements has no values or gradient.
UpdateTable update_table(std::span<const UpdateTensor> tensors);
// Writes one step's coefficients into the table's slot: a synchronous upload, ordered on this
// thread's stream after the work already queued (so after any earlier launch read the slot; a
// copy from pageable memory waits for that work, so set them before queueing a step's passes).
// Refused (Error) while the stream is captured, and for the other rule than the table's first
// coefficients (a captured launch reads the slot as the rule it was queued for).
void set_coefficients(UpdateTable& table, const SgdCoefficients& c);
void set_coefficients(UpdateTable& table, const AdamCoefficients& c);
// torch.optim.SGD's step (sgd_element) on every tensor of the table with the SGD coefficients it
// holds; with momentum the tensors all need s1. Both are checked (Error) before anything is queued.
void multi_sgd_update(const UpdateTable& table);
// torch.optim.Adam's step (adam_element, the coefficients of train/optimizer.cc) with the Adam
// coefficients the table holds; the tensors all need s1 and s2 (checked).
void multi_adam_update(const UpdateTable& table);

// ---- CNN inference (kernels/cnn_cuda.cu), one thread per output element ----
// y[n][c][i] = x[n][c][i] * scale[c] + shift[c] (BatchNorm with its running statistics folded,
// as batchnorm_apply; scale null = 1: a convolution's bias).
void channel_affine(const BatchNormShape& s, const float* x, const float* scale, const float* shift,
                    float* y);
// pool.h's semantics: max with padding as -inf and NaN propagating (no argmax: inference);
// average with or without the padding in the divisor; adaptive average with PyTorch's windows.
void maxpool2d_forward(const PoolShape& s, const float* x, float* y);
void avgpool2d_forward(const PoolShape& s, bool count_include_pad, const float* x, float* y);
void adaptive_avgpool2d_forward(const PoolShape& s, const float* x, float* y);
// y = min(max(x, lo), hi) over n elements (ReLU6: lo 0, hi 6); a NaN stays NaN.
void clamp(const float* x, float* y, int64_t n, float lo, float hi);
// y = a + b over n elements (the residual Add).
void add(const float* a, const float* b, float* y, int64_t n);
// Concat along channels: each of the mb images' `src_per_image` values go to dst at
// image * dst_per_image + offset.
void concat_part(const float* src, int64_t mb, int64_t src_per_image, float* dst,
                 int64_t dst_per_image, int64_t offset);

// ---- CNN training (kernels/cnn_train_cuda.cu) ----
// y = x over n elements (Add's and Flatten's backward).
void copy(const float* x, float* y, int64_t n);
// Concat's backward: part[image][j] = full[image * full_per_image + offset + j].
void concat_slice(const float* full, int64_t mb, int64_t part_per_image, int64_t full_per_image,
                  int64_t offset, float* part);
// db[c] = sum over images and positions of dy (a convolution's bias gradient), float64 sums.
void channel_sum(const BatchNormShape& s, const float* dy, float* db);
// batchnorm.h's training forward and backward on device pointers (args.threads unused; the
// running statistics, save_mean and save_inv are device arrays, save_* float64), sums in float64.
void batchnorm_train_forward(const BatchNormTrainArgs& args);
void batchnorm_backward(const BatchNormBackwardArgs& args);
// Max pooling that also records each output's input index within its plane (pool.h's rule), and
// the pool backward passes (dx overwritten), equal to the CPU loops' results.
void maxpool2d_forward_argmax(const PoolShape& s, const float* x, float* y, int32_t* argmax);
void maxpool2d_backward(const PoolShape& s, const float* dy, const int32_t* argmax, float* dx);
void avgpool2d_backward(const PoolShape& s, bool count_include_pad, const float* dy, float* dx);
void adaptive_avgpool2d_backward(const PoolShape& s, const float* dy, float* dx);
// Inverted dropout in training: mask[i] = dropout_mask_entry(seed, offset + i, keep)
// (kernels/counter_rng.h) and y[i] = x[i] * mask[i]; the backward is multiply(dy, mask, dx).
// With `steps` (a device counter, read when the kernel runs) the draws start at
// offset + *steps * per_step instead: a training step captured once as a CUDA graph draws new
// masks at each launch.
void dropout_forward(const float* x, float* y, float* mask, int64_t n, float keep, uint64_t seed,
                     uint64_t offset, const uint64_t* steps = nullptr, uint64_t per_step = 0);
// y = a * b over n elements.
void multiply(const float* a, const float* b, float* y, int64_t n);
// clamp's backward (ReLU6: lo 0, hi 6): dx = dy where lo < x < hi, else 0, as nn/relu6.cc.
void clamp_backward(const float* x, const float* dy, float* dx, int64_t n, float lo, float hi);

}  // namespace nnperf::cuda_kernels
