// `nnperf train --model mlp`: trains a classifier MLP on MNIST-format data and writes the
// outputs of usra-survey's MLP.py; the last line is cloudml-project1's run_train.py summary
// MEASURED_SEC=... IMGS_PER_SEC=...
#include <fmt/format.h>

#include "command.h"
#include "nnperf/core/error.h"
#include "nnperf/io/run_info.h"
#include "train_flags.h"

namespace nnperf::app {
namespace {

struct Flags {
  TrainFlags train;
  std::string model = "mlp";
  std::string out_dir;
};

int run_train(Flags& f) {
  if (f.model != "mlp") {
    throw UsageError(fmt::format(
        "--model '{}': expected mlp (the CNN models arrive with the profiler)", f.model));
  }
  finish_train_flags(f.train);
  TrainRunOptions& o = f.train.run;
  o.out_dir = f.out_dir;  // empty: run_training makes a new runs/mlp_<timestamp>
  o.command_line = command_line();
  const TrainRunResult r = run_training(o);
  fmt::print("outputs: {}\n", r.out_dir.string());
  fmt::print("MEASURED_SEC={:.6f} IMGS_PER_SEC={:.2f} BATCH={} ARCH={} BACKEND=cpu\n",
             r.measured_sec, r.imgs_per_sec, o.batch_size, f.model);
  return 0;
}

const Registrar reg{Command{
    "train", 10, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Train a model (mlp) on MNIST-format data; writes metrics CSVs, final_results.json, "
          "TensorBoard logs");
      auto f = std::make_shared<Flags>();
      f->train.run.epochs = 5;
      sub.add_option("--model", f->model, "Model to train")->capture_default_str();
      sub.add_option("--out-dir", f->out_dir,
                     "Output folder (default a new runs/mlp_<timestamp>); must be new or empty");
      sub.add_flag("--overwrite", f->train.run.overwrite,
                   "Replace an earlier run's --out-dir whole (only a folder nnperf wrote)");
      add_list_flags(sub);
  add_train_flags(sub, f->train, /*with_activation=*/true);
      return [f] { return run_train(*f); };
    }}};

}  // namespace
}  // namespace nnperf::app
