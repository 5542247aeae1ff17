// The `train` job for classifier MLPs on MNIST-format data: data loading and the validation
// split, the model, the trainer, per-activation-layer forward timing in the timed epochs, and
// every output (training_metrics.csv, activation_timings.csv, final_results.json, TensorBoard
// events, run.json, and train_records.json, rewritten after every epoch). Used by `nnperf train` and, once per activation, by the activation study.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/runs/progress.h"
#include "nnperf/train/optimizer.h"

namespace nnperf {

struct DataOptions {
  std::filesystem::path dir;  // MNIST-format IDX folder; empty = default_data_dir()
  bool synthetic = false;     // deterministic synthetic 1x28x28 data instead of files
  int64_t synthetic_train = 6000, synthetic_test = 1000;
  int64_t val_split = 6000;  // held out of the training set (seeded random split)
  int64_t limit_train = 0;   // > 0: use only this many training samples (after the split)
  int64_t limit_test = 0;    // > 0: use only this many test samples
};

struct TrainRunOptions {
  std::vector<int64_t> hidden = {128, 128, 128};
  std::string activation = "ReLU";
  OptimizerOptions optimizer;
  int64_t batch_size = 64;
  int64_t eval_batch_size = 1000;
  int epochs = 5;
  int warmup_epochs = 0;  // epochs run but not timed per layer
  uint64_t seed = 1;
  int threads = 0;  // 0 = all logical CPUs
  std::string gemm = "blocked";  // a row of `device`
  // kCuda: train on the GPU (train/cuda_mlp) with the cuda or cublas row; the activation layers'
  // forward passes are timed by CUDA events, resolved once per epoch.
  Device device = Device::kCpu;
  std::string init = "pytorch";  // pytorch | he
  float label_smoothing = 0.0f;
  DataOptions data;
  std::filesystem::path out_dir;  // empty: a new runs/mlp_<timestamp> folder
  bool overwrite = false;          // replace an earlier run's out_dir whole
  bool tensorboard = true;
  bool time_layers = true;
  Progress::Mode progress = Progress::Mode::kAuto;
  std::string command_line;  // recorded in run.json
};

// Refuses bad options (one UsageError naming the flag) before anything is read or written: the
// initialisation, epochs, batch size, learning rate, optimizer, activation, GEMM row for the
// device, a usable CUDA device when asked for, and the memory the MLP needs.
void validate_training(const TrainRunOptions& options);

struct EpochRecord {
  int epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, val_loss = 0, val_acc = 0;
  bool timed = false;
  std::vector<double> layer_ms;  // mean ms per training forward pass, per activation layer
  double total_ms = 0;           // sum of layer_ms
  double train_sec = 0;          // training steps only
  double imgs_per_sec = 0;
};

struct TrainRunResult {
  std::vector<EpochRecord> epochs;
  double test_loss = 0, test_acc = 0;
  double measured_sec = 0;  // training steps of the epochs after --warmup-epochs only; data
                            // loading and evaluation excluded
  int64_t images_trained = 0;
  double imgs_per_sec = 0;
  std::vector<double> layer_ms;  // mean over the timed epochs
  double total_activation_ms = 0;
  double timer_empty_interval_ns = 0, timer_pair_cost_ns = 0;
  std::filesystem::path out_dir;
};

TrainRunResult run_training(const TrainRunOptions& options);

// Refuses (nnperf::Error naming `what`) an MLP of 784 inputs, these hidden widths and 10 classes
// whose weights, gradients, optimizer state (Adam: two moments) and activations at this batch
// size would not fit in the memory available, before anything is allocated.
// `copies` models built side by side (mlp-bench builds one per GEMM implementation).
void check_mlp_memory(const std::vector<int64_t>& hidden, int64_t batch, const std::string& what,
                      int64_t copies = 1);

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& flag);

}  // namespace nnperf
