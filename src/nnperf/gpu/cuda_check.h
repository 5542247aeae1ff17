// Error checking for the CUDA translation units (includes CUDA headers: never include it from a
// file that is compiled without the CUDA backend).
#pragma once
#include <cuda_runtime.h>

namespace nnperf::cuda {

// Throws Error("CUDA: <call> failed: <message> (<name>)") unless rc is cudaSuccess.
void check(cudaError_t rc, const char* call);

}  // namespace nnperf::cuda
