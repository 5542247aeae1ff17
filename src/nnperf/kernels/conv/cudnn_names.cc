// The names of cuDNN's forward algorithms (kernels/conv/cudnn_conv.h), in every build: the CUDA
// backend maps them to cudnnConvolutionFwdAlgo_t by position, the others list them.
#include <array>

#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

namespace {
constexpr std::array<const char*, 8> kForward = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm",     "direct",
    "fft",           "fft_tiling",            "winograd", "winograd_nonfused"};
}  // namespace

std::span<const char* const> forward_algorithms() { return kForward; }

}  // namespace nnperf::cudnn
