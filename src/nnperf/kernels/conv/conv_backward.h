// The backward passes of 2-D convolution, as registries beside the forward one (conv.h):
//   backward-data     dX = dL/d src   from dY and the weights
//   backward-weights  dW = dL/d wei (and db = dL/d bias) from src and dY
// Layouts as conv.h. Each row says which problems it serves (why_not), its workspace, its
// measured tolerance and its modelled cost (seconds on the machine model); the selection among
// them (named, guess, find, strict or fallback) is conv_dispatch.h's, as for the forward pass.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nnperf/kernels/conv/conv.h"

namespace nnperf {

enum class ConvPass { kForward, kBackwardData, kBackwardWeights };
const char* to_string(ConvPass pass);  // "forward", "backward-data", "backward-weights"

struct ConvBackwardArgs {
  const ConvProblem* p = nullptr;
  const float* src = nullptr;       // backward-weights
  const float* wei = nullptr;       // backward-data (OIHW)
  const float* dst_grad = nullptr;  // dY, mb x oc x oh x ow
  float* src_grad = nullptr;        // backward-data: dX, overwritten
  float* wei_grad = nullptr;        // backward-weights: dW, overwritten
  float* bias_grad = nullptr;       // backward-weights: db (oc), overwritten; may be null
  void* workspace = nullptr;        // >= workspace_bytes(p, threads), 64-byte aligned
  int threads = 1;
};

struct ConvBackwardAlgorithm {
  const char* name;
  const char* description;
  ConvPass pass;
  std::string (*why_not)(const ConvProblem& p);  // "" when it serves p
  std::size_t (*workspace_bytes)(const ConvProblem& p, int threads);
  void (*run)(const ConvBackwardArgs& args);
  // As ConvAlgorithm: |y - ref| <= c * K * eps * sum|a*b| + eps * |ref|, K the reduction length
  // of the pass (backward-data: ocg*kh*kw, backward-weights: mb*oh*ow).
  double tolerance_factor;
  double (*cost)(const ConvProblem& p, int threads);
};

std::span<const ConvBackwardAlgorithm> conv_backward_algorithms(ConvPass pass);
// By registry_key (core/name_registry.h); throws UsageError listing the pass's names when unknown.
const ConvBackwardAlgorithm& find_conv_backward(ConvPass pass, std::string_view name);
std::string conv_backward_algorithm_names(ConvPass pass);

// Plain float64 references: dx (mb x ic x ih x iw), dw (OIHW), db (oc) from x, w and dy; each
// may be null to skip it. abs_* (when non-null) receive the per-output sums of |products| for
// the tolerance formula.
void conv2d_backward_reference(const ConvProblem& p, const float* x, const float* w,
                               const float* dy, double* dx, double* dw, double* db, double* abs_dx,
                               double* abs_dw);

}  // namespace nnperf
