// Is there a CUDA device, and what CUDA stack would a GPU run use? Answered by loading the driver
// (libcuda.so.1), NVML (libnvidia-ml.so.1) and, on request, the CUDA runtime, cuDNN and cuBLAS at
// run time, so the program needs none of them to start and builds without their headers. Every
// part that cannot be loaded or queried says why. The CUDA backend proper (cuBLAS, cuDNN, kernels)
// lives beside this file.
#pragma once
#include <string>
#include <vector>

namespace nnperf {

struct CudaDeviceInfo {
  int index = 0;
  std::string name;
  long long total_memory_bytes = 0;
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;      // SMs
  int clock_mhz = 0;            // peak SM clock; 0 = the driver did not say
  int memory_clock_mhz = 0;     // peak memory clock; 0 = the driver did not say
  int memory_bus_bits = 0;      // global memory bus width; 0 = the driver did not say
  bool power_readable = false;  // NVML reads this board's power (what --power-source nvml needs)
};

// One CUDA library loaded for its version only.
struct CudaLibrary {
  std::string what;     // "CUDA runtime", "cuDNN", "cuBLAS"
  bool loaded = false;  // the library was found and its version query answered
  std::string file;     // the name that loaded
  std::string version;  // "12.4", "9.1.0", "12.4.5"
  std::string reason;   // why not loaded, in words
};

struct CudaProbe {
  bool driver_loaded = false;  // libcuda.so.1 found and cuInit succeeded
  bool nvml_loaded = false;    // libnvidia-ml.so.1 found and nvmlInit succeeded
  int driver_version = 0;      // CUDA version the driver supports, e.g. 12040 (0 = unknown)
  std::string driver_file;     // the driver library that loaded ("" when none)
  std::string nvml_driver;     // NVIDIA driver version from NVML, e.g. "550.54.15"
  std::string nvml_reason;     // why NVML is not readable ("" when it is)
  std::vector<CudaDeviceInfo> devices;
  std::vector<CudaLibrary> libraries;  // runtime, cuDNN, cuBLAS (only with libraries = true)
  std::string message;                 // why no device, in words ("" when there is one)
};

struct CudaProbeOptions {
  // Library names tried in order (the dynamic linker's search path applies; a path loads that
  // file). Tests point them at a stand-in library.
  std::vector<std::string> driver{"libcuda.so.1"};
  std::vector<std::string> nvml{"libnvidia-ml.so.1"};
  std::vector<std::string> runtime{"libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"};
  std::vector<std::string> cudnn{"libcudnn.so.9", "libcudnn.so.8"};
  std::vector<std::string> cublas{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  // Also load the runtime, cuDNN and cuBLAS for their versions (`devices --check-cuda`).
  bool libraries = false;
};

CudaProbe probe_cuda(const CudaProbeOptions& options = {});

// dlopen (RTLD_NOW | RTLD_LOCAL) of the first of `names` that loads, its name in *file; or null
// with *why listing what dlopen answered for each. The probe and the run-time loaders of cuBLAS
// and cuDNN open their libraries with it.
void* dlopen_first(const std::vector<std::string>& names, std::string* file, std::string* why);

// "12.4" from 12040 (the driver's and the runtime's encoding); "unknown" for 0.
std::string cuda_version_string(int version);
// "9.1.0" from 90100 (cuDNN 9's encoding) or "8.9.2" from 8902 (cuDNN 8's).
std::string cudnn_version_string(long long version);

// The report of `nnperf devices --check-cuda`: driver and runtime versions, every device (name,
// SMs, memory, clocks, compute capability), cuDNN and cuBLAS versions, NVML; each missing part with
// the reason. Several lines, each ending in '\n'.
std::string cuda_report(const CudaProbe& probe);

}  // namespace nnperf
