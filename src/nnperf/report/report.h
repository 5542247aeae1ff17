// `nnperf report DIR`: one report from any results folder, rebuilt from the files the jobs saved
// (nothing is re-run): the machine, measured ceilings (peaks.json), rooflines (roofline.json),
// convolution-algorithm profiles (their overall and layers CSVs), MLP implementation benchmarks
// (mlp_bench.json), activation studies (summary.csv and plots), complexity counts (the
// complexity JSON), training runs (final_results.json), the fixed-iteration driver's metrics.csv,
// one-step training profiles (one_step.json) and Nsight Compute imports (ncu.json). Each part found
// becomes a section with its tables (units in the headers), figures (the SVGs the jobs rendered)
// and findings computed from the numbers. Written as report.md and a self-contained report.html
// (report/document.h).
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/report/document.h"

namespace nnperf {

// Reads every result under `dir` (recursively). Throws UsageError when `dir` is missing or holds
// no result nnperf knows; a result file that is broken throws naming the file.
ReportDocument build_report(const std::filesystem::path& dir);

// What one of the activation study's figures shows, by its file stem (timing_comparison,
// accuracy_vs_time, layer_heatmap, validation_curves): the caption under which the study's own
// report.md and this report show it. Another stem is returned as it is.
std::string activation_figure_caption(std::string_view stem);

struct ReportFiles {
  std::filesystem::path markdown, html;
  std::size_t sections = 0, figures = 0, tables = 0;
};
// build_report(dir), written into `out_dir` (default: dir) as report.md and report.html, each
// atomically. A report.md there that another job wrote (the activation study's) is kept: the
// Markdown then goes to nnperf_report.md.
ReportFiles write_report(const std::filesystem::path& dir,
                         const std::filesystem::path& out_dir = {});

}  // namespace nnperf
