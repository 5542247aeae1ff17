// What this CPU can do: model name, cores, SIMD level (for run-time kernel dispatch) and caches.
#pragma once
#include <string>

namespace nnperf {

enum class SimdLevel { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct CpuInfo {
  std::string model_name;
  std::string vendor;  // /proc/cpuinfo vendor_id ("AuthenticAMD", "GenuineIntel"), "" if none
  int family = 0;      // /proc/cpuinfo cpu family (AMD Zen 3 and Zen 4: 25), 0 if none
  int logical_cpus = 1;
  SimdLevel simd = SimdLevel::kScalar;
  bool has_avx2 = false, has_fma = false, has_avx512f = false;
  long l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  double nominal_mhz = 0.0;  // from /proc/cpuinfo "cpu MHz" (may be the base clock in a VM)
};

const CpuInfo& cpu_info();  // detected once
const char* to_string(SimdLevel level);
// NNPERF_SIMD=scalar|avx2|avx512 caps the level (to test and compare the dispatch paths).
SimdLevel active_simd();

}  // namespace nnperf
