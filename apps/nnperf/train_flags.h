// Flags shared by `train` and `activations`: they configure the same training run.
#pragma once
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "nnperf/runs/train_run.h"

namespace nnperf::app {

struct TrainFlags {
  TrainRunOptions run;
  std::string hidden = "128,128,128";
  std::string data_dir;
  std::string progress = "auto";
  bool no_tensorboard = false;
  std::string device = "cpu";
  CLI::Option* impl = nullptr;  // --impl, to tell a given row from the default
};

// Adds the shared flags; defaults come from `flags` as given.
void add_train_flags(CLI::App& sub, TrainFlags& flags, bool with_activation);
// --list-algorithms and --list-activations: print the registries (GEMM, activations) and exit.
void add_list_flags(CLI::App& sub);
// Turns the parsed strings into options (throws UsageError on a bad value).
void finish_train_flags(TrainFlags& flags);

}  // namespace nnperf::app
