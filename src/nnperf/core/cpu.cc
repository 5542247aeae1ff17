// CPU detection through the compiler's cpuid builtins and /proc/cpuinfo, sysconf for caches.
#include "nnperf/core/cpu.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string_view>

#include "nnperf/core/error.h"

namespace nnperf {

namespace {
CpuInfo detect() {
  CpuInfo info;
  __builtin_cpu_init();
  info.has_avx2 = __builtin_cpu_supports("avx2");
  info.has_fma = __builtin_cpu_supports("fma");
  info.has_avx512f = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                     __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  if (info.has_avx512f && info.has_fma) {
    info.simd = SimdLevel::kAvx512;
  } else if (info.has_avx2 && info.has_fma) {
    info.simd = SimdLevel::kAvx2;
  }
  info.logical_cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    auto value = [&]() {
      auto pos = line.find(':');
      std::string v = pos == std::string::npos ? "" : line.substr(pos + 1);
      v.erase(0, v.find_first_not_of(" \t"));
      return v;
    };
    if (info.model_name.empty() && line.rfind("model name", 0) == 0) info.model_name = value();
    if (info.vendor.empty() && line.rfind("vendor_id", 0) == 0) info.vendor = value();
    if (info.family == 0 && line.rfind("cpu family", 0) == 0)
      info.family = std::atoi(value().c_str());
    if (info.nominal_mhz == 0.0 && line.rfind("cpu MHz", 0) == 0)
      info.nominal_mhz = std::atof(value().c_str());
  }
  if (info.model_name.empty()) info.model_name = "unknown";
  // Caches from sysfs (what lscpu reads); sysconf's CPUID-based figures are wrong in some VMs.
  for (int idx = 0; idx < 8; ++idx) {
    const std::string base = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(idx) + "/";
    std::ifstream level_f(base + "level"), type_f(base + "type"), size_f(base + "size");
    int level = 0;
    std::string type, size;
    if (!(level_f >> level) || !(type_f >> type) || !(size_f >> size)) continue;
    long bytes = std::atol(size.c_str());
    if (!size.empty() && (size.back() == 'K')) bytes *= 1024;
    if (!size.empty() && (size.back() == 'M')) bytes *= 1024 * 1024;
    if (level == 1 && type == "Data") info.l1d_bytes = bytes;
    if (level == 2) info.l2_bytes = bytes;
    if (level == 3) info.l3_bytes = bytes;
  }
#ifdef _SC_LEVEL1_DCACHE_SIZE
  if (info.l1d_bytes == 0) info.l1d_bytes = sysconf(_SC_LEVEL1_DCACHE_SIZE);
  if (info.l2_bytes == 0) info.l2_bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (info.l3_bytes == 0) info.l3_bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  return info;
}
}  // namespace

const CpuInfo& cpu_info() {
  static const CpuInfo info = detect();
  return info;
}

const char* to_string(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return "avx512";
    case SimdLevel::kAvx2:
      return "avx2";
    default:
      return "scalar";
  }
}

SimdLevel active_simd() {
  static const SimdLevel level = [] {
    SimdLevel hw = cpu_info().simd;
    const char* env = std::getenv("NNPERF_SIMD");
    if (env == nullptr || *env == '\0') return hw;
    std::string_view v(env);
    SimdLevel want;
    if (v == "scalar") {
      want = SimdLevel::kScalar;
    } else if (v == "avx2") {
      want = SimdLevel::kAvx2;
    } else if (v == "avx512") {
      want = SimdLevel::kAvx512;
    } else {
      throw UsageError(fmt::format("NNPERF_SIMD='{}': expected scalar, avx2 or avx512", v));
    }
    return std::min(want, hw);
  }();
  return level;
}

}  // namespace nnperf
