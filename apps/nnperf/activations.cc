// `nnperf activations`: the activation-timing study. Trains usra-survey's MLP (MLP.py) once per
// activation, then writes summary.csv, plots and report.md. `--analyze DIR` rebuilds the analysis
// from saved runs only.
#include <fmt/format.h>

#include <algorithm>

#include "command.h"
#include "nnperf/core/error.h"
#include "nnperf/io/run_info.h"
#include "nnperf/runs/activation_study.h"
#include "flags.h"
#include "train_flags.h"

namespace nnperf::app {
namespace {

struct Flags {
  TrainFlags train;
  std::string activations;
  std::string out_dir;
  std::string analyze;
  bool quick = false;
};

int run_activations(Flags& f, CLI::App& sub) {
  if (!f.analyze.empty()) {
    const auto report = analyse_activation_study(f.analyze, command_line());
    fmt::print("report: {}\n", report.string());
    return 0;
  }
  if (f.quick) {
    auto unset = [&](const char* flag) { return sub.count(flag) == 0; };
    if (unset("--epochs")) f.train.run.epochs = QuickStudy::kEpochs;
    if (unset("--warmup-epochs")) f.train.run.warmup_epochs = QuickStudy::kWarmupEpochs;
    if (unset("--limit-train")) f.train.run.data.limit_train = QuickStudy::kTrain;
    if (unset("--val-split")) f.train.run.data.val_split = QuickStudy::kVal;
    if (unset("--limit-test")) f.train.run.data.limit_test = QuickStudy::kTest;
  }
  // The study's own default of warm-up epochs, not typed: a short --epochs is what to name.
  const TrainRunOptions& run = f.train.run;
  if (sub.count("--warmup-epochs") == 0 && run.warmup_epochs >= run.epochs) {
    throw UsageError(fmt::format(
        "--epochs {}: the study times only the epochs after the warm-up, --warmup-epochs {} ({}); "
        "give more epochs than that or a smaller --warmup-epochs",
        run.epochs, run.warmup_epochs, f.quick ? "--quick's" : "its default"));
  }
  finish_train_flags(f.train);
  ActivationStudyOptions o;
  o.base = f.train.run;
  o.base.command_line = command_line();
  o.quick = f.quick;
  if (!f.activations.empty()) o.activations = split_list(f.activations);
  o.out_dir = f.out_dir;  // empty: a new results/activations_<timestamp>
  const auto report = run_activation_study(o);
  fmt::print("report: {}\n", report.string());
  return 0;
}

const Registrar reg{Command{
    "activations", 20, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "The activation-timing study: train the MLP once per activation, time every activation "
          "layer, report");
      auto f = std::make_shared<Flags>();
      // The recipe of usra-survey's MLP.py.
      f->train.hidden = "512,256,128,64";
      f->train.run.epochs = 60;
      f->train.run.warmup_epochs = 10;
      f->train.run.optimizer.name = "adam";
      f->train.run.optimizer.lr = 1e-3;
      f->train.run.batch_size = 64;
      f->train.progress = "lines";
      sub.add_option("--activations", f->activations,
                     "Comma-separated subset (default: all eight: ReLU, GELU, Sigmoid, Tanh, ELU, "
                     "LeakyReLU, SiLU, Mish)")
          ->check(list_items())
          ->check(known_activation(/*list=*/true));
      sub.add_option(
          "--out-dir", f->out_dir,
          "Output folder (default a new results/activations_<timestamp>); must be new or "
          "empty");
      sub.add_flag("--overwrite", f->train.run.overwrite,
                   "Replace an earlier study's --out-dir whole (only a folder nnperf wrote)");
      sub.add_flag("--quick", f->quick,
                   "A few epochs on a subset of the data (about a minute on 2 cores)");
      sub.add_option(
          "--analyze", f->analyze,
          "Only rebuild summary.csv, plots and report.md from the runs saved in this folder");
      add_list_flags(sub);
      add_train_flags(sub, f->train, /*with_activation=*/false);
      CLI::App* self = &sub;
      return [f, self] { return run_activations(*f, *self); };
    }}};

}  // namespace
}  // namespace nnperf::app
