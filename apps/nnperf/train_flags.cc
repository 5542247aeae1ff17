#include "train_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <string_view>

#include "flags.h"
#include "nnperf/core/error.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf::app {

void add_train_flags(CLI::App& sub, TrainFlags& f, bool with_activation) {
  TrainRunOptions& r = f.run;
  // `train` takes every model (and the CNNs' data formats); the activation study, which trains
  // only the MLP, is the command without --activation.
  sub.add_option("--data", f.data_dir,
                 with_activation
                     ? "Data folder: MNIST-format IDX (raw or .gz); for CNNs also CIFAR binary or "
                       "an image folder (train/, val/); default $NNPERF_DATA or "
                       "/usr/share/datasets/fashion-mnist"
                     : "Data folder: MNIST-format IDX (raw or .gz); default $NNPERF_DATA or "
                       "/usr/share/datasets/fashion-mnist");
  sub.add_flag("--synthetic", r.data.synthetic,
               "Use deterministic synthetic data (dry runs; the MLP's is 28x28)");
  sub.add_option("--hidden", f.hidden, "Hidden layer widths, comma-separated")
      ->check(integer_list_in(1, kMaxWidth))
      ->capture_default_str();
  if (with_activation)
    sub.add_option("--activation", r.activation,
                   "Activation (ReLU, GELU, Sigmoid, Tanh, ELU, LeakyReLU, SiLU, Mish)")
        ->check(known_activation())
        ->capture_default_str();
  sub.add_option("--optimizer", r.optimizer.name, "sgd (with momentum) or adam")
      ->check(known_optimizer())
      ->capture_default_str();
  // Rates and decays multiply float32 values: above float's largest they would be infinite.
  sub.add_option("--lr", r.optimizer.lr, "Learning rate")
      ->check(float_from(0, /*lo_open=*/true))
      ->capture_default_str();
  sub.add_option("--momentum", r.optimizer.momentum, "SGD momentum")
      ->check(number_in(0, 1))
      ->capture_default_str();
  sub.add_option("--weight-decay", r.optimizer.weight_decay, "L2 weight decay")
      ->check(float_from(0))
      ->capture_default_str();
  sub.add_option("--label-smoothing", r.label_smoothing, "Label smoothing in [0,1)")
      ->check(number_in(0, 1, false, /*hi_open=*/true))
      ->capture_default_str();
  sub.add_option("--batch-size", r.batch_size, "Training mini-batch size")
      ->check(integer_in(1, kMaxBatch))
      ->capture_default_str();
  sub.add_option("--epochs", r.epochs, "Epochs")
      ->check(integer_in(1, 1000000))
      ->capture_default_str();
  sub.add_option("--warmup-epochs", r.warmup_epochs,
                 "Epochs trained but not measured (left out of MEASURED_SEC and, for the MLP, "
                 "of the per-layer timing)")
      ->check(integer_in(0, 1000000))
      ->capture_default_str();
  sub.add_option("--val-split", r.data.val_split,
                 "Validation samples held out of the training set (0 = none)")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  sub.add_option("--limit-train", r.data.limit_train,
                 "Use only this many training samples (0 = all)")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  sub.add_option("--limit-test", r.data.limit_test, "Use only this many test samples (0 = all)")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  sub.add_option("--seed", r.seed, "Random seed (data split, shuffling, initialisation)")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  sub.add_option("--threads", r.threads, "Threads for OpenMP and OpenBLAS (0 = all logical CPUs)")
      ->check(threads_count())
      ->capture_default_str();
  f.impl = sub.add_option("--impl", r.gemm,
                          "GEMM algorithm: " + gemm_algorithm_names(Device::kCpu) +
                              " (default blocked), or with --device cuda: " +
                              gemm_algorithm_names(Device::kCuda) + " (default cublas)")
               ->check(known_gemm());
  sub.add_option(
         "--device", f.device,
         "cpu, or cuda: train on the GPU (the MLP's activation layers timed by CUDA events)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  sub.add_option("--init", r.init, "Weight initialisation: pytorch (nn.Linear default) or he")
      ->capture_default_str();
  sub.add_option("--progress", f.progress, "auto | bar | lines | quiet")->capture_default_str();
  sub.add_flag("--no-tensorboard", f.no_tensorboard, "Do not write TensorBoard event files");
}

void add_list_flags(CLI::App& sub) {
  sub.add_flag_callback(
      "--list-algorithms",
      [] {
        fmt::print("GEMM algorithms (--impl):\n");
        for (const auto& a : gemm_algorithms()) {
          fmt::print("  {:<10} {:<5} {}\n", a.name, a.device == Device::kCpu ? "cpu" : "cuda",
                     a.description);
        }
        throw CLI::Success();
      },
      "List the GEMM algorithms and exit");
  sub.add_flag_callback(
      "--list-activations",
      [] {
        fmt::print("activations (--activation):\n");
        std::size_t name_w = 0, formula_w = 0;
        for (const auto& a : activation_kernels()) {
          name_w = std::max(name_w, std::string_view(a.name).size());
          formula_w = std::max(formula_w, std::string_view(a.formula).size());
        }
        for (const auto& a : activation_kernels()) {
          fmt::print("  {:<{}}  {:<{}}  {:>2} FLOP/element\n", a.name, name_w, a.formula, formula_w,
                     a.flops_per_element);
        }
        throw CLI::Success();
      },
      "List the activations and exit");
}

void finish_train_flags(TrainFlags& f) {
  if (f.run.data.synthetic && !f.data_dir.empty()) {
    throw UsageError(
        fmt::format("--data {} --synthetic: give one of them (real data or synthetic)", f.data_dir));
  }
  f.run.hidden = parse_int_list(f.hidden, "--hidden");
  f.run.data.dir = f.data_dir;
  f.run.progress = parse_progress_mode(f.progress);
  f.run.tensorboard = !f.no_tensorboard;
  f.run.device = f.device == "cuda" ? Device::kCuda : Device::kCpu;
  if (f.run.device == Device::kCuda && f.impl != nullptr && f.impl->count() == 0) {
    f.run.gemm = "cublas";
  }
}

}  // namespace nnperf::app
