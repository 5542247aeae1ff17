// One place sets the thread count for everything: OpenMP regions and OpenBLAS.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

namespace nnperf {

// n <= 0 means "all logical CPUs"; n above the logical CPU count is capped to it with a warning.
// Returns the count in force afterwards.
int set_threads(int n);
int num_threads();
// OpenBLAS's thread count only (set_threads sets it to n as well); OpenMP's default team is left
// as it was (OpenBLAS's OpenMP build would set it too). CNN inference and training keep it at 1
// and gemm "blas" splits a product over the caller's OpenMP threads itself (kernels/gemm/blas.cc):
// the pthread build's own pool spins after each call and competes with the OpenMP team.
void set_blas_threads(int n);
// The BLAS library's own report: "OpenBLAS 0.3.21 ... (core Zen; openmp parallel; 2 threads)".
std::string blas_description();
int blas_threads();
// Whether OpenBLAS runs its threads in OpenMP's pool (its OpenMP build, which CMake prefers) rather
// than a pool of its own (the pthread build) that contends with our OpenMP loops.
bool blas_uses_openmp();

// How many of `threads` to split `work` units over: at most one per `min_per_thread` units (below
// that, a thread's start-up, about 20 us of one core, costs more than it saves), at most `jobs`
// (the work's independent parts), never fewer than 1.
inline int useful_threads(int threads, double work, double min_per_thread,
                          int64_t jobs = std::numeric_limits<int64_t>::max()) {
  int64_t t = std::max(1, threads);
  t = std::min<int64_t>(t, std::max<int64_t>(1, static_cast<int64_t>(work / min_per_thread)));
  t = std::min<int64_t>(t, std::max<int64_t>(1, jobs));
  return static_cast<int>(t);
}

}  // namespace nnperf
