// `nnperf verify conv2d` and `nnperf bench conv2d`: one problem (benchdnn descriptor), every
// algorithm (or one), against the float64 reference or the clock.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"

namespace nnperf {

struct ConvVerifyResult {
  std::string algorithm;
  std::string status;  // "PASS", "FAIL", "SKIP"
  std::string reason;  // why skipped / what failed
  double max_abs_err = 0, max_rel_err = 0;
  double worst_bound_ratio = 0;  // max over outputs of |y - ref| / bound (PASS when <= 1)
  double tolerance_factor = 0;
};

// Seeded uniform inputs in [-1, 1] (bias included). An algorithm "FAIL"s when any output leaves
// its bound or when the reference is mostly zeros (the check would prove nothing).
std::vector<ConvVerifyResult> verify_conv(const ConvProblem& p, const std::vector<std::string>& algorithms,
                                          uint64_t seed, int threads);

struct ConvBenchOptions {
  std::vector<std::string> algorithms;  // empty = all
  int warmup = 3;
  int measure = 10;
  int threads = 1;
  uint64_t seed = 1;
  double peak_gflops = 0;  // per-thread FMA peak x threads; 0 = measure it (0.3 s)
  ConvPass pass = ConvPass::kForward;  // the pass's registry is timed
  bool cuda_graph = false;  // --device cuda: each row's call launched as a captured CUDA graph
  bool engines = false;     // --device cuda: also the pass's cuDNN graph-API engine plans as rows
  // Forward rows transform their weights (pack_weights) in every timed run, as a training step
  // does, and the modelled costs and the guess count that transform (ConvSelection::training).
  bool training = false;
};

// {"context": {..., pass, training, guess, fastest, guess_over_fastest, layers_run_as}, "records":
// [{algorithm, problem, status, reason, time_ms_median, time_ms_min, time_ms_max, modelled_ms,
// gflops_per_s, percent_of_peak}]}. The rows of the pass's registry (forward: conv.h, backward-data
// / backward-weights: conv_backward.h) are timed alternately on the same seeded tensors;
// `modelled_ms` is the cost `guess` ranks each row by, `guess` the row it picks, `fastest` the
// row with the lowest median and `guess_over_fastest` the ratio of their medians (absent when the
// guess was not among the rows timed), `layers_run_as` the smaller problem a layer of this shape
// runs under guess or find when some kernel taps read only padding (conv_crop.h; the rows here
// run the problem as given). Every pass does the forward pass's FLOPs (2 per multiply-add of the
// direct convolution).
nlohmann::json bench_conv(const ConvProblem& p, const ConvBenchOptions& options);

// The same on the CUDA device with cuDNN's algorithms of options.pass (kernels/conv/cudnn_conv.h:
// the eight forward ones, or the backward-data / backward-weights ones; options.algorithms:
// cuDNN's names, empty = all of the pass; threads and peak unused): a row cuDNN refuses is a
// skipped record with cuDNN's status; every other row is run once and checked against the
// float64 reference of the pass (max_abs_err, worst_bound_ratio against a float32 sum's bound of
// the pass's reduction length), then timed alternately by CUDA events (one synchronisation per
// round); its workspace is recorded. The context adds the device, cuDNN's version, `guess`
// (cudnnGet...Algorithm_v7's first) and `find` (cudnnFind...AlgorithmEx's ranking with cuDNN's
// times).
nlohmann::json bench_conv_cuda(const ConvProblem& p, const ConvBenchOptions& options);

}  // namespace nnperf
