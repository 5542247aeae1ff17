// `nnperf devices`: the CPU (model, cores, SIMD level, caches), the BLAS in use and its threads,
// and whether a CUDA device is present.
#include <fmt/format.h>

#include "command.h"
#include "flags.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/threads.h"
#include "nnperf/gpu/probe.h"

namespace nnperf::app {
namespace {

int run_devices(int threads) {
  set_threads(threads);
  const CpuInfo& cpu = cpu_info();
  fmt::print("cpu: {}\n", cpu.model_name);
  fmt::print("  logical cpus: {}\n", cpu.logical_cpus);
  fmt::print("  simd: {} (avx2 {}, fma {}, avx512f {}); kernels dispatch to: {}\n",
             to_string(cpu.simd), cpu.has_avx2 ? "yes" : "no", cpu.has_fma ? "yes" : "no",
             cpu.has_avx512f ? "yes" : "no", to_string(active_simd()));
  fmt::print("  caches: L1d {} KiB, L2 {} KiB, L3 {} KiB\n", cpu.l1d_bytes / 1024,
             cpu.l2_bytes / 1024, cpu.l3_bytes / 1024);
  fmt::print("  threads in use: {}\n", num_threads());
  fmt::print("blas: {}\n", blas_description());
  const CudaProbe cuda = probe_cuda();
  if (cuda.devices.empty()) {
    fmt::print("cuda: no device ({})\n", cuda.message);
  } else {
    fmt::print("cuda: driver {}.{}, {} device(s), NVML {}\n", cuda.driver_version / 1000,
               cuda.driver_version % 1000 / 10, cuda.devices.size(),
               cuda.nvml_loaded ? "available" : "not available");
    for (const auto& d : cuda.devices) {
      fmt::print("  [{}] {} (sm_{}{}), {:.1f} GiB\n", d.index, d.name, d.compute_major,
                 d.compute_minor, static_cast<double>(d.total_memory_bytes) / (1 << 30));
    }
  }
  return 0;
}

const Registrar reg{Command{
    "devices", 90, [](CLI::App& sub) -> std::function<int()> {
      sub.description("Report the CPU, the BLAS in use and whether a CUDA device is present");
      auto threads = std::make_shared<int>(0);
      sub.add_option("--threads", *threads, "Threads (0 = all logical CPUs)")->check(threads_count());
      return [threads] { return run_devices(*threads); };
    }}};

}  // namespace
}  // namespace nnperf::app
