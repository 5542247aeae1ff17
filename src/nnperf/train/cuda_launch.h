// How a CNN training step is queued on the GPU (--launch): the names, the default that every
// front end shares (train's flag, CnnTrainOptions, TrainDriverOptions) and the parser. No CUDA
// header is needed to include this file.
#pragma once

#include <array>
#include <string>

namespace nnperf {

// --launch's values: "graph" (a full-batch step's forward, loss, backward and update as one CUDA
// graph, captured once and launched in one call) and "eager" (each kernel queued as the step runs).
inline constexpr std::array<const char*, 2> kCudaLaunchNames = {"graph", "eager"};

// The default of `train --device cuda --launch`: on an H200, graphs took 0.53x the eager step's
// time for ResNet-18 at 32x32 and 0.99x for ResNet-50 at 224x224 (README, the train command).
inline constexpr const char* kDefaultCudaLaunch = "graph";

// --launch's value (CudaTrainOptions::launch): true for "graph", false for "eager", else
// UsageError naming the flag.
bool parse_cuda_launch(const std::string& launch);

}  // namespace nnperf
