// `nnperf train`: a classifier MLP on MNIST-format data with the outputs of usra-survey's MLP.py
// (--model mlp), any registered CNN for epochs on image data with nn-perf train.py's recipe and
// checkpoints, or any model for a fixed number of steps (--iters, cloudml-project1's
// run_train.py). The last line is run_train.py's summary MEASURED_SEC=... IMGS_PER_SEC=...
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <limits>

#include "command.h"
#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/core/text.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/cudnn_batchnorm.h"
#include "nnperf/models/registry.h"
#include "nnperf/runs/cnn_train.h"
#include "nnperf/runs/train_driver.h"
#include "nnperf/train/cuda_launch.h"
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
  // CNN epoch training (nn-perf's train.py).
  int64_t warmup_steps = 500;
  int workers = 0, prefetch_factor = 2, save_every = 0, profile_iter = 1;
  bool no_augment = false, profile_one_step = false, no_nesterov = false, deterministic = false;
  bool engines = false;
  std::string batchnorm = "own", launch = kDefaultCudaLaunch;
  int grad_accum_steps = 1;
  std::string resume, init_weights, on_bad_image = "fail", step_log;
};

// Flags the --iters driver does not read: refused rather than silently ignored (epoch training's
// with their own message).
void refuse_flags_the_driver_ignores(const CLI::App& sub) {
  // Epoch training's flags have no meaning here: refused rather than silently ignored.
  for (const char* flag : {"--out-dir", "--epochs", "--data", "--val-split", "--overwrite",
                           "--resume", "--save-every", "--profile-one-step"}) {
    if (sub.count(flag) > 0) {
      throw UsageError(fmt::format(
          "{}: applies to epoch training, not the --iters driver (which appends a row to "
          "<--log-dir>/metrics.csv)",
          flag));
    }
  }
  // Nor are the flags it does not read (the MLP's shape, data limits, the CNN recipe's extras):
  // it reads these only.
  static constexpr std::array kDriverFlags{"--model",
                                           "--iters",
                                           "--warmup-iters",
                                           "--input-size",
                                           "--in-channels",
                                           "--num-classes",
                                           "--algorithm",
                                           "--label",
                                           "--grad-accum-steps",
                                           "--deterministic",
                                           "--engines",
                                           "--batchnorm",
                                           "--launch",
                                           "--log-dir",
                                           "--synthetic",
                                           "--optimizer",
                                           "--lr",
                                           "--momentum",
                                           "--weight-decay",
                                           "--label-smoothing",
                                           "--batch-size",
                                           "--seed",
                                           "--threads",
                                           "--device"};
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() == 0) continue;
    const std::string name = opt->get_name();
    if (std::find(kDriverFlags.begin(), kDriverFlags.end(), name) == kDriverFlags.end()) {
      throw UsageError(fmt::format("{}: not used by the --iters driver, which reads only {}", name,
                                   fmt::join(kDriverFlags, ", ")));
    }
  }
}

// --iters: exactly --warmup-iters + --iters training steps on synthetic data, any registered
// model; one row appended to <log-dir>/metrics.csv.
int run_driver(Flags& f, const CLI::App& sub) {
  if (!f.train.run.data.synthetic) {
    throw UsageError(
        "--iters: the fixed-iteration driver trains on --synthetic data (give --synthetic)");
  }
  refuse_flags_the_driver_ignores(sub);
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
  d.grad_accum_steps = f.grad_accum_steps;
  d.deterministic = f.deterministic;
  d.find_engines = f.engines;
  d.batchnorm = f.batchnorm;
  d.launch = f.launch;
  d.threads = f.train.run.threads;
  d.device = f.train.device == "cuda" ? Device::kCuda : Device::kCpu;
  d.label_smoothing = f.train.run.label_smoothing;
  // The flags given; the others keep TrainDriverOptions' defaults (run_train.py's).
  const auto given = [&](const char* flag) { return sub.count(flag) > 0; };
  if (given("--optimizer")) d.optimizer.name = f.train.run.optimizer.name;
  if (given("--lr")) d.optimizer.lr = f.train.run.optimizer.lr;
  if (given("--momentum")) d.optimizer.momentum = f.train.run.optimizer.momentum;
  if (given("--weight-decay")) d.optimizer.weight_decay = f.train.run.optimizer.weight_decay;
  if (given("--batch-size")) d.batch_size = f.train.run.batch_size;
  if (given("--seed")) d.seed = f.train.run.seed;
  d.command_line = command_line();
  const TrainDriverResult r = run_train_driver(d);
  fmt::print("loss after {}: {:.9g}\n", count_noun(d.warmup_iters + d.iters, "step"), r.final_loss);
  if (r.metrics_written_whole) {
    fmt::print("wrote {} whole from metrics_records.json ({} rows, this run's last)\n",
               r.metrics_csv.string(), r.metrics_rows);
  } else {
    fmt::print("appended a row to {}\n", r.metrics_csv.string());
  }
  if (d.device == Device::kCuda) {
    fmt::print("launch: {} ({} of {} steps as one CUDA graph each)\n", r.launch, r.graph_launches,
               d.warmup_iters + d.iters);
  }
  fmt::print("MEASURED_SEC={:.6f} IMGS_PER_SEC={:.2f} BATCH={} ARCH={} BACKEND={}\n",
             r.measured_sec, r.imgs_per_sec, d.batch_size, f.model, device_name(d.device));
  return 0;
}

// Flags that configure only the MLP: refused for a CNN rather than silently ignored.
void refuse_mlp_flags(const CLI::App& sub, const std::string& model) {
  for (const char* flag : {"--hidden", "--activation", "--impl", "--init", "--val-split"}) {
    if (sub.count(flag) > 0) {
      throw UsageError(fmt::format("{}: applies to --model mlp only, not {}", flag, model));
    }
  }
}

// Flags of CNN epoch training: refused for the MLP rather than silently ignored.
void refuse_cnn_flags(const CLI::App& sub) {
  for (const char* flag :
       {"--workers", "--prefetch-factor", "--no-augment", "--no-nesterov", "--save-every",
        "--resume", "--init-weights", "--profile-one-step", "--profile-iter", "--on-bad-image",
        "--warmup", "--algorithm", "--step-log", "--engines", "--batchnorm", "--launch"}) {
    if (sub.count(flag) > 0) {
      throw UsageError(fmt::format("{}: applies to the CNNs, not --model mlp", flag));
    }
  }
}

// The --iters driver's own flags (and, for the MLP, the CNNs' shape flags): refused in epoch
// training rather than silently ignored.
void refuse_driver_flags(const CLI::App& sub, bool mlp, bool profile_one_step) {
  const char* driver = "applies to the --iters driver, not to epoch training (its outputs go to --out-dir)";
  const char* cnn = "applies to the CNNs, not --model mlp (the MLP's inputs are the data's 28x28 images)";
  std::vector<std::pair<const char*, const char*>> flags{
      {"--label", driver}, {"--grad-accum-steps", driver}, {"--log-dir", driver}};
  if (!profile_one_step) {
    flags.emplace_back("--warmup-iters", "applies to the --iters driver and --profile-one-step, not to epoch training");
  }
  if (mlp) {
    for (const char* f : {"--input-size", "--in-channels", "--num-classes"}) flags.emplace_back(f, cnn);
    flags.emplace_back("--deterministic", "applies to the CNNs (the MLP's kernels give the same bits on every run)");
  }
  for (const auto& [flag, why] : flags) {
    if (sub.count(flag) > 0) throw UsageError(fmt::format("{}: {}", flag, why));
  }
}

OnBadImage parse_on_bad_image(const std::string& s) {
  if (s == "fail") return OnBadImage::kFail;
  if (s == "skip") return OnBadImage::kSkip;
  throw UsageError(fmt::format("--on-bad-image '{}': expected skip or fail", s));
}

// A registered CNN for epochs (nn-perf train.py): its recipe's defaults where a flag was not given.
int run_cnn(Flags& f, const CLI::App& sub) {
  refuse_mlp_flags(sub, f.model);
  refuse_driver_flags(sub, /*mlp=*/false, f.profile_one_step);
  finish_train_flags(f.train);
  const TrainRunOptions& t = f.train.run;
  const auto given = [&](const char* flag) { return sub.count(flag) > 0; };
  CnnTrainOptions o;
  o.model = f.model;
  o.data.dir = t.data.dir;
  o.data.synthetic = t.data.synthetic;
  o.data.synthetic_channels = f.in_channels;
  o.data.synthetic_classes = f.num_classes;
  o.data.input_size = f.input_size;
  o.data.limit_train = t.data.limit_train;
  o.data.limit_test = t.data.limit_test;
  o.data.on_bad_image = parse_on_bad_image(f.on_bad_image);
  o.in_channels = f.in_channels;
  o.num_classes = f.num_classes;
  if (given("--epochs")) o.epochs = t.epochs;
  o.warmup_epochs = t.warmup_epochs;
  if (given("--batch-size")) o.batch_size = t.batch_size;
  if (given("--optimizer")) o.optimizer.name = t.optimizer.name;
  if (given("--lr")) o.optimizer.lr = t.optimizer.lr;
  if (given("--momentum")) o.optimizer.momentum = t.optimizer.momentum;
  if (given("--weight-decay")) o.optimizer.weight_decay = t.optimizer.weight_decay;
  o.optimizer.nesterov = !f.no_nesterov;
  o.warmup_steps = f.warmup_steps;
  o.label_smoothing = t.label_smoothing;
  if (given("--seed")) o.seed = t.seed;
  o.data.seed = o.seed;
  o.threads = t.threads;
  o.workers = f.workers;
  o.prefetch_factor = f.prefetch_factor;
  o.augment = !f.no_augment;
  o.algorithm = f.algorithm;
  o.device = f.train.device == "cuda" ? Device::kCuda : Device::kCpu;
  o.deterministic = f.deterministic;
  o.find_engines = f.engines;
  o.batchnorm = f.batchnorm;
  o.launch = f.launch;
  o.save_every = f.save_every;
  o.resume = f.resume;
  o.init_weights = f.init_weights;
  o.step_log = f.step_log;
  o.out_dir = f.out_dir;
  o.overwrite = t.overwrite;
  o.tensorboard = t.tensorboard;
  o.progress = t.progress;
  o.profile_one_step = f.profile_one_step;
  o.warmup_iters = given("--warmup-iters") ? f.warmup_iters : 20;
  o.profile_iter = f.profile_iter;
  o.command_line = command_line();
  const CnnTrainResult r = run_cnn_training(o);
  fmt::print("outputs: {}\n", r.out_dir.string());
  if (o.profile_one_step) return 0;
  fmt::print("best test accuracy {:.4f} (epoch {}); the step waited for data {:.1f}% of the time\n",
             r.best_acc, r.best_epoch, 100.0 * r.data_wait_fraction);
  fmt::print("MEASURED_SEC={:.6f} IMGS_PER_SEC={:.2f} BATCH={} ARCH={} BACKEND={}\n",
             r.measured_sec, r.imgs_per_sec, o.batch_size, f.model, device_name(o.device));
  return 0;
}

int run_train(Flags& f, const CLI::App& sub) {
  if (f.engines && f.train.device != "cuda")
    throw UsageError("--engines: applies to --device cuda (cuDNN's graph-API engines)");
  f.batchnorm = cudnn::checked_batchnorm_algorithm("--batchnorm", f.batchnorm);  // its spelling
  if (sub.count("--launch") > 0 && f.train.device != "cuda") {
    throw UsageError("--launch: applies to --device cuda (the CPU has no kernel launches)");
  }
  if (f.batchnorm != "own" && f.train.device != "cuda") {
    throw UsageError(fmt::format(
        "--batchnorm {}: applies to --device cuda (the CPU runs the project's BatchNorm)",
        f.batchnorm));
  }
  if (f.iters > 0) return run_driver(f, sub);
  if (find_model(f.model).name != std::string("mlp")) return run_cnn(f, sub);
  refuse_cnn_flags(sub);
  refuse_driver_flags(sub, /*mlp=*/true, false);
  finish_train_flags(f.train);
  TrainRunOptions& o = f.train.run;
  o.out_dir = f.out_dir;  // empty: run_training makes a new runs/mlp_<timestamp>
  o.command_line = command_line();
  const TrainRunResult r = run_training(o);
  fmt::print("outputs: {}\n", r.out_dir.string());
  fmt::print("MEASURED_SEC={:.6f} IMGS_PER_SEC={:.2f} BATCH={} ARCH={} BACKEND={}\n",
             r.measured_sec, r.imgs_per_sec, o.batch_size, f.model,
             o.device == Device::kCuda ? "cuda" : "cpu");
  return 0;
}

// The flags whose default depends on what is trained: the help shows the MLP's, the CNN trainer's
// and the driver's, read from their option structs (so it cannot drift from the code).
void describe_mode_defaults(CLI::App& sub, const TrainRunOptions& mlp) {
  const CnnTrainOptions cnn;
  const TrainDriverOptions drv;
  const auto set = [&](const char* flag, const std::string& defaults) {
    CLI::Option* o = sub.get_option(flag);
    o->default_str("");
    o->description(o->get_description() + " (default: " + defaults + ")");
  };
  const auto three = [&](const auto& m, const auto& c, const auto& d) {
    return fmt::format("MLP {}, CNNs {}, --iters {}", m, c, d);
  };
  set("--batch-size", three(mlp.batch_size, cnn.batch_size, drv.batch_size));
  set("--optimizer", three(mlp.optimizer.name, cnn.optimizer.name + (cnn.optimizer.nesterov ? " (Nesterov)" : ""),
                           drv.optimizer.name));
  set("--lr", three(mlp.optimizer.lr, cnn.optimizer.lr, drv.optimizer.lr));
  set("--momentum", three(mlp.optimizer.momentum, cnn.optimizer.momentum, drv.optimizer.momentum));
  set("--weight-decay", three(mlp.optimizer.weight_decay, cnn.optimizer.weight_decay, drv.optimizer.weight_decay));
  set("--seed", three(mlp.seed, cnn.seed, drv.seed));
  set("--epochs", fmt::format("MLP {}, CNNs {}", mlp.epochs, cnn.epochs));
}

// The shape flags and the fixed-iteration driver's (cloudml-project1's run_train.py).
void add_driver_flags(CLI::App& sub, Flags& f) {
  sub.add_option(
         "--iters", f.iters,
         "Fixed-iteration driver: train exactly this many measured steps on --synthetic data "
         "(0 = epoch training)")
      ->check(integer_in(0, 100000000));
  sub.add_option("--warmup-iters", f.warmup_iters,
                 "Unmeasured steps first: the driver's (default 5) and --profile-one-step's "
                 "(default 20)")
      ->check(integer_in(0, 10000));
  sub.add_option("--input-size", f.input_size,
                 "Input height = width (driver: default the model's; image folders: the crop, "
                 "default 224; synthetic: default 32)")
      ->check(integer_in(1, kMaxImageSide));
  sub.add_option("--in-channels", f.in_channels,
                 "Input channels (default: the data's, or the model's for the driver)")
      ->check(integer_in(1, 4096));
  sub.add_option("--num-classes", f.num_classes,
                 "Classes (default: the data's, or the model's for the driver)")
      ->check(integer_in(2, 1000000));
  sub.add_option("--algorithm", f.algorithm,
                 "CNNs: convolution algorithm, a name, guess or find; with --device cuda also per "
                 "pass, e.g. fwd=implicit_gemm,bwd_data=algo_1,bwd_weights=algo_1 (cuDNN's names)")
      ->capture_default_str();
  sub.add_option("--label", f.label, "Driver: the label column of metrics.csv");
  sub.add_option("--grad-accum-steps", f.grad_accum_steps,
                 "Driver: micro-batches (of --batch-size) per optimizer step")
      ->check(integer_in(1, 1000000))
      ->capture_default_str();
  sub.add_flag("--deterministic", f.deterministic,
               "CNNs: refuse timing-dependent choices (--algorithm find); with --device cuda only "
               "algorithms cuDNN marks deterministic; recorded in metrics.csv or run.json");
  sub.add_flag("--engines", f.engines,
               "CNNs with --device cuda: the passes that use find also rank cuDNN's graph-API "
               "engine configurations (FP32, no TF32)");
  sub.add_option("--batchnorm", f.batchnorm,
                 "CNNs with --device cuda: BatchNorm's algorithm, own (nnperf's kernels, float64 "
                 "statistics) or cudnn (cuDNN's, as PyTorch runs BatchNorm2d)")
      ->capture_default_str();
  sub.add_option(
         "--launch", f.launch,
         "CNNs with --device cuda: graph (each full-batch step's forward, loss, backward and "
         "update captured once as a CUDA graph and launched in one call, a --profile-one-step "
         "step and evaluation too; a short last batch stays eager) or eager (each kernel "
         "queued as the step runs)")
      ->check(
          CLI::IsMember(std::vector<std::string>(kCudaLaunchNames.begin(), kCudaLaunchNames.end())))
      ->capture_default_str();
  sub.add_option("--log-dir", f.log_dir, "Driver: metrics.csv goes here (appended), with its record metrics_records.json")
      ->capture_default_str();
}

// CNN epoch training (nn-perf's train.py): recipe, loader, checkpoints, one-step profile.
void add_cnn_flags(CLI::App& sub, Flags& f) {
  sub.add_option("--warmup", f.warmup_steps,
                 "CNNs: optimizer steps of linear warm-up before the cosine decay")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  sub.add_option("--workers", f.workers, "CNNs: loader threads making batches ahead (0: none)")
      ->check(integer_in(0, 256))
      ->capture_default_str();
  sub.add_option("--prefetch-factor", f.prefetch_factor, "CNNs: batches ready per worker")
      ->check(integer_in(1, 64))
      ->capture_default_str();
  sub.add_flag("--no-augment", f.no_augment,
               "CNNs: no random crop (padding 4) and horizontal flip");
  sub.add_flag("--no-nesterov", f.no_nesterov, "CNNs: plain SGD momentum instead of Nesterov");
  sub.add_option("--save-every", f.save_every,
                 "CNNs: an epoch_NNN checkpoint every N epochs (0: none)")
      ->check(integer_in(0, 1000000));
  sub.add_option("--resume", f.resume, "CNNs: continue from a _best or epoch_NNN checkpoint");
  sub.add_option("--init-weights", f.init_weights,
                 "CNNs: start from the weights (and BatchNorm statistics) of a final_weights file "
                 "or checkpoint of the same model instead of the initialiser");
  sub.add_option("--step-log", f.step_log,
                 "CNNs: append step,loss,lr of every training step to this CSV (trajectory "
                 "comparisons with bench/peers/train_torch.py --step-log)");
  sub.add_flag("--profile-one-step", f.profile_one_step,
               "CNNs: after --warmup-iters (default 20) steps, record one step per layer and "
               "phase (Chrome trace + CSV) and stop");
  sub.add_option("--profile-iter", f.profile_iter,
                 "CNNs: which step after the warm-up is recorded (1: the first)")
      ->check(integer_in(1, 10000))
      ->capture_default_str();
  sub.add_option("--on-bad-image", f.on_bad_image,
                 "Image folders: skip or fail on an image that cannot be decoded")
      ->capture_default_str();
}

const Registrar reg{Command{
    "train", 10, [](CLI::App& sub) -> std::function<int()> {
      sub.description(
          "Train a model: the MLP on MNIST-format data, any CNN of profile --list-models for "
          "epochs on IDX, CIFAR binary or image-folder data (SGD nesterov, warm-up + cosine, "
          "checkpoints), or any model for exactly --iters steps; writes metrics CSVs, "
          "final_results.json, TensorBoard logs. The defaults of the MLP, of the CNN trainer "
          "(nn-perf train.py's) and of the --iters driver (run_train.py's) differ: the flags "
          "whose defaults differ list each mode's");
      auto f = std::make_shared<Flags>();
      f->train.run.epochs = 5;
      sub.add_option("--model,--arch", f->model,
                     "Model to train: mlp or any of profile --list-models")
          ->check(known_model())
          ->capture_default_str();
      add_driver_flags(sub, *f);
      sub.add_option(
          "--out-dir", f->out_dir,
          "Output folder (default a new runs/<model>_<timestamp>); must be new or empty");
      add_cnn_flags(sub, *f);
      sub.add_flag("--overwrite", f->train.run.overwrite,
                   "Replace an earlier run's --out-dir whole (only a folder nnperf wrote)");
      add_list_flags(sub);
      add_train_flags(sub, f->train, /*with_activation=*/true);
      describe_mode_defaults(sub, f->train.run);
      return [f, &sub] { return run_train(*f, sub); };
    }}};

}  // namespace
}  // namespace nnperf::app
