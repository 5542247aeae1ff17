// `nnperf devices`: the CPU (model, cores, SIMD level, caches), the machine model the conv cost
// models use, the BLAS in use and its threads, and whether a CUDA device is present.
// `--check-cuda` (the flag ai3-8CuDNN's profiler has): the whole CUDA stack, and exit 1 when
// there is no CUDA device, so scripts can test for a GPU.
#include <fmt/format.h>

#include <cstdio>

#include "command.h"
#include "flags.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/machine_model.h"
#include "nnperf/core/threads.h"
#include "nnperf/gpu/probe.h"

namespace nnperf::app {
namespace {

// The CUDA report; throws (exit 1) after printing it when there is no device.
int check_cuda() {
  CudaProbeOptions o;
  o.libraries = true;
  const CudaProbe cuda = probe_cuda(o);
  fmt::print("{}", cuda_report(cuda));
  std::fflush(stdout);
  if (cuda.devices.empty()) throw Error(fmt::format("no CUDA device: {}", cuda.message));
  return 0;
}

int run_devices(int threads) {
  set_threads(threads);
  const CpuInfo& cpu = cpu_info();
  fmt::print("cpu: {}\n", cpu.model_name);
  fmt::print("  logical cpus: {}\n", cpu.logical_cpus);
  // Only some kernels have an AVX-512 variant (the blocked GEMM, BatchNorm, the FMA peak); the
  // others run their AVX2 path on such a CPU, and the line says so.
  const SimdLevel active = active_simd();
  fmt::print("  simd: {} (avx2 {}, fma {}, avx512f {}); kernels dispatch to: {}{}\n",
             to_string(cpu.simd), cpu.has_avx2 ? "yes" : "no", cpu.has_fma ? "yes" : "no",
             cpu.has_avx512f ? "yes" : "no", to_string(active),
             active == SimdLevel::kAvx512 ? " where a kernel has it, else avx2" : "");
  fmt::print("  caches: L1d {} KiB, L2 {} KiB, L3 {} KiB\n", cpu.l1d_bytes / 1024,
             cpu.l2_bytes / 1024, cpu.l3_bytes / 1024);
  fmt::print("  threads in use: {}\n", num_threads());
  // What `guess` ranks convolution algorithms for (docs/machine-model.md).
  fmt::print("  cost model: {}\n", describe(machine_model()));
  fmt::print("blas: {}\n", blas_description());
  const CudaProbe cuda = probe_cuda();
  if (cuda.devices.empty()) {
    fmt::print("cuda: no device ({})\n", cuda.message);
  } else {
    fmt::print("cuda: driver {}.{}, {} device(s), NVML {}\n", cuda.driver_version / 1000,
               cuda.driver_version % 1000 / 10, cuda.devices.size(),
               cuda.nvml_loaded ? "available" : "not available");
    for (const auto& d : cuda.devices) {
      fmt::print("  [{}] {} (sm_{}{}), {} SMs, {:.1f} GiB\n", d.index, d.name, d.compute_major,
                 d.compute_minor, d.multiprocessors,
                 static_cast<double>(d.total_memory_bytes) / (1 << 30));
    }
  }
  return 0;
}

const Registrar reg{Command{
    "devices", 90, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Report the CPU, the machine model `guess` ranks convolutions for (peaks.json or an "
          "estimate), the BLAS in use and whether a CUDA device is present");
      auto threads = std::make_shared<int>(0);
      auto cuda = std::make_shared<bool>(false);
      sub.add_option("--threads", *threads, "Threads (0 = all logical CPUs)")
          ->check(threads_count());
      sub.add_flag("--check-cuda", *cuda,
                   "Report the CUDA driver and runtime versions, every device (name, SMs, memory, "
                   "clocks, compute capability), cuDNN, cuBLAS and NVML, each missing part with "
                   "the reason; then exit 0 when there is a CUDA device, else 1 with \"no CUDA "
                   "device: <reason>\" on stderr");
      return [threads, cuda] { return *cuda ? check_cuda() : run_devices(*threads); };
    }}};

}  // namespace
}  // namespace nnperf::app
