#include "nnperf/gpu/probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstddef>

namespace nnperf {

namespace {
// The driver-API, NVML, runtime, cuDNN and cuBLAS entry points we need, declared by their
// documented C signatures (enums as int, handles as void*).
using CuInit = int (*)(unsigned int);
using CuDriverGetVersion = int (*)(int*);
using CuDeviceGetCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuDeviceGetName = int (*)(char*, int, int);
using CuDeviceTotalMem = int (*)(std::size_t*, int);
using CuDeviceGetAttribute = int (*)(int*, int, int);
using CuDeviceGetPciBusId = int (*)(char*, int, int);
using CuGetErrorName = int (*)(int, const char**);
constexpr int kAttrClockRate = 13;        // CU_DEVICE_ATTRIBUTE_CLOCK_RATE (kHz)
constexpr int kAttrMultiprocessors = 16;  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
constexpr int kAttrMemoryClockRate = 36;  // CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (kHz)
constexpr int kAttrMemoryBusWidth = 37;   // CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH
constexpr int kAttrComputeMajor = 75;     // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76;     // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
constexpr int kCudaErrorNoDevice = 100;   // CUDA_ERROR_NO_DEVICE

using NvmlInit = int (*)();
using NvmlShutdown = int (*)();
using NvmlErrorString = const char* (*)(int);
using NvmlSystemGetDriverVersion = int (*)(char*, unsigned int);
using NvmlDeviceGetHandleByPciBusId = int (*)(const char*, void**);
using NvmlDeviceGetPowerUsage = int (*)(void*, unsigned int*);
using NvmlDeviceGetMaxClockInfo = int (*)(void*, int, unsigned int*);
constexpr int kNvmlClockSm = 1;   // NVML_CLOCK_SM
constexpr int kNvmlClockMem = 2;  // NVML_CLOCK_MEM

using CudaRuntimeGetVersion = int (*)(int*);
using CudnnGetVersion = std::size_t (*)();
using CublasGetProperty = int (*)(int, int*);  // libraryPropertyType: 0 major, 1 minor, 2 patch

template <typename F>
F sym(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

std::string cu_error(void* cuda, int rc) {
  const char* name = nullptr;
  if (auto f = sym<CuGetErrorName>(cuda, "cuGetErrorName"); f && f(rc, &name) == 0 && name)
    return fmt::format("{}, error {}", name, rc);
  return fmt::format("error {}", rc);
}

std::string nvml_error(void* nvml, int rc) {
  if (auto f = sym<NvmlErrorString>(nvml, "nvmlErrorString")) {
    if (const char* s = f(rc)) return fmt::format("{}, error {}", s, rc);
  }
  return fmt::format("error {}", rc);
}

CudaLibrary probe_runtime(const std::vector<std::string>& names) {
  CudaLibrary l;
  l.what = "CUDA runtime";
  void* lib = dlopen_first(names, &l.file, &l.reason);
  if (lib == nullptr) return l;
  auto get = sym<CudaRuntimeGetVersion>(lib, "cudaRuntimeGetVersion");
  int v = 0;
  if (get == nullptr) {
    l.reason = fmt::format("{} has no cudaRuntimeGetVersion", l.file);
  } else if (const int rc = get(&v); rc != 0) {
    l.reason = fmt::format("cudaRuntimeGetVersion failed (error {})", rc);
  } else {
    l.loaded = true;
    l.version = cuda_version_string(v);
  }
  return l;
}

CudaLibrary probe_cudnn(const std::vector<std::string>& names) {
  CudaLibrary l;
  l.what = "cuDNN";
  void* lib = dlopen_first(names, &l.file, &l.reason);
  if (lib == nullptr) return l;
  if (auto get = sym<CudnnGetVersion>(lib, "cudnnGetVersion")) {
    l.loaded = true;
    l.version = cudnn_version_string(static_cast<long long>(get()));
  } else {
    l.reason = fmt::format("{} has no cudnnGetVersion", l.file);
  }
  return l;
}

CudaLibrary probe_cublas(const std::vector<std::string>& names) {
  CudaLibrary l;
  l.what = "cuBLAS";
  void* lib = dlopen_first(names, &l.file, &l.reason);
  if (lib == nullptr) return l;
  auto get = sym<CublasGetProperty>(lib, "cublasGetProperty");
  int v[3] = {0, 0, 0};
  if (get == nullptr) {
    l.reason = fmt::format("{} has no cublasGetProperty", l.file);
    return l;
  }
  for (int i = 0; i < 3; ++i) {
    if (const int rc = get(i, &v[i]); rc != 0) {
      l.reason = fmt::format("cublasGetProperty failed (status {})", rc);
      return l;
    }
  }
  l.loaded = true;
  l.version = fmt::format("{}.{}.{}", v[0], v[1], v[2]);
  return l;
}

}  // namespace

std::string cuda_version_string(int version) {
  if (version <= 0) return "unknown";
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::string cudnn_version_string(long long version) {
  if (version <= 0) return "unknown";
  if (version >= 90000)  // cuDNN 9: major * 10000 + minor * 100 + patch
    return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
  return fmt::format("{}.{}.{}", version / 1000, version % 1000 / 100, version % 100);
}

namespace {

// NVML loaded and initialised (p.nvml_loaded, the driver version), or the reason in
// p.nvml_reason; returns the library handle (null when it could not be opened).
void* open_nvml(const CudaProbeOptions& options, CudaProbe& p) {
  std::string nvml_file;
  void* nvml = dlopen_first(options.nvml, &nvml_file, &p.nvml_reason);
  if (nvml == nullptr) return nullptr;
  auto init = sym<NvmlInit>(nvml, "nvmlInit_v2");
  if (init == nullptr) {
    p.nvml_reason = fmt::format("{} has no nvmlInit_v2", nvml_file);
  } else if (const int rc = init(); rc != 0) {
    p.nvml_reason = fmt::format("nvmlInit failed: {}", nvml_error(nvml, rc));
  } else {
    p.nvml_loaded = true;
    char version[96] = {};
    if (auto f = sym<NvmlSystemGetDriverVersion>(nvml, "nvmlSystemGetDriverVersion");
        f && f(version, sizeof(version)) == 0)
      p.nvml_driver = version;
  }
  return nvml;
}

// The driver's and NVML's entry points one device's description needs (any may be null).
struct DeviceQueries {
  CuDeviceGet get = nullptr;
  CuDeviceGetName get_name = nullptr;
  CuDeviceTotalMem total_mem = nullptr;
  CuDeviceGetAttribute attr = nullptr;
  CuDeviceGetPciBusId bus_id = nullptr;
  NvmlDeviceGetHandleByPciBusId nvml_by_bus = nullptr;
  NvmlDeviceGetPowerUsage nvml_power = nullptr;
  NvmlDeviceGetMaxClockInfo nvml_clock = nullptr;

  DeviceQueries(void* cuda, void* nvml, bool nvml_loaded)
      : get(sym<CuDeviceGet>(cuda, "cuDeviceGet")),
        get_name(sym<CuDeviceGetName>(cuda, "cuDeviceGetName")),
        total_mem(sym<CuDeviceTotalMem>(cuda, "cuDeviceTotalMem_v2")),
        attr(sym<CuDeviceGetAttribute>(cuda, "cuDeviceGetAttribute")),
        bus_id(sym<CuDeviceGetPciBusId>(cuda, "cuDeviceGetPCIBusId")) {
    if (!nvml_loaded) return;
    nvml_by_bus =
        sym<NvmlDeviceGetHandleByPciBusId>(nvml, "nvmlDeviceGetHandleByPciBusId_v2");
    nvml_power = sym<NvmlDeviceGetPowerUsage>(nvml, "nvmlDeviceGetPowerUsage");
    nvml_clock = sym<NvmlDeviceGetMaxClockInfo>(nvml, "nvmlDeviceGetMaxClockInfo");
  }
};

// Device `dev` (CUDA ordinal i) as the driver describes it; its board looked up in NVML by PCI
// bus id (CUDA orders devices fastest first, NVML by bus) for power and, where the driver gives
// none, clocks.
CudaDeviceInfo describe_device(const DeviceQueries& q, int i, int dev) {
  CudaDeviceInfo d;
  d.index = i;
  char name[256] = {};
  q.get_name(name, sizeof(name), dev);
  d.name = name;
  std::size_t bytes = 0;
  if (q.total_mem && q.total_mem(&bytes, dev) == 0)
    d.total_memory_bytes = static_cast<long long>(bytes);
  auto attribute = [&](int which) {
    int v = 0;
    return q.attr && q.attr(&v, which, dev) == 0 ? v : 0;
  };
  d.compute_major = attribute(kAttrComputeMajor);
  d.compute_minor = attribute(kAttrComputeMinor);
  d.multiprocessors = attribute(kAttrMultiprocessors);
  d.clock_mhz = attribute(kAttrClockRate) / 1000;
  d.memory_clock_mhz = attribute(kAttrMemoryClockRate) / 1000;
  d.memory_bus_bits = attribute(kAttrMemoryBusWidth);
  char bus[64] = {};
  void* board = nullptr;
  if (q.bus_id && q.nvml_by_bus && q.bus_id(bus, sizeof(bus), dev) == 0 &&
      q.nvml_by_bus(bus, &board) == 0) {
    unsigned int mw = 0;
    d.power_readable = q.nvml_power && q.nvml_power(board, &mw) == 0;
    unsigned int mhz = 0;
    if (d.clock_mhz == 0 && q.nvml_clock && q.nvml_clock(board, kNvmlClockSm, &mhz) == 0)
      d.clock_mhz = static_cast<int>(mhz);
    if (d.memory_clock_mhz == 0 && q.nvml_clock && q.nvml_clock(board, kNvmlClockMem, &mhz) == 0)
      d.memory_clock_mhz = static_cast<int>(mhz);
  }
  return d;
}

// The CUDA driver: its version, cuInit, and every device it reports (p.message says why none).
void probe_driver(const CudaProbeOptions& options, void* nvml, CudaProbe& p) {
  void* cuda = dlopen_first(options.driver, &p.driver_file, &p.message);
  if (cuda == nullptr) {
    p.driver_file.clear();
    p.message = fmt::format("no CUDA driver ({})", p.message);
    return;
  }
  // cuDriverGetVersion answers before cuInit, so the version shows even when init fails.
  if (auto ver = sym<CuDriverGetVersion>(cuda, "cuDriverGetVersion")) ver(&p.driver_version);
  auto init = sym<CuInit>(cuda, "cuInit");
  const int rc = init ? init(0) : -1;
  if (init == nullptr) {
    p.message = fmt::format("{} has no cuInit", p.driver_file);
    return;
  }
  if (rc == kCudaErrorNoDevice) {
    p.message = fmt::format("the CUDA driver reports no device (cuInit: {})", cu_error(cuda, rc));
    return;
  }
  if (rc != 0) {
    p.message = fmt::format("CUDA driver present but cuInit failed: {}", cu_error(cuda, rc));
    return;
  }
  p.driver_loaded = true;
  int n = 0;
  if (auto count_fn = sym<CuDeviceGetCount>(cuda, "cuDeviceGetCount")) count_fn(&n);
  const DeviceQueries q(cuda, nvml, p.nvml_loaded);
  for (int i = 0; i < n && q.get && q.get_name; ++i) {
    int dev = 0;
    if (q.get(&dev, i) != 0) continue;
    p.devices.push_back(describe_device(q, i, dev));
  }
  if (p.devices.empty()) p.message = "the CUDA driver loaded but reports no device";
}

}  // namespace

void* dlopen_first(const std::vector<std::string>& names, std::string* file, std::string* why) {
  std::string errors;
  for (const auto& n : names) {
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      *file = n;
      return lib;
    }
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e != nullptr ? e : n + ": not loadable");
  }
  *why = names.empty() ? "no library name to try" : errors;
  return nullptr;
}

CudaProbe probe_cuda(const CudaProbeOptions& options) {
  CudaProbe p;
  // NVML first: the devices look their boards up in it.
  void* nvml = open_nvml(options, p);
  probe_driver(options, nvml, p);
  if (p.nvml_loaded) {
    if (auto shut = sym<NvmlShutdown>(nvml, "nvmlShutdown")) shut();
  }
  if (options.libraries) {
    p.libraries.push_back(probe_runtime(options.runtime));
    p.libraries.push_back(probe_cudnn(options.cudnn));
    p.libraries.push_back(probe_cublas(options.cublas));
  }
  return p;
}

std::string cuda_report(const CudaProbe& p) {
  std::string r;
  if (p.driver_file.empty()) {
    r += fmt::format("driver: not loaded: {}\n", p.message);
  } else {
    r += fmt::format("driver: {}, supports CUDA {}{}\n", p.driver_file,
                     cuda_version_string(p.driver_version),
                     p.nvml_driver.empty() ? "" : ", NVIDIA driver " + p.nvml_driver);
  }
  for (const auto& l : p.libraries) {
    if (l.loaded) {
      r += fmt::format("{}: {} ({})\n", l.what, l.version, l.file);
    } else {
      r += fmt::format("{}: not loaded: {}\n", l.what, l.reason);
    }
  }
  r += p.nvml_loaded ? "NVML: readable\n" : fmt::format("NVML: not readable: {}\n", p.nvml_reason);
  if (p.devices.empty()) {
    r += fmt::format("devices: none: {}\n", p.message);
    return r;
  }
  r += fmt::format("devices: {}\n", p.devices.size());
  for (const auto& d : p.devices) {
    auto mhz = [](int v) { return v > 0 ? fmt::format("{} MHz", v) : std::string("unknown"); };
    r += fmt::format(
        "  [{}] {}: compute capability {}.{} (sm_{}{}), {} SMs, {:.1f} GiB, SM clock {}, memory "
        "clock {}{}, board power {}\n",
        d.index, d.name, d.compute_major, d.compute_minor, d.compute_major, d.compute_minor,
        d.multiprocessors, static_cast<double>(d.total_memory_bytes) / (1 << 30), mhz(d.clock_mhz),
        mhz(d.memory_clock_mhz),
        d.memory_bus_bits > 0 ? fmt::format(", {}-bit bus", d.memory_bus_bits) : "",
        d.power_readable ? "readable (NVML)" : "not readable");
  }
  return r;
}

}  // namespace nnperf
