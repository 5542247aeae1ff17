// A stand-in for an Nsight tool: an NVTX 3 injection library (NVTX loads it from
// NVTX_INJECTION64_PATH at the first range) that appends "push <name>" and "pop" lines to the
// file NNPERF_TEST_NVTX_LOG names, so the ranges nnperf opens are tested without a GPU or Nsight.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

namespace {

FILE* log_file() {
  static FILE* f = [] {
    const char* path = std::getenv("NNPERF_TEST_NVTX_LOG");
    return path != nullptr ? std::fopen(path, "w") : nullptr;
  }();
  return f;
}

int NVTX_API range_push(const char* name) {
  if (FILE* f = log_file()) {
    std::fprintf(f, "push %s\n", name);
    std::fflush(f);
  }
  return 0;
}

int NVTX_API range_pop() {
  if (FILE* f = log_file()) {
    std::fprintf(f, "pop\n");
    std::fflush(f);
  }
  return 0;
}

}  // namespace

// NVTX's loader calls this once; 1 = the tool is ready (its handlers are in the core table).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks =
      static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (callbacks == nullptr ||
      callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 ||
      size <= NVTX_CBID_CORE_RangePop) {
    return 0;
  }
  *table[NVTX_CBID_CORE_RangePushA] = reinterpret_cast<NvtxFunctionPointer>(&range_push);
  *table[NVTX_CBID_CORE_RangePop] = reinterpret_cast<NvtxFunctionPointer>(&range_pop);
  return 1;
}
