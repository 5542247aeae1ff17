// kernels/conv/cudnn_conv.h in a build without the CUDA backend: the algorithm names
// (cudnn_names.cc) exist for messages and listings; everything that would touch cuDNN refuses
// with the backend's reason.
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

namespace {
[[noreturn]] void refuse() { throw UsageError("--device cuda: " + cuda::unavailable_reason()); }
}  // namespace

const std::string& unavailable_reason() { return cuda::unavailable_reason(); }
std::string version() { return ""; }

struct ConvForward::Impl {};
ConvForward::ConvForward(const ConvProblem&, std::span<const float>, std::span<const float>) {
  refuse();
}
ConvForward::~ConvForward() = default;
std::string ConvForward::why_not(std::string_view) { refuse(); }
std::size_t ConvForward::workspace_bytes(std::string_view) { refuse(); }
std::vector<AlgoResult> ConvForward::guess() { refuse(); }
std::vector<AlgoResult> ConvForward::find(std::size_t) { refuse(); }
void ConvForward::run(std::string_view) { refuse(); }
std::vector<float> ConvForward::output() { refuse(); }

}  // namespace nnperf::cudnn
