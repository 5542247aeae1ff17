// Measured machine peaks: FMA throughput (one thread and all threads), STREAM-triad bandwidth
// and OpenBLAS SGEMM. Each figure is the median of several timed rounds; the roofline and every
// "% of peak" in nnperf use these measured numbers, not a datasheet.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nnperf {

struct PeakOptions {
  int threads = 0;                                // 0 = all logical CPUs
  int rounds = 7;                                 // medians over this many rounds
  double seconds_per_round = 0.1;                 // FMA loop length
  int64_t triad_bytes = 3 * (int64_t{64} << 20);  // three 64 MiB arrays: far beyond the caches
  int64_t sgemm_n = 1024;                         // 0 = skip the BLAS figure
  bool quick = false;  // a few seconds: 3 rounds, shorter loops, smaller arrays and SGEMM
};

struct Peaks {
  std::string simd;
  int threads = 1;
  double fma_gflops_1thread = 0;  // fp32, one thread
  double fma_gflops = 0;          // fp32, `threads` threads
  double triad_gbps = 0;          // `threads` threads
  double sgemm_gflops_1thread = 0;
  double sgemm_gflops = 0;
  double flops_per_cycle_estimate = 0;  // fma_gflops_1thread / nominal GHz, when the clock is known
};

Peaks measure_peaks(const PeakOptions& options);
// cloudml-project1's peaks.json layout: {env: {description, peak_gbps, peak_gflops: {fp32: ...}}}
// plus a "measured" object with every figure above.
nlohmann::json peaks_to_json(const Peaks& p, const std::string& env);

// ---- reading peaks.json: the ceilings a roofline is drawn against ----
struct ComputeCeiling {
  std::string name, simd;
  int threads = 1;
  double gflops = 0;
};
struct MemoryCeiling {
  std::string level;  // "L1", "L2", "L3", "DRAM"
  int threads = 1;
  double gbps = 0;
  double working_set_lo = 0, working_set_hi = 0;  // bytes of the plateau's working sets
};
struct MachineCeilings {
  std::string env, description;
  double peak_gflops_fp32 = 0, peak_gbps = 0;  // cloudml-project1's fields
  std::vector<ComputeCeiling> compute;         // empty for a file with only those fields
  std::vector<MemoryCeiling> memory;           // empty for a file with only those fields
};
// env empty: the only env in the file, else the one named after hostname(), else UsageError
// listing the envs. A missing or corrupt file, or a missing or non-numeric peak_gbps /
// peak_gflops.fp32, is an nnperf::Error naming the file and the field.
MachineCeilings read_peaks_json(const std::filesystem::path& path, const std::string& env = "");
MachineCeilings ceilings_from_json(const nlohmann::json& doc, const std::string& env,
                                   const std::string& path_for_messages);

}  // namespace nnperf
