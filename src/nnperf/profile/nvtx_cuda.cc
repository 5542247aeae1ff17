// NVTX 3 from the CUDA toolkit (header-only: it loads a tool named by NVTX_INJECTION64_PATH at
// the first call, else every call returns at once).
#include <nvtx3/nvToolsExt.h>

#include "nnperf/profile/nvtx.h"

namespace nnperf {

bool nvtx_available() { return true; }
void nvtx_push(const char* name) { nvtxRangePushA(name); }
void nvtx_pop() { nvtxRangePop(); }

}  // namespace nnperf
