// A stand-in for the NVIDIA libraries nnperf loads at run time (the CUDA driver, NVML, the CUDA
// runtime, cuDNN, cuBLAS), with their documented C entry points answering fixed values, so the
// device probe and the NVML power path are tested on machines without a GPU. One library plays
// every part; tests point the loaders' library names at it.
//   NNPERF_FAKE_CUDA_DEVICES  devices the driver reports (default 1; 0: cuInit answers
//                             CUDA_ERROR_NO_DEVICE, as on a machine whose GPU is gone)
//   NNPERF_FAKE_NVML_INIT     nvmlInit_v2's return code (default 0)
//   NNPERF_FAKE_POWER_MW      board power in milliwatts (default 50000)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

int devices() { return env_int("NNPERF_FAKE_CUDA_DEVICES", 1); }

// Device i sits on bus i+1; handles are 1-based indices disguised as pointers.
void* handle(int i) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(i + 1)); }

}  // namespace

extern "C" {

// ---- CUDA driver API ----
int cuInit(unsigned int) { return devices() > 0 ? 0 : 100; }
int cuDriverGetVersion(int* v) {
  *v = 12040;
  return 0;
}
int cuDeviceGetCount(int* n) {
  *n = devices();
  return 0;
}
int cuDeviceGet(int* dev, int ordinal) {
  if (ordinal < 0 || ordinal >= devices()) return 101;  // CUDA_ERROR_INVALID_DEVICE
  *dev = ordinal;
  return 0;
}
int cuDeviceGetName(char* name, int len, int dev) {
  std::snprintf(name, static_cast<std::size_t>(len), "Fake GPU %d", dev);
  return 0;
}
int cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  *bytes = std::size_t{80} << 30;
  return 0;
}
int cuDeviceGetAttribute(int* v, int attr, int) {
  switch (attr) {
    case 13:
      *v = 1980000;
      return 0;  // clock rate, kHz
    case 16:
      *v = 132;
      return 0;  // SMs
    case 36:
      *v = 0;
      return 0;  // memory clock: unknown here, NVML answers instead
    case 37:
      *v = 5120;
      return 0;  // bus width
    case 75:
      *v = 9;
      return 0;
    case 76:
      *v = 0;
      return 0;
    default:
      return 1;  // CUDA_ERROR_INVALID_VALUE
  }
}
int cuDeviceGetPCIBusId(char* bus, int len, int dev) {
  std::snprintf(bus, static_cast<std::size_t>(len), "00000000:%02X:00.0", dev + 1);
  return 0;
}
int cuGetErrorName(int rc, const char** name) {
  *name = rc == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
  return 0;
}

// ---- NVML ----
int nvmlInit_v2() { return env_int("NNPERF_FAKE_NVML_INIT", 0); }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlSystemGetDriverVersion(char* v, unsigned int len) {
  std::snprintf(v, len, "550.54.15");
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = static_cast<unsigned int>(devices());
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void** h) {
  if (static_cast<int>(i) >= devices()) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *h = handle(static_cast<int>(i));
  return 0;
}
// domain:bus:device.function in hex, as NVML parses it: the domain 4 digits (what
// cudaDeviceGetPCIBusId writes) or 8 (what NVML's own pciInfo.busId holds).
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, void** h) {
  unsigned int domain = 0, b = 0, dev = 0, fn = 0;
  if (std::sscanf(bus, "%x:%x:%x.%x", &domain, &b, &dev, &fn) != 4) return 2;  // INVALID_ARGUMENT
  if (domain != 0 || dev != 0 || fn != 0 || b == 0 || static_cast<int>(b) > devices())
    return 6;  // NVML_ERROR_NOT_FOUND
  *h = handle(static_cast<int>(b) - 1);
  return 0;
}
int nvmlDeviceGetPowerUsage(void*, unsigned int* mw) {
  *mw = static_cast<unsigned int>(env_int("NNPERF_FAKE_POWER_MW", 50000));
  return 0;
}
// The total-energy counter: NNPERF_FAKE_ENERGY_MJ_PER_CALL unset = a board without one
// (NVML_ERROR_NOT_SUPPORTED); set = the counter advances by that many mJ at every read.
int nvmlDeviceGetTotalEnergyConsumption(void*, unsigned long long* mj) {
  static unsigned long long counter = 1000000;
  const int step = env_int("NNPERF_FAKE_ENERGY_MJ_PER_CALL", -1);
  if (step < 0) return 3;  // NVML_ERROR_NOT_SUPPORTED
  counter += static_cast<unsigned long long>(step);
  *mj = counter;
  return 0;
}
int nvmlDeviceGetMaxClockInfo(void*, int type, unsigned int* mhz) {
  *mhz = type == 1 ? 1980 : 2619;
  return 0;
}

// ---- CUDA runtime, cuDNN, cuBLAS ----
int cudaRuntimeGetVersion(int* v) {
  *v = 12040;
  return 0;
}
std::size_t cudnnGetVersion() { return 90100; }
int cublasGetProperty(int type, int* v) {
  static const int parts[3] = {12, 4, 5};
  if (type < 0 || type > 2) return 7;  // CUBLAS_STATUS_INVALID_VALUE
  *v = parts[type];
  return 0;
}

}  // extern "C"
