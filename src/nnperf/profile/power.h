// Power and energy: Linux RAPL energy counters (powercap sysfs, wrap-around handled) and, where
// present, NVML (loaded at run time). Energy over a window is a counter difference; power samples
// are the derivative between consecutive readings; mean power is energy / time (time-weighted),
// and NVML power readings are integrated by the trapezoidal rule inside each window only (never
// across the gap between windows, ai3-8CuDNN's profiler's mistake). Where nothing can be read (VMs,
// containers) every figure is absent and `unavailable_reason` says why; nothing is made up.
// One meter per run, the one of the run's device: a CPU run is never measured with a GPU board's
// power.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "nnperf/kernels/gemm/gemm.h"  // Device

namespace nnperf {

// One RAPL zone: /sys/class/powercap/intel-rapl:0 ("package-0"), its sub-zones (core, dram, ...).
struct RaplDomain {
  std::string name;                   // "package-0", "package-0/dram"
  std::filesystem::path energy_file;  // .../energy_uj
  uint64_t max_range_uj = 0;          // counter wraps to 0 after this value
  bool top_level = true;              // package zones are summed; sub-zones are reported only
};

class RaplReader {
 public:
  // Scans `root` (default /sys/class/powercap) for intel-rapl zones (AMD's kernels use the same
  // names). Unreadable energy_uj files (root-only on recent kernels) make the zone unavailable;
  // the reason names the file and the system's error.
  explicit RaplReader(std::filesystem::path root = "/sys/class/powercap");
  bool available() const { return !domains_.empty(); }
  const std::string& unavailable_reason() const { return reason_; }
  const std::vector<RaplDomain>& domains() const { return domains_; }
  // Current counters (µJ), one per domain. Throws nnperf::Error naming the file when a read fails.
  std::vector<uint64_t> read() const;
  // Joules between two readings of one domain, allowing one wrap-around.
  static double delta_joules(uint64_t before, uint64_t after, uint64_t max_range_uj);
  // Sum over top-level domains of delta_joules.
  double package_joules(const std::vector<uint64_t>& before,
                        const std::vector<uint64_t>& after) const;

 private:
  std::vector<RaplDomain> domains_;
  std::string reason_;
};

// NVML through dlopen("libnvidia-ml.so.1"): total board power (mW) of every GPU.
class NvmlReader {
 public:
  // pci_bus_id: the one board to read (the CUDA device's, as cudaDeviceGetPCIBusId writes it);
  // "" or a bus NVML does not know: every board NVML sees, summed (scope() says which).
  explicit NvmlReader(const std::string& library = "libnvidia-ml.so.1",
                      const std::string& pci_bus_id = "");
  ~NvmlReader();
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;
  bool available() const { return devices_ > 0; }
  const std::string& unavailable_reason() const { return reason_; }
  int devices() const { return devices_; }
  // The boards read: "the board at <bus>" or "all N boards NVML sees, summed".
  const std::string& scope() const { return scope_; }
  std::optional<double> power_watts() const;  // summed over the boards read
  // The boards' total-energy counters (nvmlDeviceGetTotalEnergyConsumption, mJ since the driver
  // loaded; Volta and later), summed over the boards read, in joules; nullopt where one has none.
  std::optional<double> energy_joules() const;

 private:
  void* lib_ = nullptr;
  int devices_ = 0;
  std::string reason_, scope_;
  std::vector<void*> handles_;
  int (*get_power_)(void*, unsigned int*) = nullptr;
  int (*get_energy_)(void*, unsigned long long*) = nullptr;  // null when the library lacks it
  int (*shutdown_)() = nullptr;
};

struct PowerSample {
  double t_s = 0;      // seconds since the window began
  double power_w = 0;  // average power since the previous sample (RAPL) or instantaneous (NVML)
};

struct PowerWindow {
  double seconds = 0;
  std::optional<double> energy_j;  // absent when no counter could be read
  std::optional<double> power_mean_w, power_std_w, power_min_w, power_max_w;
  int64_t samples = 0;
  std::string source;  // "rapl", "nvml" or "none"
};

// Statistics of a window from its samples and (when known) its counter energy. Pure function,
// used by PowerMonitor and tested directly.
// With a counter (RAPL, or NVML's total-energy counter) the energy is the counter difference and
// the samples give std/min/max (a cross-check); without one (NVML boards without the counter) the
// energy is the trapezoidal integral of the power samples.
PowerWindow summarize_power(double seconds, std::optional<double> counter_energy_j,
                            const std::vector<PowerSample>& samples, const std::string& source);

// Trapezoidal integral of samples (t, w) over [0, t_end]: the first sample's value is held from
// 0 and the last one's to t_end.
double trapezoid_joules(const std::vector<PowerSample>& samples, double t_end);

struct PowerOptions {
  std::filesystem::path rapl_root = "/sys/class/powercap";
  std::string nvml_library = "libnvidia-ml.so.1";
  // Which meter measures the run. One meter per window: adding a GPU board's power to a CPU
  // package's would measure neither.
  //   "auto": the meter of the run's device: RAPL (the CPU package) for a CPU run, NVML (the GPU
  //           boards) for a CUDA run; when that meter cannot be read, none, and
  //           unavailable_reason() says why. A CPU run never reads NVML.
  //   "rapl", "nvml": that meter, whatever the device; nnperf::Error when it cannot be read.
  //   "none": no meter (unavailable_reason() says "--power-source none").
  std::string source = "auto";
  Device device = Device::kCpu;  // where the measured run executes
  // NVML: the CUDA device's PCI bus (DeviceProperties::pci_bus_id), so that a host with several
  // boards reads only the one that runs the work; "": every board, summed.
  std::string nvml_pci_bus_id = "";
  double interval_ms =
      20.0;  // RAPL's sysfs counter updates about every 1 ms; NVML's power every 20-100 ms
};

class PowerMonitor {
 public:
  // Throws UsageError for an unknown source, Error when "rapl" or "nvml" cannot be read.
  explicit PowerMonitor(const PowerOptions& options = {});
  ~PowerMonitor();
  bool available() const;
  std::string unavailable_reason() const;  // why no source, for run.json
  std::string source() const;
  // Which boards an NVML window reads (NvmlReader::scope); "" when NVML is not the source.
  std::string scope() const;
  // A window: a sampler thread reads the sources every interval between begin() and end().
  void begin();
  PowerWindow end();

 private:
  void sample_loop();
  PowerOptions options_;
  RaplReader rapl_;
  std::unique_ptr<NvmlReader> nvml_;
  std::thread thread_;
  std::atomic<bool> running_{false};
  std::mutex mutex_;
  std::condition_variable stop_;  // wakes the sampler at end() instead of after its interval
  int64_t t0_ns_ = 0;
  std::vector<uint64_t> rapl_begin_, rapl_last_;
  std::optional<double> nvml_begin_j_;  // the NVML energy counter at begin(), when it has one
  double rapl_last_t_ = 0;
  std::vector<PowerSample> samples_;
  std::string active_;  // "rapl", "nvml" or "" (none)
  int64_t failed_reads_ = 0;
};

}  // namespace nnperf
