// Nsight Compute CSV import: per-launch FLOPs (per precision), DRAM / L2 / L1 bytes and time from
// the hardware counters that `ncu --csv` (the details page, one row per metric) or
// `ncu --page raw --csv` (one row per launch, a units row under the header) writes, for a
// counter-based roofline. Metrics to collect: share/ncu-roofline-metrics.txt; the rules (units,
// number conventions, what is and is not counted, every refusal) are in docs/ncu.md.
//
// API
//   NcuImport parse_ncu_csv(text, path_for_messages)  the parser (throws nnperf::Error, one line
//                                                      "PATH:LINE: ... metric ...")
//   NcuImport read_ncu_csv(path)                       the file (refused above kNcuMaxFileBytes)
//   nlohmann::json ncu_json(import, roof)              {"context", "records", "by_name"} (ncu_json.cc)
//   nlohmann::json ncu_utilisation_summary(import)     time-weighted sm / dram throughput %
// Counts that are missing (a metric reported "n/a", a precision not collected) are NaN here and
// null in JSON, never zero; everything that depends on them is missing too.
#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace nnperf {

// Larger files are refused naming the file (select kernels with ncu's --kernel-name or
// --launch-count instead).
inline constexpr std::uintmax_t kNcuMaxFileBytes = std::uintmax_t{2} << 30;  // 2 GiB

inline constexpr double kNcuMissing = std::numeric_limits<double>::quiet_NaN();

// One kernel launch, identified by ncu's "ID". NaN (kNcuMissing) = missing (null in JSON).
//   flops_<p> = 2 * fma + mul + add thread instructions of precision p (fp32, fp64, fp16), from
//   sm__sass_thread_inst_executed_op_{f,d,h}{fma,mul,add}_pred_on.sum (or the smsp__ variant);
//   flops = the sum of the precisions that are available. Tensor-pipe instructions are not FLOPs.
//   ai_<level> = flops / <level>_bytes (NaN when the bytes are 0); gflops = flops / time_s / 1e9;
//   dram_gbs = dram_bytes / time_s / 1e9.
// flags (sorted), each a fact about this launch:
//   tensor_pipe_not_counted          sm__inst_executed_pipe_tensor.sum > 0: work not in flops
//   tensor_pipe_not_measured         no tensor-pipe metric (or n/a): tensor work unknown
//   fp16_half2_may_be_undercounted   fp16 work: the counters count instructions, a packed half2
//                                    instruction does two operations per thread
//   fp32_flops_missing, fp64_flops_missing, fp16_flops_missing
//                                    that precision's counters are absent or n/a
//   dram_bytes_from_read_write       dram__bytes_read.sum + dram__bytes_write.sum
//   time_from_cycles                 sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second
//   dram_bytes_zero, time_zero       a zero denominator: the ratios that need it are null
//   n/a:<metric>                     ncu reported n/a (or an empty cell) for a metric used here
struct NcuLaunch {
  std::string id, name, block, grid;
  int64_t line = 0;  // the launch's first line in the file
  double flops_fp32 = kNcuMissing, flops_fp64 = kNcuMissing, flops_fp16 = kNcuMissing;
  double flops = kNcuMissing;
  double tensor_inst = kNcuMissing;
  double dram_bytes = kNcuMissing, l2_bytes = kNcuMissing, l1_bytes = kNcuMissing;
  double time_s = kNcuMissing;
  double ai_dram = kNcuMissing, ai_l2 = kNcuMissing, ai_l1 = kNcuMissing;
  double gflops = kNcuMissing, dram_gbs = kNcuMissing;
  // Utilisation (sm__throughput / dram__throughput .avg.pct_of_peak_sustained_elapsed, or the
  // SpeedOfLight section's "Compute (SM) Throughput" / "DRAM Throughput"), in percent.
  double sm_throughput_pct = kNcuMissing, dram_throughput_pct = kNcuMissing;
  std::vector<std::string> flags;
};

struct NcuImport {
  std::string path;
  std::string layout;                    // "details" (ncu --csv) or "raw" (ncu --page raw --csv)
  std::string number_convention;         // "1,234,567.89" or "1.234.567,89"
  std::string number_convention_source;  // the line that decided it, or why it was assumed
  std::vector<NcuLaunch> launches;       // in the file's order of IDs
  // No counter a roofline needs (bytes, FLOP instructions) but utilisation metrics (...pct...):
  // no launch is checked for DRAM bytes or time, and the FLOP / byte fields are all NaN.
  bool utilisation_only = false;
  std::vector<std::string> pct_metrics;  // utilisation (...pct... or "%") metric names seen
  std::vector<std::string> warnings;     // one line each
};

NcuImport parse_ncu_csv(std::string_view text, const std::string& path_for_messages);
NcuImport read_ncu_csv(const std::filesystem::path& path);

// The caller's ceilings; NaN = unknown (attainable, pct_of_attainable and bound are then null).
// Each must be NaN or positive and finite (UsageError otherwise).
struct NcuRoof {
  double peak_gflops = std::numeric_limits<double>::quiet_NaN();  // 1e9 FLOP/s
  double peak_gbps = std::numeric_limits<double>::quiet_NaN();    // 1e9 bytes/s (DRAM)
};

// {"context": {tool, path, layout, number_convention, number_convention_source, launches,
//              kernels, utilisation_only, peak_gflops, peak_gbps, units, convention, warnings},
//  "records": [one per launch, exactly: id, name, block, grid, flops_fp32, flops_fp64,
//              flops_fp16, flops, tensor_inst, dram_bytes, l2_bytes, l1_bytes, time_s, ai_dram,
//              ai_l2, ai_l1, gflops, dram_gbs, attainable_gflops, pct_of_attainable, bound, flags],
//  "by_name": [one per kernel name, in order of first launch: name, launches, ids, time_s,
//              flops_fp32, flops_fp64, flops_fp16, flops, tensor_inst, dram_bytes, l2_bytes,
//              l1_bytes, ai_dram, ai_l2, ai_l1, gflops, dram_gbs, attainable_gflops,
//              pct_of_attainable, bound, flags (union)]}
// attainable_gflops = min(peak_gflops, ai_dram * peak_gbps) (peak_gflops when dram_bytes is 0 and
// flops > 0); pct_of_attainable = 100 * gflops / attainable_gflops; bound = "memory" when
// ai_dram * peak_gbps < peak_gflops, "compute" otherwise, null when unknown. by_name sums launches
// with identical names (a missing value in any launch makes the sum missing) and derives the
// ratios from the sums. When utilisation_only, records and by_name are empty and the document
// carries "utilisation": ncu_utilisation_summary(import).
nlohmann::json ncu_json(const NcuImport& import, const NcuRoof& roof);

// {"path", "utilisation_only", "message", "launches", "sm_throughput_pct", "dram_throughput_pct",
//  "pct_metrics", "records": [{id, name, time_s, sm_throughput_pct, dram_throughput_pct}]}, each
// *_throughput_pct {"mean", "min", "max", "launches", "weighting"}: the mean weighted by each
// launch's time_s ("time"), or unweighted when some launch has no time (weighting says how many);
// null when no launch has the metric. When utilisation_only the message says that no counter
// roofline can be drawn from the file.
nlohmann::json ncu_utilisation_summary(const NcuImport& import);

}  // namespace nnperf
