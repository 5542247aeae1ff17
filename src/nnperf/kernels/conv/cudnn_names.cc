// The names of cuDNN's algorithms per pass (kernels/conv/cudnn_conv.h), in every build: the CUDA
// backend maps them to cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t by position, the others list
// them. Also the GPU's BatchNorm algorithm names (kernels/conv/cudnn_batchnorm.h). Names are
// found under the project's one name rule (core/name_registry.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
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
constexpr std::array<const char*, 2> kBatchNorm = {"own", "cudnn"};
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

const char* find_algorithm(ConvPass pass, std::string_view name) {
  const char* const* row = Registry<const char*>(algorithms(pass)).find(name);
  return row ? *row : nullptr;
}

std::string checked_algorithm(ConvPass pass, std::string_view flag, std::string_view name) {
  if (const char* row = find_algorithm(pass, name)) return row;
  throw UsageError(fmt::format("{} {}: not one of cuDNN's {} algorithms: {}", flag, name,
                               to_string(pass), fmt::join(algorithms(pass), ", ")));
}

const std::vector<std::string>& batchnorm_algorithms() {
  static const std::vector<std::string> names(kBatchNorm.begin(), kBatchNorm.end());
  return names;
}

std::string checked_batchnorm_algorithm(std::string_view flag, std::string_view name) {
  if (const char* const* row = Registry<const char*>(kBatchNorm).find(name)) return *row;
  throw UsageError(fmt::format("{} {}: unknown BatchNorm algorithm; one of {}", flag, name,
                               fmt::join(kBatchNorm, ", ")));
}

}  // namespace nnperf::cudnn
