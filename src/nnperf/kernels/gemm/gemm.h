// GEMM algorithms, one registry. Letters: m, n, k.
//   C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, all row-major.
//   op(A) = A (stored m x k, lda >= k) or A^T (A stored k x m, lda >= m); likewise B.
// FLOPs = 2*m*n*k (one multiply-add = 2 FLOPs, the convention used everywhere in nnperf).
// A new algorithm is one file in this folder plus one row in gemm_registry.cc.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace nnperf {

enum class Device { kCpu, kCuda };

struct GemmShape {
  bool trans_a = false;
  bool trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  std::string str() const;  // benchdnn-like: "m64n128k784", "m784n512k64_ta", "..._ta_tb"
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

struct GemmArgs {
  GemmShape shape;
  float alpha = 1.0f;
  float beta = 0.0f;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float* c = nullptr;
  int64_t ldc = 0;
  // At least workspace_bytes(shape, threads) bytes, 64-byte aligned; may be null when that is 0.
  void* workspace = nullptr;
  int threads = 1;  // threads the algorithm may use (algorithms that are single-threaded ignore it)
};

// C = op(A) * op(B) + beta * C with the given operands (alpha 1).
inline GemmArgs gemm_args(const GemmShape& shape, const float* a, int64_t lda, const float* b,
                          int64_t ldb, float* c, int64_t ldc, void* workspace, int threads,
                          float beta = 0.0f) {
  GemmArgs g;
  g.shape = shape;
  g.beta = beta;
  g.a = a;
  g.lda = lda;
  g.b = b;
  g.ldb = ldb;
  g.c = c;
  g.ldc = ldc;
  g.workspace = workspace;
  g.threads = threads;
  return g;
}

struct GemmAlgorithm {
  const char* name;
  const char* description;
  Device device;  // where a, b, c of GemmArgs live and the work runs
  void (*run)(const GemmArgs& args);
  // "" when the algorithm can serve the shape, otherwise the reason it cannot.
  std::string (*why_not)(const GemmShape& shape);
  std::size_t (*workspace_bytes)(const GemmShape& shape, int threads);
  // c_algo in |y - ref| <= c_algo * k * eps * sum|a*b| + eps * |ref| (see docs/conventions.md).
  double tolerance_factor;
};

std::span<const GemmAlgorithm> gemm_algorithms();
// By registry_key (core/name_registry.h); throws UsageError naming the valid algorithms when
// unknown.
const GemmAlgorithm& find_gemm(std::string_view name);
// The same, for a caller whose operands live on `device`: an algorithm of the other device is
// refused (UsageError naming it, where it runs and the algorithms of `device`).
const GemmAlgorithm& find_gemm(std::string_view name, Device device);
// "naive, parallel, blocked, blas, cuda, cublas"; with a device, only that device's rows.
std::string gemm_algorithm_names();
std::string gemm_algorithm_names(Device device);
inline const char* device_name(Device d) { return d == Device::kCpu ? "cpu" : "cuda"; }

// Convenience for tests and one-off calls: sizes a thread-local workspace and runs.
void gemm_run(const GemmAlgorithm& algo, GemmArgs args);

// Plain float64 reference: c_ref[m x n] (dense, ld = n) = alpha*op(A)*op(B) + beta*C_in.
// Also returns, per element, sum |a*b| (for the error bound) into abs_sum when non-null; that sum
// includes alpha and the |beta * C_in| term: sum_p |alpha * a_ip * b_pj| + |beta * c_ij|.
void gemm_reference(const GemmArgs& args, double* c_ref, double* abs_sum);

}  // namespace nnperf
