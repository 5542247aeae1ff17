#include "nnperf/gpu/probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace nnperf {

namespace {
// The few driver-API entry points we need, declared by their documented C signatures.
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
constexpr int kAttrComputeMajor = 75;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76;  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
using NvmlInit = int (*)();
using NvmlShutdown = int (*)();

template <typename F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}
}  // namespace

CudaProbe probe_cuda() {
  CudaProbe p;
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    p.message = "no CUDA driver (libcuda.so.1 not found): no NVIDIA GPU on this machine";
  } else {
    auto init = sym<CuInit>(cuda, "cuInit");
    auto count_fn = sym<CuDeviceGetCount>(cuda, "cuDeviceGetCount");
    int rc = init ? init(0) : -1;
    if (rc != 0) {
      p.message = fmt::format("CUDA driver present but cuInit failed (error {})", rc);
    } else {
      p.driver_loaded = true;
      if (auto ver = sym<CuDriverGetVersion>(cuda, "cuDriverGetVersion")) ver(&p.driver_version);
      int n = 0;
      if (count_fn) count_fn(&n);
      auto get = sym<CuDeviceGet>(cuda, "cuDeviceGet");
      auto get_name = sym<CuDeviceGetName>(cuda, "cuDeviceGetName");
      auto total_mem = sym<CuDeviceTotalMem>(cuda, "cuDeviceTotalMem_v2");
      auto attr = sym<CuDeviceGetAttribute>(cuda, "cuDeviceGetAttribute");
      for (int i = 0; i < n && get && get_name; ++i) {
        int dev = 0;
        if (get(&dev, i) != 0) continue;
        CudaDeviceInfo d;
        d.index = i;
        char name[256] = {};
        get_name(name, sizeof(name), dev);
        d.name = name;
        std::size_t bytes = 0;
        if (total_mem && total_mem(&bytes, dev) == 0)
          d.total_memory_bytes = static_cast<long long>(bytes);
        if (attr) {
          attr(&d.compute_major, kAttrComputeMajor, dev);
          attr(&d.compute_minor, kAttrComputeMinor, dev);
        }
        p.devices.push_back(d);
      }
      if (p.devices.empty()) p.message = "CUDA driver loaded but it reports no device";
    }
  }
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (nvml != nullptr) {
    auto init = sym<NvmlInit>(nvml, "nvmlInit_v2");
    if (init && init() == 0) {
      p.nvml_loaded = true;
      if (auto shut = sym<NvmlShutdown>(nvml, "nvmlShutdown")) shut();
    }
  }
  return p;
}

}  // namespace nnperf
