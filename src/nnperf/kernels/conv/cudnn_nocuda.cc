// kernels/conv/cudnn_conv.h in a build without the CUDA backend: the algorithm names exist (for
// messages and listings); everything that would touch cuDNN refuses with the backend's reason.
#include <array>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

namespace {
constexpr std::array<const char*, 8> kForward = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm",     "direct",
    "fft",           "fft_tiling",            "winograd", "winograd_nonfused"};
[[noreturn]] void refuse() { throw UsageError("--device cuda: " + cuda::unavailable_reason()); }
}  // namespace

std::span<const char* const> forward_algorithms() { return kForward; }
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
