// cuDNN's batch normalisation (cudnn_batchnorm.h): the legacy entry points resolved by name from
// the libcudnn that cudnn_cuda.cc loaded, on its handle (the calling thread's stream). The
// descriptors (x as [N, C, plane, 1], the per-channel tensors as [1, C, 1, 1]) are made for each
// call, as PyTorch's at::cudnn_batch_norm makes them: host work only, no device synchronisation.
#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/conv/cudnn_internal.h"

namespace nnperf::cudnn {

namespace {

struct BatchNormApi {
  decltype(&cudnnCreateTensorDescriptor) CreateTensor = nullptr;
  decltype(&cudnnSetTensor4dDescriptor) SetTensor4d = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) DestroyTensor = nullptr;
  decltype(&cudnnBatchNormalizationForwardTraining) ForwardTraining = nullptr;
  decltype(&cudnnBatchNormalizationBackward) Backward = nullptr;
  std::string reason;  // "" when every entry point resolved
};

const BatchNormApi& bn_api() {
  static const BatchNormApi b = [] {
    BatchNormApi a;
    void* lib = detail::library();
    if (lib == nullptr) {
      a.reason = unavailable_reason();
      return a;
    }
    detail::resolve(lib, a.CreateTensor, "cudnnCreateTensorDescriptor", a.reason);
    detail::resolve(lib, a.SetTensor4d, "cudnnSetTensor4dDescriptor", a.reason);
    detail::resolve(lib, a.DestroyTensor, "cudnnDestroyTensorDescriptor", a.reason);
    detail::resolve(lib, a.ForwardTraining, "cudnnBatchNormalizationForwardTraining", a.reason);
    detail::resolve(lib, a.Backward, "cudnnBatchNormalizationBackward", a.reason);
    return a;
  }();
  return b;
}

using detail::check;

// A float NCHW tensor descriptor, destroyed with its owner.
class TensorDesc {
 public:
  TensorDesc(int64_t n, int64_t c, int64_t h) {
    const BatchNormApi& a = bn_api();
    check(a.CreateTensor(&d_), "cudnnCreateTensorDescriptor");
    const cudnnStatus_t s =
        a.SetTensor4d(d_, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                      static_cast<int>(c), static_cast<int>(h), 1);
    if (s != CUDNN_STATUS_SUCCESS) {
      a.DestroyTensor(d_);
      check(s, "cudnnSetTensor4dDescriptor");
    }
  }
  ~TensorDesc() { bn_api().DestroyTensor(d_); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
  cudnnTensorDescriptor_t get() const { return d_; }

 private:
  cudnnTensorDescriptor_t d_ = nullptr;
};

// The data tensor's and the per-channel tensors' descriptors of shape s, after the checks.
struct Descs {
  explicit Descs(const BatchNormShape& s)
      : x(s.mb, s.channels, s.plane), channel(1, s.channels, 1) {}
  TensorDesc x, channel;
};

void require(const BatchNormShape& s) {
  if (std::string why = batchnorm_why_not(s); !why.empty())
    throw UsageError("--batchnorm cudnn: " + why);
}

// cuDNN's dx when the caller wants none: a device buffer the size of x, kept for the thread.
float* scratch_dx(int64_t n) {
  thread_local cuda::Buffer buffer;
  return cuda::grow_scratch(buffer, static_cast<std::size_t>(n));
}

}  // namespace

std::string batchnorm_why_not(const BatchNormShape& s) {
  if (const std::string& why = unavailable_reason(); !why.empty()) return why;
  if (const std::string& why = bn_api().reason; !why.empty()) return why;
  const int64_t n = s.mb * s.channels * s.plane;
  if (n >= std::numeric_limits<int32_t>::max()) {
    return fmt::format("{} x {} x {} = {} elements, more than cuDNN's descriptors take (2^31 - 1)",
                       s.mb, s.channels, s.plane, n);
  }
  return "";
}

void batchnorm_train_forward(const BatchNormForward& a) {
  const BatchNormShape& s = a.shape;
  NNPERF_CHECK(!a.relu, "cuDNN batchnorm: a fused ReLU is not supported");
  require(s);
  if (s.channels <= 0 || s.mb * s.plane <= 0) return;
  const Descs d(s);
  const float one = 1.0f, zero = 0.0f;
  check(bn_api().ForwardTraining(detail::handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, d.x.get(),
                                 a.x, d.x.get(), a.y, d.channel.get(), a.gamma, a.beta, a.momentum,
                                 a.running_mean, a.running_var, a.eps, a.save_mean, a.save_inv),
        "cudnnBatchNormalizationForwardTraining");
}

void batchnorm_backward(const BatchNormBackward& a) {
  const BatchNormShape& s = a.shape;
  require(s);
  if (s.channels <= 0 || s.mb * s.plane <= 0) return;
  const Descs d(s);
  float* dx = a.dx != nullptr ? a.dx : scratch_dx(s.mb * s.channels * s.plane);
  const float one = 1.0f, zero = 0.0f;
  check(bn_api().Backward(detail::handle(), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero,
                          d.x.get(), a.x, d.x.get(), a.dy, d.x.get(), dx, d.channel.get(), a.gamma,
                          a.d_gamma, a.d_beta, a.eps, a.save_mean, a.save_inv),
        "cudnnBatchNormalizationBackward");
}

}  // namespace nnperf::cudnn
