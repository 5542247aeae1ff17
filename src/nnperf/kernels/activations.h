// The activation table: one row per activation, with forward, backward, a float64 reference
// and its derivative, and the FLOPs-per-element convention used in reports.
// Parameters are PyTorch's defaults: LeakyReLU slope 0.01, ELU alpha 1, GELU exact (erf).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace nnperf {

struct ActivationKernel {
  const char* name;     // as PyTorch spells it: "ReLU", "GELU", "LeakyReLU", ...
  const char* formula;  // for reports: "x * Phi(x)"
  // dst[i] = f(src[i]); src and dst may alias.
  void (*forward)(const float* src, float* dst, int64_t n);
  // d_src[i] = f'(src[i]) * d_dst[i]; src = the forward input, dst = the forward output (either
  // may be used); d_src may alias d_dst.
  void (*backward)(const float* src, const float* dst, const float* d_dst, float* d_src, int64_t n);
  double (*reference)(double x);
  double (*reference_derivative)(double x);
  // Forward FLOPs per element, counting exp/erf/tanh/log1p as one each (a convention, stated in
  // docs/conventions.md); used for GFLOP/s figures only.
  double flops_per_element;
  // Stated tolerance vs the float64 reference: |y - ref| <= abs_tol + rel_tol * |ref|.
  double abs_tol;
  double rel_tol;
  // Backward: |d_src - ref'(x) * d_dst| <= grad_abs_tol * |d_dst| + grad_rel_tol * |ref' * d_dst|.
  double grad_abs_tol;
  double grad_rel_tol;
};

std::span<const ActivationKernel> activation_kernels();  // in usra-survey's order
// By registry_key (core/name_registry.h): "leaky_relu"/"Leaky-ReLU"; "swish" for SiLU. Throws
// UsageError listing the valid names when unknown.
const ActivationKernel& find_activation(std::string_view name);
std::string activation_names();

}  // namespace nnperf
