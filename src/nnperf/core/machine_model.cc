// The machine model the convolution cost models read: set by set_machine_model(), else built
// once by the installed source (the program installs io/machine_model_file.h's
// detect_machine_model: $NNPERF_PEAKS or ./peaks.json), else estimated from the detected CPU.
#include "nnperf/core/machine_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>

namespace nnperf {

int simd_lanes(SimdLevel level) {
  switch (level) {
    case SimdLevel::kAvx512:
      return 16;
    case SimdLevel::kAvx2:
      return 8;
    default:
      return 1;
  }
}

double avx512_fma_speedup(const CpuInfo& cpu) {
  return cpu.vendor == "AuthenticAMD" && cpu.family == 25 ? 1.0 : 2.0;
}

double fma_width(const MachineModel& m, SimdLevel level) {
  return level == SimdLevel::kAvx512 ? 8.0 * m.avx512_over_avx2 : simd_lanes(level);
}

double fma_gflops_at(const MachineModel& m, SimdLevel level) {
  return m.fma_gflops_per_core * fma_width(m, level) / fma_width(m, m.simd);
}

MachineModel estimate_machine_model(const CpuInfo& cpu, SimdLevel level) {
  constexpr double kFmaPipes = 2.0, kFlopsPerFma = 2.0;
  const double mhz = cpu.nominal_mhz > 0 ? std::clamp(cpu.nominal_mhz, 800.0, 6000.0) : 2500.0;
  MachineModel m;
  m.avx512_over_avx2 = avx512_fma_speedup(cpu);
  m.fma_gflops_per_core = fma_width(m, level) * kFmaPipes * kFlopsPerFma * mhz * 1e-3;
  m.dram_gbps_per_core = kEstimateDramGbpsPerCore;
  m.dram_gbps_total = kEstimateDramGbpsPerCore;
  m.l1d_bytes = cpu.l1d_bytes > 0 ? cpu.l1d_bytes : 32L << 10;
  m.l2_bytes = cpu.l2_bytes > 0 ? cpu.l2_bytes : 512L << 10;
  m.l3_bytes = cpu.l3_bytes > 0 ? cpu.l3_bytes : 8L << 20;
  m.simd = level;
  m.blas_simd = std::max(cpu.simd, level);
  m.source = "estimate from detected features";
  return m;
}

namespace {
std::atomic<const MachineModel*> g_set_model{nullptr};
std::atomic<MachineModelSource> g_source{nullptr};
}  // namespace

const MachineModel& machine_model() {
  if (const MachineModel* m = g_set_model.load(std::memory_order_acquire)) return *m;
  static const MachineModel detected = g_source.load() != nullptr
                                           ? g_source.load()()
                                           : estimate_machine_model(cpu_info(), active_simd());
  return detected;
}

void set_machine_model_source(MachineModelSource source) { g_source.store(source); }

void set_machine_model(const MachineModel& m) {
  static std::mutex mu;
  static std::deque<MachineModel> kept;  // never shrinks: earlier references stay valid
  const std::lock_guard<std::mutex> lock(mu);
  kept.push_back(m);
  g_set_model.store(&kept.back(), std::memory_order_release);
}

std::string describe(const MachineModel& m) {
  std::string line = fmt::format(
      "{}: {:.1f} GFLOP/s per core ({} fp32 FMA, 1 thread), DRAM {:.1f} GB/s per core, {:.1f} "
      "GB/s total, L3 {:g} MiB",
      m.source, m.fma_gflops_per_core, to_string(m.simd), m.dram_gbps_per_core, m.dram_gbps_total,
      static_cast<double>(m.l3_bytes) / (1 << 20));
  if (m.avx512_over_avx2 != 2.0 &&
      (m.simd == SimdLevel::kAvx512 || m.blas_simd == SimdLevel::kAvx512)) {
    line += fmt::format(", AVX-512 FMA at {:.2f}x AVX2's", m.avx512_over_avx2);
  }
  return line;
}

}  // namespace nnperf
