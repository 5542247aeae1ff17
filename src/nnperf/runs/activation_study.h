// The activation-timing study (after usra-survey's MLP.py): the same MLP trained once per
// activation, each run in its own folder (MLP_<Activation>_<YYYYmmdd_HHMMSS>, as MLP.py names
// them) with the `train` outputs, then an analysis rebuilt from those saved files: summary.csv,
// plots (SVG + PNG through gnuplot) and report.md.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/analysis/activation_analysis.h"
#include "nnperf/runs/train_run.h"

namespace nnperf {

// The quick study (`activations --quick`, the lab): a few epochs on a subset, about a minute
// for all eight activations on 2 cores.
struct QuickStudy {
  static constexpr int kEpochs = 4;
  static constexpr int kWarmupEpochs = 1;
  static constexpr int64_t kTrain = 15000;
  static constexpr int64_t kVal = 3000;
  static constexpr int64_t kTest = 5000;
};

struct ActivationStudyOptions {
  TrainRunOptions base;  // hidden, optimizer, epochs, ... (activation is set per run)
  std::vector<std::string> activations;  // empty = all, in usra-survey's order
  std::filesystem::path out_dir;
  bool quick = false;
};

// Runs every activation, then analyse_activation_study(out_dir). Returns the report path.
std::filesystem::path run_activation_study(const ActivationStudyOptions& options);

// The records of a study: its saved runs, as the analysis and the reporters read them.
struct ActivationStudyRecords {
  std::vector<ActivationRun> runs;  // usra-survey's order; the newest run per activation
  // Per run (same order): (epoch, validation accuracy) of each epoch that had a validation pass.
  std::vector<std::vector<std::pair<int64_t, double>>> val_acc;
  // Where and when the runs trained, from their run.json files: "Machine: AMD EPYC (2 logical
  // CPUs, avx2 kernels), 1 thread(s). Build 1a2b3c (Release). Trained 2026-11-28T12:55:45Z to
  // ...Z." ("a / b" where runs differ, "?" where a run.json lacks a field).
  std::string machine;
};

// Reads every MLP_* run folder under `dir` (final_results.json + activation_timings.csv), then
// the training_metrics.csv of the runs kept. Throws naming the folder when a run is incomplete.
ActivationStudyRecords load_activation_study(const std::filesystem::path& dir);

// load_activation_study(dir), analyze_activations, then the reporters (activation_study_outputs.h)
// write summary.csv, plots/ and report.md into `out` (default: dir). Returns the report path.
std::filesystem::path analyse_activation_study(const std::filesystem::path& dir,
                                               const std::string& command_line,
                                               const std::filesystem::path& out = {});

}  // namespace nnperf
