// Is there a CUDA device? Answered by loading the driver (libcuda.so.1) and NVML
// (libnvidia-ml.so.1) at run time, so the program needs neither to start and builds without
// their headers. The CUDA backend proper (cuBLAS, cuDNN, kernels) lives beside this file.
#pragma once
#include <string>
#include <vector>

namespace nnperf {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  long long total_memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
};

struct CudaProbe {
  bool driver_loaded = false;  // libcuda.so.1 found and cuInit succeeded
  bool nvml_loaded = false;    // libnvidia-ml.so.1 found and nvmlInit succeeded
  int driver_version = 0;      // e.g. 12040
  std::vector<CudaDeviceInfo> devices;
  std::string message;  // why no device, in words
};

CudaProbe probe_cuda();

}  // namespace nnperf
