// Measured machine ceilings, as ERT and likwid-bench measure them: FMA throughput at every SIMD
// width the CPU has, a bandwidth sweep over working-set sizes (read, copy, triad) with one plateau
// per cache level and DRAM, a STREAM-triad check of our byte counting in the same run, and SGEMM
// (OpenBLAS and our `blocked`), each on one thread and on all threads. Every figure is the median
// of several timed rounds; the roofline and every "% of peak" in nnperf use these measured
// numbers, not a datasheet. peaks.json keeps the roofline project's layout ({env: {description,
// peak_gbps, peak_gflops: {fp32}}}) and adds the ceilings beside it; read_peaks_json reads both.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "nnperf/io/json_read.h"
#include "nnperf/io/plot.h"

namespace nnperf {

// Bytes per cache as one core sees it (L1d and L2 private, L3 shared, as cpu_info reports them).
struct CacheSizes {
  int64_t l1d = 0, l2 = 0, l3 = 0;
};

struct PeakOptions {
  int threads = 0;           // 0 = all logical CPUs; figures are taken on 1 thread and on this many
  int rounds = 7;            // timed samples per figure (median)
  bool quick = false;        // recorded in peaks.json; quick_peak_options() sets it
  double fma_seconds = 0.1;  // one FMA sample of the chosen loop
  double fma_trial_seconds = 0.02;   // one FMA sample while choosing the chain count
  double min_sample_seconds = 1e-3;  // bandwidth: passes per sample so that it lasts this long
  int steps_per_octave = 4;          // sweep sizes: 4 KiB * 2^(i / steps_per_octave)
  int64_t min_working_set = 4096;
  int64_t max_working_set = 0;  // 0 = 4 x the last-level cache
  CacheSizes caches;            // all 0 = detected (cpu_info); tests pass small made-up ones
  int64_t sgemm_n = 1024;       // 0 = skip SGEMM
};
// --quick: 3 rounds, 2 sizes per octave, 512^3 SGEMM, short FMA samples (a few seconds in all).
PeakOptions quick_peak_options();

struct FmaCeiling {
  std::string name, simd;  // "avx2 fma", "avx2"
  int threads = 1, lanes = 1, chains = 1, rounds = 0;
  double gflops = 0, min = 0, max = 0;
};
// A chain count tried on one thread (the best per simd width becomes its ceiling).
struct FmaTrial {
  std::string name, simd;
  int chains = 1;
  double gflops = 0;
};
struct SweepPoint {
  std::string kernel;  // "read", "copy", "triad"
  int threads = 1;
  int64_t bytes = 0;  // working set: every array the kernel touches
  double gbps = 0, min = 0, max = 0;
};
struct BandwidthPlateau {
  std::string level;  // "L1", "L2", "L3", "DRAM"
  std::string kernel;
  int threads = 1;
  double gbps = 0;          // median of the per-size medians in the plateau
  double min = 0, max = 0;  // over every sample of those sizes
  int64_t lo = 0, hi = 0;   // working sets measured in the plateau
  int sizes = 0;
};
struct StreamCheck {
  std::string level;
  int threads = 1;
  int64_t working_set_bytes = 0;
  double stream_gbps = 0, ours_gbps = 0;  // interleaved samples, medians
  double ratio() const { return stream_gbps > 0 ? ours_gbps / stream_gbps : 0; }
};
struct SgemmFigure {
  std::string impl;  // "blas", "blocked"
  int64_t n = 0;
  int threads = 1;
  double gflops = 0, min = 0, max = 0;
};

struct Peaks {
  std::string simd;  // widest level measured
  int threads = 1;   // "all threads"
  CacheSizes caches;
  PeakOptions options;
  std::vector<FmaCeiling> compute;  // per simd width x {1, all} threads
  std::vector<FmaTrial> fma_trials;
  std::vector<SweepPoint> sweep;
  std::vector<BandwidthPlateau> plateaus;  // every kernel
  // every triad plateau on 1 and on all threads; the all-threads DRAM check last
  std::vector<StreamCheck> stream;
  std::vector<SgemmFigure> sgemm;
  double seconds = 0;  // wall time of the measurement
  // CPU seconds that other processes (and the hypervisor's steal) took during it, from
  // /proc/stat; -1 when unknown. Above ~0.1 x seconds the all-threads figures are low.
  double other_cpu_seconds = -1;

  double best_fma(int threads) const;  // the best width's GFLOP/s on `threads`
  const BandwidthPlateau* plateau(const std::string& level, const std::string& kernel,
                                  int threads) const;
  double peak_gbps() const;  // DRAM triad on all threads (the largest working set if no plateau)
};

Peaks measure_peaks(const PeakOptions& options);
// Only the best FMA loop of the active SIMD level on `threads` threads (the figure conv-bench's
// "% of peak" needs, in a fraction of a second).
double measure_fma_peak(int threads, int rounds, double seconds_per_round);

// The plateaus of a sweep: per kernel x threads and cache level, the sizes well inside the level
// (L1: ws <= L1/2; Ln: 2 x L(n-1) <= ws <= Ln/2; DRAM: ws >= 4 x the last level), where the
// private levels (L1d, L2) count once per thread and L3 once. A level with no size inside its
// window is left out.
std::vector<BandwidthPlateau> detect_plateaus(std::span<const SweepPoint> sweep,
                                              const CacheSizes& caches);

// One env's entry in the roofline project's peaks.json layout plus the ceilings (see README
// "Machine peaks").
nlohmann::json peaks_env_json(const Peaks& p);
// {env: peaks_env_json(p)}
nlohmann::json peaks_to_json(const Peaks& p, const std::string& env);
// The file's other environments stay: reads `path` when it exists (an unreadable or corrupt file,
// or one that is not an object of environments, is an Error naming it and is left untouched),
// sets doc[env] = entry and writes atomically.
void merge_peaks_json(const std::filesystem::path& path, const std::string& env,
                      const nlohmann::json& entry);
// The check merge_peaks_json does first, alone: run before measuring so a bad file fails fast.
void check_peaks_json_mergeable(const std::filesystem::path& path);
// Bandwidth against working-set size (log-log), one curve per kernel x threads, the cache sizes
// marked: <stem>.dat/.gp and, through gnuplot, .svg/.png (the stem: io/records.h's
// peaks_bandwidth_stem). Rendered from one env entry of
// peaks.json (its bandwidth_sweep, machine.caches, method.bandwidth_simd), so `nnperf report`
// rebuilds it from the file. `where`: the file and the env (its path), for the title and messages;
// an entry without a sweep or with a malformed point is an Error naming them.
PlotResult peaks_bandwidth_plot(const nlohmann::json& entry, const JsonPath& where,
                                const std::filesystem::path& stem);

// ---- Reading peaks.json (the roofline and every "% of peak") ----
struct ComputeCeiling {
  std::string name, simd;
  int threads = 1;
  double gflops = 0;
};
struct MemoryCeiling {
  std::string level;
  int threads = 1;
  double gbps = 0;
  double working_set_lo = 0, working_set_hi = 0;
};
struct MachineCeilings {
  std::string env, description;
  double peak_gflops_fp32 = 0, peak_gbps = 0;  // seed-003 fields
  std::vector<ComputeCeiling> compute;         // may be empty for a seed-003-only file
  std::vector<MemoryCeiling> memory;           // may be empty for a seed-003-only file
  std::map<std::string, double> peak_gflops;   // every precision in the file ("fp32", "fp16", ...)
};
// env empty: the only env in the file, else the one named after hostname(), else UsageError
// listing the envs (also when a named env is absent). A missing/corrupt file or a
// missing/non-numeric peak_gbps / peak_gflops.fp32 is an nnperf::Error naming file and field.
MachineCeilings read_peaks_json(const std::filesystem::path& path, const std::string& env = "");
MachineCeilings ceilings_from_json(const nlohmann::json& doc, const std::string& env,
                                   const std::string& path_for_messages);

}  // namespace nnperf
