// `nnperf bench gemm`: every GEMM algorithm of one device on one shape, timed alternately (median
// of --measure runs after --warmup), with GFLOP/s, the ratio to the vendor library of that device
// (OpenBLAS on the CPU, cuBLAS on the GPU) and each result's largest difference from the vendor's.
// On the GPU each run is bracketed by CUDA events and all of them are read after one
// synchronisation at the end.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

// "m4096n4096k4096", "m784n512k64_ta", "m1n2k3_ta_tb" (GemmShape::str()'s form); throws
// UsageError naming the text and the expected form.
GemmShape parse_gemm_shape(std::string_view text);

struct GemmBenchOptions {
  Device device = Device::kCpu;
  std::vector<std::string> algorithms;  // empty = every algorithm of the device
  int warmup = 3;
  int measure = 10;
  int threads = 1;  // CPU rows only
  uint64_t seed = 1;
};

// {"context": {...}, "records": [{algorithm, device, problem, status, reason, time_ms_median,
// time_ms_min, time_ms_max, reps, flops, gflops_per_s, vs_vendor, max_abs_diff_vs_vendor}]}.
// vs_vendor = vendor median / this median (1.0 for the vendor itself; above 1 = faster).
nlohmann::json bench_gemm(const GemmShape& shape, const GemmBenchOptions& options);

}  // namespace nnperf
