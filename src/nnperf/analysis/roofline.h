// The roofline: measured times become points against the machine's measured ceilings.
//
// Points come from results folders nnperf wrote: one per layer of a `profile` sweep (its layers
// CSV), one per case of `mlp-bench` (mlp_bench.json) and one per `train` run (final_results.json,
// so also each run of the activation study). FLOPs and bytes always come from the complexity
// model (analysis/complexity.h) for the exact model, input size, batch and pass that ran, never
// from attained / peak bandwidth (cloudml-project1's mistake); training counts the backward pass
// per layer and the optimizer step.
//
// Ceilings come from peaks.json (analysis/peaks.h) or from two numbers given by the user. Each
// point is bounded by min(compute roof, intensity x bandwidth of its level): the compute roof is
// the best fp32 FMA ceiling for the point's thread count; the memory level is the smallest one
// whose measured plateau covers the point's minimum bytes (L1, L2, L3, else DRAM).
//
// Records: roofline_json() is {"context": {...}, "records": [...]}; the CSVs, the plot and the
// terminal summary are rendered from that JSON alone, so a saved roofline.json re-renders.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nnperf/analysis/peaks.h"
#include "nnperf/io/plot.h"

namespace nnperf {

struct RooflinePoint {
  std::string source;  // "profile", "mlp-bench", "train" or "ncu"
  std::string origin;  // the file the time was read from
  std::string label;   // unique within a roofline: what the point is
  std::string arch;    // model name
  std::string backend = "cpu";
  std::string precision = "fp32";
  std::string layer;       // graph node name; "" for a whole run
  // Layer::kind(); "training step" / "forward pass" for a whole run, "kernel" for an ncu launch
  std::string layer_type;
  std::string algorithm;   // conv algorithm or GEMM implementation that ran
  std::string pass;        // "inference", "training"
  int64_t batch_size = 0;
  int64_t input_size = 0;  // H (= W); 0 when not an image model
  int threads = 1;
  double flops = 0;        // per timed interval
  double bytes = 0;        // minimum bytes moved per timed interval
  double time_ms = 0;      // per timed interval
  double elapsed_sec = 0;  // the measured span the time came from (whole run for train)
};

// Every point under `dir` (searched recursively; `dir` may also be one results folder). Folders
// that are none of the three kinds are skipped; `notes` receives one line per skipped layer or
// file that could not be counted (a layer type with no formula, a zero-time layer).
std::vector<RooflinePoint> collect_roofline_points(const std::filesystem::path& dir,
                                                   std::vector<std::string>& notes);

// One point per launch of an Nsight Compute import (analysis/ncu.h) that has FLOPs, DRAM bytes
// and a time: backend "cuda", layer = the kernel name, bytes = DRAM bytes. Launches without them
// (or with no FLOP counters) are listed in `notes`.
struct NcuImport;
std::vector<RooflinePoint> ncu_roofline_points(const NcuImport& import,
                                               std::vector<std::string>& notes);

// Ceilings from two numbers (roofline_plot.py's --peak-compute TFLOP/s --peak-bw GB/s).
MachineCeilings ceilings_from_peaks(double peak_tflops, double peak_gbps);

// The records: every point evaluated against `roof`, with the context (environment, ceilings,
// convention, sources, notes, time shares). `color_by` is "type" or "algorithm" (plot colours).
nlohmann::json roofline_json(const std::vector<RooflinePoint>& points, const MachineCeilings& roof,
                             const std::vector<std::string>& notes,
                             const std::string& color_by = "type");

// ---- reporters: render the JSON above (or a saved copy of it) ----
struct CsvDoc {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};
// roofline_points.csv: cloudml-project1's columns (label, env, arch, backend, batch_size,
// precision, elapsed_sec, images_per_sec, ai, attained_gflops, peak_gflops, peak_gbps), then ours.
CsvDoc roofline_points_csv(const nlohmann::json& doc);
// nn-perf's roofline_plot.py --summary: per point, attained vs attainable.
CsvDoc roofline_summary_csv(const nlohmann::json& doc);
// Log-log plot: one ceiling per memory level and per SIMD level (for the most common thread
// count), one point per record coloured by layer type (or algorithm), the ten slowest labelled.
PlotResult roofline_plot(const nlohmann::json& doc, const std::filesystem::path& stem);
// Terminal summary: ceilings, time share by bound, the ten slowest points.
std::string roofline_text(const nlohmann::json& doc);
void write_csv_doc(const CsvDoc& csv, const std::filesystem::path& path);
// Writes roofline.json, roofline_points.csv and the plot (roofline.svg/.png, .dat, .gp) into
// `dir`; the plot's result says whether gnuplot rendered it.
PlotResult write_roofline_outputs(const nlohmann::json& doc, const std::filesystem::path& dir);

}  // namespace nnperf
