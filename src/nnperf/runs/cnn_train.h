// The `train` job for the registered CNNs (seed 004's train.py): epochs over image data (IDX,
// CIFAR binary, image folders, synthetic) with its recipe (SGD nesterov, weight decay, linear
// warm-up then cosine per step, label smoothing), augmentation and normalisation, a loader with
// worker threads, the per-epoch records and their outputs (runs/cnn_train_outputs.h),
// checkpoints (best, every --save-every epochs, final weights), --resume, and the one-step
// profile (--profile-one-step). With --device cuda the steps, the evaluation and the profiled
// step (timed by CUDA events) run on the GPU; the rest is the same.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/data/image_data.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/runs/progress.h"
#include "nnperf/train/cuda_launch.h"
#include "nnperf/train/optimizer.h"

namespace nnperf {

struct CnnTrainOptions {
  std::string model = "resnet18";
  ImageDataOptions data;
  int64_t in_channels = 0, num_classes = 0;  // 0: the data's; otherwise they must agree
  int epochs = 80;
  int warmup_epochs = 0;  // trained but not counted in MEASURED_SEC
  int64_t batch_size = 128;
  OptimizerOptions optimizer{"sgd", 0.1, 0.9, 5e-4, true};
  int64_t warmup_steps = 500;  // linear warm-up, then cosine to 0 (train/schedule.h)
  float label_smoothing = 0.0f;
  uint64_t seed = 42;
  int threads = 0;
  int workers = 0, prefetch_factor = 2;
  bool augment = true;
  std::string algorithm = "guess";  // conv algorithm: a name, guess or find
  // kCuda: every step on the GPU (train/cuda_cnn.h), `algorithm` in cuDNN's names
  // (parse_cuda_conv_choice); every image trained, an epoch's last, short batch with cuDNN plans
  // of its own (CudaCnnTrainer::step); evaluation and checkpoints as on the CPU.
  Device device = Device::kCpu;
  bool deterministic = false;  // --device cuda: only algorithms cuDNN marks deterministic
  bool find_engines = false;   // --device cuda: find ranks cuDNN's graph-API engines too
  // --device cuda: BatchNorm's algorithm, one of cudnn::batchnorm_algorithms() ("own", "cudnn")
  std::string batchnorm = "own";
  // --device cuda: "graph" or "eager" (CudaTrainOptions::launch; a profiled step too); not read
  // on the CPU, and recorded as null there
  std::string launch = kDefaultCudaLaunch;
  int save_every = 0;               // epoch_NNN checkpoints every N epochs (0: none)
  std::filesystem::path resume;
  std::filesystem::path init_weights;  // start from these weights instead of the initialiser
  // "": none; else a CSV `step,loss,lr` written per training step (the mini-batch's mean loss,
  // the rate it was taken at), for comparing trajectories step by step with the PyTorch peer's
  // --step-log.
  std::filesystem::path step_log;
  std::filesystem::path out_dir;  // empty: runs/<model>_<timestamp>
  bool overwrite = false;
  bool tensorboard = true;
  Progress::Mode progress = Progress::Mode::kAuto;
  // --profile-one-step: warmup_iters unrecorded steps, then profile_iter - 1 more, then one
  // recorded step (every layer and phase), then the run ends.
  bool profile_one_step = false;
  int warmup_iters = 20, profile_iter = 1;
  std::string command_line;
};

struct CnnEpochRecord {
  int epoch = 0;  // 1-based
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0;
  double lr = 0;             // of the epoch's last step
  double train_sec = 0;      // the training steps, data waits included
  double data_wait_sec = 0;  // of train_sec: waiting for the loader
  double eval_sec = 0;
  double imgs_per_sec = 0;
  int64_t images = 0;
  bool timed = true;  // counted in MEASURED_SEC (not a --warmup-epochs epoch)
  bool best = false;  // test accuracy improved: the best checkpoint was written
};

struct CnnTrainResult {
  std::vector<CnnEpochRecord> epochs;  // a resumed run: the checkpoint's epochs first
  int resumed_after_epoch = 0;
  double best_acc = 0;
  int best_epoch = 0;
  double measured_sec = 0;  // training steps of the timed epochs run by this process
  int64_t images_trained = 0;
  double imgs_per_sec = 0;
  double data_wait_fraction = 0;  // of measured_sec
  std::filesystem::path out_dir;
};

CnnTrainResult run_cnn_training(const CnnTrainOptions& options);

}  // namespace nnperf
