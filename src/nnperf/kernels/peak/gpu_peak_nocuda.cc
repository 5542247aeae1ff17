// gpu_peak.h without the CUDA backend: each entry says why it cannot run (as
// cuda_kernels_nocuda.cc).
#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/peak/gpu_peak.h"

namespace nnperf::cuda_kernels {

namespace {
[[noreturn]] void fail() { throw Error(cuda::unavailable_reason()); }
}  // namespace

void fma_chains(float*, int, int, int64_t, float, float) { fail(); }
void stream_read(const float*, float*, int64_t, int, int) { fail(); }
void stream_copy(const float*, float*, int64_t, int, int) { fail(); }
void stream_triad(float*, const float*, const float*, float, int64_t, int, int) { fail(); }
void fill(float*, float, int64_t, int) { fail(); }

}  // namespace nnperf::cuda_kernels
