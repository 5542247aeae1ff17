// The convolution-algorithm profiler (after ai3-8CuDNN's): one model x one convolution algorithm x
// input sizes, staged (sanity / quick / full). Per size: the whole model timed without per-layer
// instrumentation, with power sampled over exactly the measured iterations (on the GPU, energy is
// read over at least 1 s of untimed passes after them); then the layers timed
// in separate passes (so hooks never distort the whole-model figure, ai3-8CuDNN's mistake); one
// measured instrumented inference exported as a Chrome/Perfetto trace. Rows are appended per size
// and flushed; --resume continues an interrupted sweep without duplicating or losing rows.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/kernels/gemm/gemm.h"  // Device
#include "nnperf/runs/progress.h"

namespace nnperf {

struct ProfileOptions {
  std::string model = "vgg16";
  std::string algorithm = "guess";  // a conv registry name (cuDNN's with --device cuda), guess, find
  // kCuda: the model runs on the GPU (nn/cuda_inference.h), convolutions by cuDNN, timed by CUDA
  // events, energy from NVML; inference only.
  Device device = Device::kCpu;
  // kCuda: each pass launched as one CUDA graph (--launch graph: the times are the GPU's, free of
  // the host's launch gaps between kernels), or kernel by kernel (eager).
  bool cuda_graph = true;
  // kCuda with algorithm "find": find's candidates include cuDNN's graph-API engine
  // configurations (--engines; cudnn::FindOptions::engines).
  bool find_engines = false;
  std::string stage = "full";       // sanity | quick | full (sets sizes, warmup, measure)
  int num_sizes = -1;               // -1 = the stage's default
  std::vector<int64_t> sizes;       // explicit sizes (override the stage's)
  int64_t min_size = 224, max_size = 512;
  int64_t batch_size = 1;
  int warmup = -1, measure = -1;  // -1 = the stage's default
  int threads = 0;
  bool strict = false;
  bool fold_bn = false;
  bool find_exhaustive = false;  // "find": time every supported algorithm in full
  bool resume = false;
  bool overwrite = false;  // replace an earlier sweep's --output-dir whole
  bool layers = true;      // per-layer passes
  // "inference": forward passes. "train": training steps (forward, loss, backward, SGD update);
  // per layer, forward + backward; the loss and the update as rows of their own.
  std::string pass = "inference";
  std::string power_source = "auto";
  std::string machine;               // default: hostname
  // default results/<stage>/<model>_<algorithm>[_train][_cuda][_eager][_engines]_<machine>/
  std::filesystem::path output_dir;
  uint64_t seed = 1;
  Progress::Mode progress = Progress::Mode::kAuto;
  std::string command_line;
};

struct ProfileResult {
  std::filesystem::path output_dir;
  int sizes_done = 0, sizes_skipped = 0;
  // What ran (from the last size planned): conv layers, how many ran another algorithm than the
  // named one requested (the most over the sizes), which algorithms ran, and the first reason.
  int conv_layers = 0, layers_other_algorithm = 0;
  std::string algorithms_used, other_reason;
};

// Stage defaults as ai3-8CuDNN's profiler: full 100 sizes warm-up 10 measure 20; quick 10 / 5 / 10;
// sanity 1 / 1 / 2; sizes min + int(i * (max - min) / (n - 1)).
void apply_stage(ProfileOptions& o);
ProfileResult run_profile(ProfileOptions options);

// Training normalises each BatchNorm channel over batch x height x width values: throws
// UsageError "<flags>: at input size S <model>'s <node> output is 1x1 per channel, ...; <remedy>"
// when one of `model`'s BatchNorm layers would see one value per channel at that size and batch
// (none with a batch above 1). Read from the model's shapes; nothing is built or allocated.
void check_batchnorm_trains(const std::string& model, int64_t size, int64_t batch,
                            const std::string& flags, const std::string& remedy);
// The profiler's form of it (`profile --pass train`, and `sweep plan` for its cells): the smallest
// of `sizes` at `batch`, the error naming --pass train --batch-size.
void check_profile_train_batch(const std::string& model, const std::vector<int64_t>& sizes,
                               int64_t batch);

// `nnperf status [DIR]`: one line per sweep folder found under DIR (recursively): model,
// algorithm, sizes done / planned, state, last update.
std::string profile_status(const std::filesystem::path& dir);

}  // namespace nnperf
