// The machine the convolution cost models rank algorithms for (`guess`, and the order in which
// `find` times candidates): one core's FMA throughput and DRAM bandwidth, all cores' bandwidth,
// the caches and the SIMD level. Read from the measured ceilings of a peaks.json when there is
// one, else estimated from the detected CPU features; the cost functions read rates from here
// only, as ratios to these figures (docs/machine-model.md).
#pragma once
#include <string>

#include "nnperf/core/cpu.h"

namespace nnperf {

struct MachineModel {
  double fma_gflops_per_core = 0;  // fp32 FMA GFLOP/s of one thread at `simd` (2 FLOPs per FMA)
  double dram_gbps_per_core = 0;   // DRAM GB/s of one thread (STREAM triad)
  double dram_gbps_total = 0;      // DRAM GB/s of every thread together (>= dram_gbps_per_core)
  long l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  SimdLevel simd = SimdLevel::kScalar;  // the level nnperf's kernels run at (active_simd())
  // The level OpenBLAS (and FFTW) run at: they dispatch on CPUID themselves, so NNPERF_SIMD
  // does not reach them; the hardware's best level.
  SimdLevel blas_simd = SimdLevel::kScalar;
  // One core's AVX-512 FMA throughput over its AVX2 throughput: 2 with 512-bit FMA pipes, 1 where
  // a 512-bit FMA occupies both 256-bit pipes (AMD Zen 4). Measured when a peaks.json has both
  // 1-thread ceilings, else avx512_fma_speedup() of the CPU.
  double avx512_over_avx2 = 2.0;
  // "peaks.json <path> env <e>" or "estimate from detected features" (plus why a ./peaks.json
  // was passed over, when there is one).
  std::string source;
};

// The model in use: set_machine_model()'s, else the installed source's (called once, on first
// use; the program installs io/machine_model_file.h's detect_machine_model, which reads
// $NNPERF_PEAKS or ./peaks.json and may throw for a broken file), else
// estimate_machine_model(cpu_info(), active_simd()). Thread-safe.
const MachineModel& machine_model();
// Replaces the model in use (tests, CLI flags); references returned earlier stay valid.
void set_machine_model(const MachineModel& m);
using MachineModelSource = MachineModel (*)();
void set_machine_model_source(MachineModelSource source);

// FMA GFLOP/s per core = FMA width (fma_width: scalar 1, AVX2 8, AVX-512 8 x
// avx512_fma_speedup) x 2 FMA pipes x 2 FLOPs x the nominal clock (2.5 GHz when /proc/cpuinfo has
// none; clamped to 0.8-6 GHz); DRAM kEstimateDramGbpsPerCore per core and in total (the channel
// count is unknown, so no gain from threads is assumed); caches as detected (defaults where sysfs
// has none).
inline constexpr double kEstimateDramGbpsPerCore = 15.0;
MachineModel estimate_machine_model(const CpuInfo& cpu, SimdLevel level);

int simd_lanes(SimdLevel level);  // fp32 lanes: 1, 8, 16
// AVX-512 FMA throughput over AVX2's on `cpu`, from its features: 1 on AMD family 25 (Zen 4, the
// family's only parts with AVX-512, split 512-bit FMAs over their two 256-bit pipes), else 2.
double avx512_fma_speedup(const CpuInfo& cpu);
// fp32 FMAs per cycle per pipe, relative: scalar 1, AVX2 8, AVX-512 8 x m.avx512_over_avx2.
double fma_width(const MachineModel& m, SimdLevel level);
// The model's per-core FMA rate converted to `level` by the width ratio (GFLOP/s).
double fma_gflops_at(const MachineModel& m, SimdLevel level);
// One line: "<source>: 102.0 GFLOP/s per core (avx2 fp32 FMA, 1 thread), DRAM 21.0 GB/s per
// core, 21.0 GB/s total, L3 32 MiB".
std::string describe(const MachineModel& m);

}  // namespace nnperf
