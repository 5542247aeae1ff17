// The fixed-iteration training driver (cloudml-project1's run_train.py): a registered CNN (or the
// MLP) trained for exactly --warmup-iters + --iters steps on synthetic data, the measured time
// excluding the warm-up steps, the `MEASURED_SEC=... IMGS_PER_SEC=...` line, and one row appended
// to <log-dir>/metrics.csv with run_train.py's 22 columns in its order (header written once; a
// file with another header is refused, never rewritten; rows written whole), rendered from the
// run's entry in <log-dir>/metrics_records.json (runs/train_driver_records.h).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/kernels/gemm/gemm.h"  // Device
#include "nnperf/train/cuda_launch.h"
#include "nnperf/train/optimizer.h"

namespace nnperf {

struct TrainDriverOptions {
  std::string model;         // any registry model
  int64_t batch_size = 128;  // run_train.py's defaults
  int warmup_iters = 5;
  int iters = 50;
  int64_t input_size = 0;      // H = W; 0 = the model's default
  int64_t in_channels = 0;     // 0 = the model's default
  int64_t num_classes = 0;     // 0 = the model's default
  OptimizerOptions optimizer{"sgd", 0.1, 0.9, 1e-4, false};  // run_train.py's SGD
  float label_smoothing = 0.0f;
  std::string algorithm =
      "guess";  // conv algorithm, as profile's --algorithm (find = cudnn_benchmark)
  int threads = 0;
  // kCuda: the steps run on the GPU (train/cuda_cnn.h): cuDNN's algorithms (--algorithm as
  // parse_cuda_conv_choice takes it), one micro-batch per step; --deterministic keeps to the
  // algorithms cuDNN marks deterministic.
  Device device = Device::kCpu;
  uint64_t seed = 1234;
  int grad_accum_steps = 1;  // micro-batches per optimizer step (each one --batch-size images)
  // Refuses choices that depend on timing (--algorithm find); nnperf's CPU kernels give the same
  // bits on every run at a fixed thread count (tested), so nothing else changes on the CPU; on the
  // GPU, cuDNN's non-deterministic backward algorithms are left out.
  bool deterministic = false;
  bool find_engines = false;  // kCuda: find ranks cuDNN's graph-API engines too (CudaConvChoice)
  std::string batchnorm = "own";  // kCuda: BatchNorm's algorithm (cudnn::batchnorm_algorithms)
  std::string launch = kDefaultCudaLaunch;  // kCuda: "graph" or "eager" (CudaTrainOptions::launch)
  std::string label;
  std::filesystem::path log_dir = "logs";
  std::string command_line;
};

struct TrainDriverResult {
  double measured_sec = 0;  // the --iters steps only
  double imgs_per_sec = 0;
  int64_t images_processed = 0;
  double final_loss = 0;
  std::filesystem::path metrics_csv;
  // Whether metrics.csv was written whole from metrics_records.json (missing, or without whole
  // rows) rather than appended to; how many rows it has then.
  bool metrics_written_whole = false;
  int64_t metrics_rows = 0;
  // kCuda: CudaCnnTrainer::launch() and the steps launched as its captured graph; "" on the CPU.
  std::string launch;
  int64_t graph_launches = 0;
};

// The 22 columns of run_train.py's logs/metrics.csv, in its order.
const std::vector<std::string>& train_metrics_header();

TrainDriverResult run_train_driver(const TrainDriverOptions& options);

}  // namespace nnperf
