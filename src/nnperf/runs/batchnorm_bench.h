// `nnperf bench batchnorm --problem mb32c64h56w56 [--pass forward|backward] [--device cuda]`:
// BatchNorm's training pass by every algorithm of one device on one NCHW shape (the CPU: the
// project's kernels in the layout they pick, `own`, and in each layout, `channels` and `blocks`,
// each record naming the layout that ran; the GPU: its own kernels and cuDNN's,
// kernels/conv/cudnn_batchnorm.h), timed alternately (median of --measure runs after --warmup;
// the GPU's by CUDA events, one synchronisation per round), each row's result checked against the
// float64 reference of kernels/batchnorm.h. BatchNorm is bound by memory, so the figure is
// bandwidth: the bytes a two-pass algorithm must move at the least (statistics in one pass over
// the inputs, the outputs in a second: forward reads x twice and writes y, 12 bytes an element;
// backward reads x and dy twice and writes dx, 20) over the time, and its share of --peak-bw when
// one is given.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/gemm/gemm.h"  // Device

namespace nnperf {

// "mb32c64h56w56" (w may be left out: square) as BatchNormShape {mb, channels, h * w}; throws
// UsageError naming the text and the expected form.
BatchNormShape parse_batchnorm_problem(std::string_view text);

struct BatchNormBenchOptions {
  Device device = Device::kCpu;
  bool backward = false;                // --pass backward: dx, d_gamma, d_beta
  std::vector<std::string> algorithms;  // empty = every algorithm of the device
  int warmup = 3;
  int measure = 10;
  int threads = 1;       // the CPU row
  double peak_gbps = 0;  // > 0: each row's percent_of_peak_bw
  uint64_t seed = 1;
  std::string problem;  // the text the shape came from, for the records
};

// The algorithms of a device, the names --algorithms takes: cpu: own, channels, blocks; cuda:
// own, cudnn.
std::vector<std::string> batchnorm_bench_algorithms(Device device);

// {"context": {device, pass, threads, warmup, measure, timer, ...}, "records": [{algorithm,
// device, problem, pass, status ("ok" or "skipped" with its reason), time_ms_median, time_ms_min,
// time_ms_max, reps, bytes, gb_per_s, percent_of_peak_bw (with a peak), max_abs_err,
// max_rel_err}]}: max_rel_err is the largest error of an output (y; or dx, d_gamma, d_beta)
// relative to that output's largest float64 value. Refuses a shape whose buffers would not fit
// before allocating.
nlohmann::json bench_batchnorm(const BatchNormShape& s, const BatchNormBenchOptions& options);

}  // namespace nnperf
