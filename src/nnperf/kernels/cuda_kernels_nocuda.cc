// kernels/cuda_kernels.h without the CUDA backend: each entry says why it cannot run.
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/cuda_kernels.h"

namespace nnperf::cuda_kernels {

namespace {
[[noreturn]] void fail() { throw Error(cuda::unavailable_reason()); }
}  // namespace

void activation_forward(const ActivationKernel&, const float*, float*, int64_t) { fail(); }
void activation_backward(const ActivationKernel&, const float*, const float*, const float*, float*,
                         int64_t) {
  fail();
}
void add_bias_rows(float*, const float*, int64_t, int64_t, int64_t) { fail(); }
void sum_rows(const float*, float*, int64_t, int64_t, int64_t) { fail(); }
void queue_softmax_cross_entropy(const float*, const int32_t*, int64_t, int64_t, float*, float,
                                 float, float*) {
  fail();
}
LossResult read_loss(const float*) { fail(); }
UpdateTable update_table(std::span<const UpdateTensor>) { fail(); }
void set_coefficients(UpdateTable&, const SgdCoefficients&) { fail(); }
void set_coefficients(UpdateTable&, const AdamCoefficients&) { fail(); }
void multi_sgd_update(const UpdateTable&) { fail(); }
void multi_adam_update(const UpdateTable&) { fail(); }

void channel_affine(const BatchNormShape&, const float*, const float*, const float*, float*) {
  fail();
}
void maxpool2d_forward(const PoolShape&, const float*, float*) { fail(); }
void avgpool2d_forward(const PoolShape&, bool, const float*, float*) { fail(); }
void adaptive_avgpool2d_forward(const PoolShape&, const float*, float*) { fail(); }
void clamp(const float*, float*, int64_t, float, float) { fail(); }
void add(const float*, const float*, float*, int64_t) { fail(); }
void concat_part(const float*, int64_t, int64_t, float*, int64_t, int64_t) { fail(); }

void copy(const float*, float*, int64_t) { fail(); }
void concat_slice(const float*, int64_t, int64_t, int64_t, int64_t, float*) { fail(); }
void channel_sum(const BatchNormShape&, const float*, float*) { fail(); }
void batchnorm_train_forward(const BatchNormTrainArgs&) { fail(); }
void batchnorm_backward(const BatchNormBackwardArgs&) { fail(); }
void maxpool2d_forward_argmax(const PoolShape&, const float*, float*, int32_t*) { fail(); }
void maxpool2d_backward(const PoolShape&, const float*, const int32_t*, float*) { fail(); }
void avgpool2d_backward(const PoolShape&, bool, const float*, float*) { fail(); }
void adaptive_avgpool2d_backward(const PoolShape&, const float*, float*) { fail(); }
void dropout_forward(const float*, float*, float*, int64_t, float, uint64_t, uint64_t,
                     const uint64_t*, uint64_t) {
  fail();
}
void multiply(const float*, const float*, float*, int64_t) { fail(); }
void clamp_backward(const float*, const float*, float*, int64_t, float, float) { fail(); }

}  // namespace nnperf::cuda_kernels
