// NNPERF_HOST_DEVICE: __host__ __device__ under nvcc, nothing under the C++ compiler, for the few
// functions that the CUDA kernels call and the host tests check as the same code.
#pragma once

#if defined(__CUDACC__)
#define NNPERF_HOST_DEVICE __host__ __device__
#else
#define NNPERF_HOST_DEVICE
#endif
