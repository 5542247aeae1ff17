// cuDNN algorithm selection for the GPU inference and training paths (cudnn_conv.h), beside the
// algorithm lists as the CPU's conv_dispatch.cc is beside its registry: named, guess or find, a
// fallback with its reason, --strict.
#include <fmt/format.h>

#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/cudnn_conv.h"

namespace nnperf::cudnn {

ForwardChoice choose_forward(ConvForward& conv, const ConvProblem& p, const std::string& who,
                             const std::string& asked, bool strict, const float* x, float* y,
                             const FindOptions& find) {
  ForwardChoice info;
  if (is_conv_find(asked)) {
    for (const AlgoResult& r :
         cached_find(p, ConvPass::kForward, find, [&] { return conv.find_on(find, x, y); })) {
      if (r.status == "CUDNN_STATUS_SUCCESS") {
        info.algorithm = r.algorithm;
        break;
      }
    }
  } else if (find_conv_choice(asked) == nullptr) {
    const std::string why = conv.why_not(asked);
    if (why.empty()) {
      info.algorithm = asked;
    } else if (strict) {
      throw Error(
          fmt::format("layer {}: cuDNN cannot run {} here: {} (--strict)", who, asked, why));
    } else {
      info.fallback_reason = fmt::format("cuDNN: {}", why);
    }
  }
  if (info.algorithm.empty()) {
    for (const AlgoResult& r : conv.guess()) {
      if (r.status == "CUDNN_STATUS_SUCCESS" && conv.why_not(r.algorithm).empty()) {
        info.algorithm = r.algorithm;
        break;
      }
    }
  }
  if (info.algorithm.empty())
    throw Error(fmt::format("layer {}: cuDNN serves no forward algorithm", who));
  info.workspace_bytes = conv.workspace_bytes(info.algorithm);
  return info;
}

std::string choose_backward(ConvBackward& c, const ConvProblem& p, ConvPass pass,
                            const std::string& asked, bool deterministic, const FindOptions& find,
                            const float* first, const float* dy, float* out) {
  const std::vector<AlgoResult> ranked =
      is_conv_find(asked)
          ? cached_find(p, pass, find, [&] { return c.find_on(find, first, dy, out); })
          : c.guess();
  const auto usable = [&](const AlgoResult& r) {
    return r.status == "CUDNN_STATUS_SUCCESS" && (!deterministic || r.deterministic) &&
           c.why_not(r.algorithm).empty();
  };
  for (const AlgoResult& r : ranked) {
    if (r.algorithm == asked && usable(r)) return asked;
  }
  for (const AlgoResult& r : ranked) {
    if (usable(r)) return r.algorithm;
  }
  throw Error(fmt::format("cuDNN serves no {}backward algorithm for this convolution",
                          deterministic ? "deterministic " : ""));
}

}  // namespace nnperf::cudnn
