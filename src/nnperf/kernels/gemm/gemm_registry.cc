// The GEMM registry: one row per algorithm, in the order users see them (naive, parallel,
// blocked, blas on the CPU; cuda, cublas on a CUDA device), plus the problem descriptor, the workspace-sizing convenience runner and the
// float64 reference every test compares against.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/core/workspace.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/gemm/gemm_internal.h"

namespace nnperf {

namespace {

std::string serves_any_shape(const GemmShape& s) {
  if (s.m < 0 || s.n < 0 || s.k < 0) return fmt::format("negative size in {}", s.str());
  return "";
}

std::size_t no_workspace(const GemmShape&, int) { return 0; }

// The GPU rows serve a shape when a CUDA device is usable and the sizes fit their launch.
std::string cuda_tiled_why_not(const GemmShape& s) {
  if (std::string r = serves_any_shape(s); !r.empty()) return r;
  if (!cuda::available()) return cuda::unavailable_reason();
  if ((s.m + 127) / 128 * ((s.n + 127) / 128) > INT32_MAX) {
    return fmt::format("{} needs more than 2^31 - 1 tiles of 128 x 128", s.str());
  }
  return "";
}

std::string cublas_why_not(const GemmShape& s) {
  if (std::string r = serves_any_shape(s); !r.empty()) return r;
  if (!cuda::available()) return cuda::unavailable_reason();
  if (std::string r = cublas_unusable_reason(); !r.empty()) return r;
  if (s.m > INT32_MAX || s.n > INT32_MAX || s.k > INT32_MAX) {
    return fmt::format("{} exceeds cublasSgemm's int sizes", s.str());
  }
  return "";
}

// tolerance_factor 1 for all four. Worst |y - ref| / (k * eps * sum|a*b| + eps * |ref|) measured
// by tests/kernels/gemm_test.cc over all its cases: 0.52 (naive, parallel) and 0.48 (blocked on
// every SIMD path, blas), both reached at k <= 1, where the bound is a couple of roundings; at
// k >= 100 (e.g. m257n263k301) it is 0.02, since float32 sums grow like sqrt(k), not k.
// The GPU rows (operands in device memory) have tolerance_factor 1 as well; tests/gpu/ checks them
// against the same reference and bound on a CUDA device.
constexpr std::array<GemmAlgorithm, 6> kGemmAlgorithms = {{
    {"naive", "plain i-k-j loops, one thread (srivas63_CMSE401's low-level loops)", Device::kCpu,
     gemm_naive, serves_any_shape, no_workspace, 1.0},
    {"parallel",
     "the naive loops split over rows of C with OpenMP (srivas63_CMSE401's parallel Numba)",
     Device::kCpu, gemm_parallel, serves_any_shape, no_workspace, 1.0},
    {"blocked",
     "own BLIS-style GEMM: cache blocking, packed panels, FMA register-tiled micro-kernel, OpenMP",
     Device::kCpu, gemm_blocked, serves_any_shape, gemm_blocked_workspace_bytes, 1.0},
    {"blas", "OpenBLAS cblas_sgemm (vendor baseline; OpenBLAS's threads, or slices over the caller's when its pool is 1)",
     Device::kCpu, gemm_blas, serves_any_shape, no_workspace, 1.0},
    {"cuda",
     "own CUDA SGEMM: 128x128 shared-memory tiles, 8x8 register tiles per thread, double-buffered "
     "k slices (operands on the GPU)",
     Device::kCuda, gemm_cuda_tiled, cuda_tiled_why_not, no_workspace, 1.0},
    {"cublas", "cuBLAS cublasSgemm, FP32 math (no TF32; operands on the GPU)", Device::kCuda,
     gemm_cublas, cublas_why_not, no_workspace, 1.0},
}};

}  // namespace

std::string GemmShape::str() const {
  return fmt::format("m{}n{}k{}{}{}", m, n, k, trans_a ? "_ta" : "", trans_b ? "_tb" : "");
}

std::span<const GemmAlgorithm> gemm_algorithms() { return kGemmAlgorithms; }

namespace {
constexpr Registry<GemmAlgorithm> kRegistry{kGemmAlgorithms};
}  // namespace

std::string gemm_algorithm_names() { return kRegistry.names(); }
std::string gemm_algorithm_names(Device device) {
  return kRegistry.names([&](const GemmAlgorithm& a) { return a.device == device; });
}

const GemmAlgorithm& find_gemm(std::string_view name, Device device) {
  const GemmAlgorithm& algo = find_gemm(name);
  if (algo.device != device) {
    throw UsageError(fmt::format("GEMM algorithm '{}' runs on the {} device, this run on the "
                                 "{}; expected one of: {}",
                                 name, device_name(algo.device), device_name(device),
                                 gemm_algorithm_names(device)));
  }
  return algo;
}

const GemmAlgorithm& find_gemm(std::string_view name) {
  if (const GemmAlgorithm* algo = kRegistry.find(name)) return *algo;
  throw UsageError(fmt::format("unknown GEMM algorithm '{}'; expected one of: {}", name,
                               gemm_algorithm_names()));
}

void gemm_scale_c(const GemmArgs& g) {
  for (int64_t i = 0; i < g.shape.m; ++i) {
    float* c = g.c + i * g.ldc;
    for (int64_t j = 0; j < g.shape.n; ++j) c[j] = g.beta == 0.0f ? 0.0f : g.beta * c[j];
  }
}

void gemm_run(const GemmAlgorithm& algo, GemmArgs args) {
  const std::string reason = algo.why_not(args.shape);
  if (!reason.empty()) throw Error(fmt::format("GEMM '{}' cannot run: {}", algo.name, reason));
  thread_local Workspace workspace;
  const std::size_t bytes = algo.workspace_bytes(args.shape, args.threads);
  if (args.workspace == nullptr && bytes > 0) {
    workspace.reserve(bytes);
    args.workspace = workspace.data();
  }
  algo.run(args);
}

// abs_sum[i][j] = sum_p |alpha * a_ip * b_pj| + |beta * c_ij|: every term that enters the
// result, so the error bound stays right when alpha or beta is not 1.
void gemm_reference(const GemmArgs& g, double* c_ref, double* abs_sum) {
  const GemmShape& s = g.shape;
  for (int64_t i = 0; i < s.m; ++i) {
    check_interrupt();  // a large problem's reference runs for minutes: Ctrl-C between rows
    for (int64_t j = 0; j < s.n; ++j) {
      double acc = 0.0;
      double abs_acc = 0.0;
      for (int64_t p = 0; p < s.k; ++p) {
        const double a = s.trans_a ? g.a[p * g.lda + i] : g.a[i * g.lda + p];
        const double b = s.trans_b ? g.b[j * g.ldb + p] : g.b[p * g.ldb + j];
        acc += a * b;
        abs_acc += std::fabs(a * b);
      }
      // As in BLAS, C is not read when beta == 0 (it may hold NaN).
      const double c_in = g.beta == 0.0f ? 0.0 : static_cast<double>(g.beta) * g.c[i * g.ldc + j];
      c_ref[i * s.n + j] = static_cast<double>(g.alpha) * acc + c_in;
      if (abs_sum != nullptr) {
        abs_sum[i * s.n + j] = std::fabs(static_cast<double>(g.alpha)) * abs_acc + std::fabs(c_in);
      }
    }
  }
}

}  // namespace nnperf
