// The activation study's reporters: summary.csv, each plot and report.md, rendered from the
// analysis of the study's records (its saved runs) alone.
#pragma once
#include <filesystem>
#include <string>

#include "nnperf/analysis/activation_analysis.h"
#include "nnperf/io/plot.h"
#include "nnperf/runs/activation_study.h"

namespace nnperf {

// summary.csv: usra-survey's columns first, then ours (units in names).
void write_activation_summary_csv(const ActivationAnalysis& a, const std::filesystem::path& path);

// The plots' specs.
PlotSpec activation_timing_plot(const ActivationAnalysis& a);                  // timing_comparison
PlotSpec activation_accuracy_plot(const ActivationAnalysis& a);                // accuracy_vs_time
PlotSpec activation_layer_heatmap(const ActivationAnalysis& a);                // layer_heatmap
PlotSpec activation_validation_curves(const ActivationStudyRecords& records);  // validation_curves
// What report.md says in place of the validation figure when no run held out a validation split
// (the report's rebuild reads it to know whether the figure belongs to the study).
inline constexpr const char* kNoValidationFigure =
    "No data: none of the runs held out a validation split";

// Renders the plots under `plots_dir` (created): three, and validation_curves where some run held
// out a validation split; returns report.md's "Plots" section.
std::string render_activation_plots(const ActivationAnalysis& a,
                                    const ActivationStudyRecords& records,
                                    const std::filesystem::path& plots_dir);

// report.md's text; `plots_md` from render_activation_plots, `machine` the records' machine line
// (ActivationStudyRecords::machine), `dir` the study folder.
std::string activation_report_md(const ActivationAnalysis& a, const std::string& plots_md,
                                 const std::string& machine, const std::filesystem::path& dir,
                                 const std::string& command_line);

}  // namespace nnperf
