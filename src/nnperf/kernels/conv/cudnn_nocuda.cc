// kernels/conv/cudnn_conv.h in a build without the CUDA backend, or with it but without cudnn.h
// (NNPERF_CUDNN_HEADER_MISSING, set by CMakeLists.txt): the algorithm names (cudnn_names.cc) exist
// for messages and listings; everything that would touch cuDNN refuses with the reason.
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

const std::string& unavailable_reason() {
#ifdef NNPERF_CUDNN_HEADER_MISSING
  static const std::string reason = "nnperf was built without cudnn.h (cuDNN's header)";
  return reason;
#else
  return cuda::unavailable_reason();
#endif
}

namespace {
[[noreturn]] void refuse() { throw UsageError("--device cuda: " + unavailable_reason()); }
}  // namespace

std::string version() { return ""; }
void fit_workspace(std::size_t) { refuse(); }

struct ConvForward::Impl {};
ConvForward::ConvForward(const ConvProblem&, std::span<const float>, std::span<const float>) {
  refuse();
}
ConvForward::ConvForward(const ConvProblem&, std::span<const float>) { refuse(); }
ConvForward::~ConvForward() = default;
std::string ConvForward::why_not(std::string_view) { refuse(); }
std::size_t ConvForward::workspace_bytes(std::string_view) { refuse(); }
std::vector<AlgoResult> ConvForward::guess() { refuse(); }
std::vector<std::string> ConvForward::engines() { refuse(); }
std::string ConvForward::engines_reason() { refuse(); }
std::vector<AlgoResult> ConvForward::find(const FindOptions&) { refuse(); }
std::vector<AlgoResult> ConvForward::find_on(const FindOptions&, const float*, float*) { refuse(); }
void ConvForward::run(std::string_view) { refuse(); }
void ConvForward::run_on(std::string_view, const float*, float*) { refuse(); }
void ConvForward::run_with(std::string_view, const float*, const float*, float*) { refuse(); }
void ConvForward::release_weights() { refuse(); }
const float* ConvForward::own_weights() const { refuse(); }
std::vector<float> ConvForward::output() { refuse(); }

struct ConvBackward::Impl {};
ConvBackward::ConvBackward(const ConvProblem&, ConvPass, std::span<const float>,
                           std::span<const float>) {
  refuse();
}
ConvBackward::ConvBackward(const ConvProblem&, ConvPass) { refuse(); }
ConvBackward::~ConvBackward() = default;
std::string ConvBackward::why_not(std::string_view) { refuse(); }
std::size_t ConvBackward::workspace_bytes(std::string_view) { refuse(); }
std::vector<AlgoResult> ConvBackward::guess() { refuse(); }
std::vector<std::string> ConvBackward::engines() { refuse(); }
std::string ConvBackward::engines_reason() { refuse(); }
std::vector<AlgoResult> ConvBackward::find(const FindOptions&) { refuse(); }
void ConvBackward::run(std::string_view) { refuse(); }
std::vector<float> ConvBackward::output() { refuse(); }
std::vector<AlgoResult> ConvBackward::find_on(const FindOptions&, const float*, const float*,
                                              float*) {
  refuse();
}
void ConvBackward::run_on(std::string_view, const float*, const float*, float*) { refuse(); }

std::string batchnorm_why_not(const BatchNormShape&) { return unavailable_reason(); }
void batchnorm_train_forward(const BatchNormForward&) { refuse(); }
void batchnorm_backward(const BatchNormBackward&) { refuse(); }

}  // namespace nnperf::cudnn
