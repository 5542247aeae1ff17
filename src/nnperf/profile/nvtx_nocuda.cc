// Built without the CUDA toolkit: no NVTX (nvtx.h); the ranges are not opened.
#include "nnperf/profile/nvtx.h"

namespace nnperf {

bool nvtx_available() { return false; }
void nvtx_push(const char* /*name*/) {}
void nvtx_pop() {}

}  // namespace nnperf
