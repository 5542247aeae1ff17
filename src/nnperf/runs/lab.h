// `nnperf lab`, the main job: everything nnperf measures, on this machine and the embedded default
// data, under one folder, then one report. The stages, in order: the machine's ceilings (peaks,
// quick), the MLP implementation benchmark (short settings), the quick activation-timing study,
// a sanity profile of one CNN with three convolution algorithms, a one-epoch training run of that
// CNN on 1,024 images, the complexity counts of what ran, the roofline over all of it, and the
// report (report.md, report.html). Each stage is one call
// into the job it names, writing into its own subfolder; a progress line per stage.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/runs/progress.h"

namespace nnperf {

struct LabOptions {
  std::filesystem::path out_dir;  // empty: a new results/lab_<timestamp>
  bool overwrite = false;
  int threads = 0;                 // 0 = all logical CPUs
  std::filesystem::path data_dir;  // MNIST-format data; empty = the default (Fashion-MNIST)
  bool synthetic = false;          // synthetic data instead (no data set installed)
  std::string model = "resnet18";  // the profiled CNN
  std::vector<std::string> algorithms{"gemm", "winograd", "find"};
  Progress::Mode progress = Progress::Mode::kAuto;
  std::string command_line;
};

struct LabResult {
  std::filesystem::path out_dir, report_markdown, report_html;
  std::vector<std::pair<std::string, double>> stage_seconds;  // in order
};

LabResult run_lab(const LabOptions& options);

}  // namespace nnperf
