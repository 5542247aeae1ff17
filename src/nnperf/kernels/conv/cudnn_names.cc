// The names of cuDNN's algorithms per pass (kernels/conv/cudnn_conv.h), in every build: the CUDA
// backend maps them to cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t by position, the others list
// them. Also the GPU's BatchNorm algorithm names (kernels/conv/cudnn_batchnorm.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

namespace {
constexpr std::array<const char*, 8> kForward = {
    "implicit_gemm", "implicit_precomp_gemm", "gemm",     "direct",
    "fft",           "fft_tiling",            "winograd", "winograd_nonfused"};
constexpr std::array<const char*, 6> kBackwardData = {
    "algo_0", "algo_1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
constexpr std::array<const char*, 7> kBackwardWeights = {
    "algo_0", "algo_1", "fft", "algo_3", "winograd", "winograd_nonfused", "fft_tiling"};
}  // namespace

std::span<const char* const> forward_algorithms() { return kForward; }

std::span<const char* const> algorithms(ConvPass pass) {
  switch (pass) {
    case ConvPass::kBackwardData: return kBackwardData;
    case ConvPass::kBackwardWeights: return kBackwardWeights;
    case ConvPass::kForward: break;
  }
  return kForward;
}

const std::vector<std::string>& batchnorm_algorithms() {
  static const std::vector<std::string> names = {"own", "cudnn"};
  return names;
}

std::string checked_batchnorm_algorithm(std::string_view flag, std::string_view name) {
  const std::vector<std::string>& names = batchnorm_algorithms();
  if (std::find(names.begin(), names.end(), name) == names.end()) {
    throw UsageError(fmt::format("{} {}: unknown BatchNorm algorithm; one of {}", flag, name,
                                 fmt::join(names, ", ")));
  }
  return std::string(name);
}

}  // namespace nnperf::cudnn
