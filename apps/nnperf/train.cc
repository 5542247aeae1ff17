// `nnperf train --model mlp`: trains a classifier MLP on MNIST-format data and writes the
// outputs of usra-survey's MLP.py; the last line is cloudml-project1's run_train.py summary
// MEASURED_SEC=... IMGS_PER_SEC=...
#include <fmt/format.h>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/io/run_info.h"
#include "nnperf/models/registry.h"
#include "nnperf/runs/train_driver.h"
#include "train_flags.h"

namespace nnperf::app {
namespace {

struct Flags {
  TrainFlags train;
  std::string model = "mlp";
  std::string out_dir;
  // The fixed-iteration driver (cloudml-project1's run_train.py): --iters N selects it.
  int iters = 0, warmup_iters = 5;
  int64_t input_size = 0, in_channels = 0, num_classes = 0;
  std::string algorithm = "guess", label, log_dir = "logs";
};

// --iters: exactly --warmup-iters + --iters training steps on synthetic data, any registered
// model; one row appended to <log-dir>/metrics.csv.
int run_driver(Flags& f, const CLI::App& sub) {
  if (!f.train.run.data.synthetic) {
    throw UsageError(
        "--iters: the fixed-iteration driver trains on --synthetic data (give --synthetic)");
  }
  TrainDriverOptions d;
  d.model = f.model;
  d.iters = f.iters;
  d.warmup_iters = f.warmup_iters;
  d.input_size = f.input_size;
  d.in_channels = f.in_channels;
  d.num_classes = f.num_classes;
  d.algorithm = f.algorithm;
  d.label = f.label;
  d.log_dir = f.log_dir;
  d.threads = f.train.run.threads;
  d.label_smoothing = f.train.run.label_smoothing;
  // run_train.py's defaults where the flag was not given: SGD, lr 0.1, momentum 0.9, weight decay
  // 1e-4, batch 128, seed 1234.
  const auto given = [&](const char* flag) { return sub.count(flag) > 0; };
  d.optimizer = f.train.run.optimizer;
  if (!given("--optimizer")) d.optimizer.name = "sgd";
  if (!given("--lr")) d.optimizer.lr = 0.1;
  if (!given("--weight-decay")) d.optimizer.weight_decay = 1e-4;
  d.batch_size = given("--batch-size") ? f.train.run.batch_size : 128;
  d.seed = given("--seed") ? f.train.run.seed : 1234;
  d.command_line = command_line();
  const TrainDriverResult r = run_train_driver(d);
  fmt::print("loss after {} steps: {:.4f}\nappended a row to {}\n", d.warmup_iters + d.iters,
             r.final_loss, r.metrics_csv.string());
  fmt::print("MEASURED_SEC={:.6f} IMGS_PER_SEC={:.2f} BATCH={} ARCH={} BACKEND=cpu\n",
             r.measured_sec, r.imgs_per_sec, d.batch_size, f.model);
  return 0;
}

int run_train(Flags& f, const CLI::App& sub) {
  if (f.iters > 0) return run_driver(f, sub);
  if (f.model != "mlp") {
    throw UsageError(
        fmt::format("--model '{}': epoch training takes mlp for now; other models train with the "
                    "fixed-iteration "
                    "driver (--synthetic --iters N)",
                    f.model));
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
      sub.add_option("--model,--arch", f->model,
                     "Model to train (any of profile --list-models with --iters)")
          ->capture_default_str();
      sub.add_option(
             "--iters", f->iters,
             "Fixed-iteration driver: train exactly this many measured steps on --synthetic data "
             "(0 = epoch training)")
          ->check(integer_in(0, 100000000));
      sub.add_option("--warmup-iters", f->warmup_iters, "Driver: unmeasured steps first")
          ->check(integer_in(0, 100000000))
          ->capture_default_str();
      sub.add_option("--input-size", f->input_size,
                     "Driver: input height = width (default: the model's)")
          ->check(integer_in(1, kMaxImageSide));
      sub.add_option("--in-channels", f->in_channels,
                     "Driver: input channels (default: the model's)")
          ->check(integer_in(1, 4096));
      sub.add_option("--num-classes", f->num_classes, "Driver: classes (default: the model's)")
          ->check(integer_in(2, 1000000));
      sub.add_option("--algorithm", f->algorithm,
                     "Driver: convolution algorithm, a name, guess or find")
          ->capture_default_str();
      sub.add_option("--label", f->label, "Driver: the label column of metrics.csv");
      sub.add_option("--log-dir", f->log_dir, "Driver: metrics.csv goes here (appended)")
          ->capture_default_str();
      sub.add_option("--out-dir", f->out_dir,
                     "Output folder (default a new runs/mlp_<timestamp>); must be new or empty");
      sub.add_flag("--overwrite", f->train.run.overwrite,
                   "Replace an earlier run's --out-dir whole (only a folder nnperf wrote)");
      add_list_flags(sub);
      add_train_flags(sub, f->train, /*with_activation=*/true);
      return [f, &sub] { return run_train(*f, sub); };
    }}};

}  // namespace
}  // namespace nnperf::app
