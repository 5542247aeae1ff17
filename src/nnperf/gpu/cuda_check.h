// Error checking for the CUDA translation units (includes CUDA headers: never include it from a
// file that is compiled without the CUDA backend).
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace nnperf::cuda {

// Throws Error("CUDA: <call> failed: <message> (<name>)") unless rc is cudaSuccess.
void check(cudaError_t rc, const char* call);

// Throws nnperf::Error(message): for .cu files, which cannot include core/error.h (nvcc 13 rejects
// fmt 9's compile-time format checks).
[[noreturn]] void fail(const std::string& message);

// Throws Error(unavailable_reason()) when no CUDA device is usable: the first line of every entry
// that launches work, so a call without a device says why instead of reporting a launch failure.
void ensure_device();

}  // namespace nnperf::cuda
