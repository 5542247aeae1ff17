// Measured GPU ceilings (`peaks --device cuda`), as analysis/peaks.h measures the CPU's: FP32 FMA
// throughput of the whole device, STREAM read/copy/triad bandwidth at a working set inside L2 and
// at one far beyond it (device memory), and SGEMM by cuBLAS and by our `cuda` GEMM row. Every
// figure is the median of several samples timed by CUDA events, all samples of a measurement read
// after one synchronisation. The entry written to peaks.json has the fields the roofline reads
// (peak_gflops.fp32, peak_gbps, compute_ceilings, memory_ceilings), with threads = 1 meaning the
// whole device, so `roofline --peaks peaks.json --env <gpu env>` (and `--ncu`) use them.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "nnperf/analysis/peaks.h"
#include "nnperf/gpu/cuda.h"

namespace nnperf {

struct GpuPeakOptions {
  int rounds = 7;                          // samples per figure (median)
  double sample_seconds = 0.02;            // each sample lasts at least this long
  int64_t array_bytes = int64_t{1} << 29;  // device-memory bandwidth: bytes per array (clamped to
                                           // free memory / 4, and to at least 4 x L2 in all)
  int64_t sgemm_n = 4096;                  // 0 = skip SGEMM
  bool quick = false;                      // recorded in peaks.json
};
// --quick: 3 rounds, 5 ms samples, 128 MiB arrays, 2048^3 SGEMM.
GpuPeakOptions quick_gpu_peak_options();

struct GpuPeaks {
  cuda::DeviceProperties device;
  GpuPeakOptions options;
  FmaCeiling fma;  // name "cuda fma", simd "sm_XY", threads 1
  int fma_blocks = 0, fma_threads_per_block = 0;
  std::vector<BandwidthPlateau> bandwidth;  // "L2" and "DRAM" x read, copy, triad; threads 1
  std::vector<SgemmFigure> sgemm;           // "cublas", "cuda"; threads 1
  std::vector<std::string> skipped;         // what was not measured and why
  double seconds = 0;

  double peak_gbps() const;  // DRAM triad
};

// Throws UsageError (the reason) without a usable device, Error when memory runs out.
GpuPeaks measure_gpu_peaks(const GpuPeakOptions& options);

// One env's entry: seed 003's description / peak_gbps / peak_gflops.fp32, then the ceilings.
nlohmann::json gpu_peaks_env_json(const GpuPeaks& p);

// The SGEMM size's three n x n operands must fit in `free_bytes` with room to spare; "" when they
// do, otherwise the one-line refusal naming --sgemm-n (checked before allocating).
std::string gpu_sgemm_size_error(int64_t n, std::size_t free_bytes);

}  // namespace nnperf
