// Analysis of the activation-timing study: per-activation timing statistics over the timed
// epochs, accuracy per millisecond, the speed/accuracy Pareto front, and recommendations drawn
// from the numbers with their noise (epoch-to-epoch spread, binomial standard error of accuracy).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace nnperf {

struct ActivationRun {
  std::string activation;
  std::string folder;
  double test_acc = 0, test_loss = 0;
  std::optional<double> val_acc;  // absent when the run held out no validation split
  int64_t test_samples = 0;
  std::vector<std::vector<double>> layer_ms_per_epoch;  // [timed epoch][layer]
  std::vector<double> total_ms_per_epoch;               // [timed epoch]
  double imgs_per_sec = 0;                              // training throughput
  int64_t batch_size = 0;
  double timer_empty_interval_ns = 0;
  std::string device = "cpu";  // where it trained: cpu (steady clock) or cuda (CUDA events)
};

struct ActivationSummary {
  std::string activation;
  double test_acc = 0;
  double final_ms = 0, mean_ms = 0, std_ms = 0, min_ms = 0, max_ms = 0, median_ms = 0;
  int epochs = 0;
  std::vector<double> layer_mean_ms;
  double acc_per_ms = 0;
  double imgs_per_sec = 0;
  double share_of_step = 0;  // activation forward time / whole training step time
  bool pareto = false;       // no other run is both faster and more accurate
};

struct ActivationAnalysis {
  std::vector<ActivationSummary> rows;  // in the order of the runs
  std::vector<std::string> recommendations;
  int num_layers = 0;
  double timer_empty_interval_ns = 0;
  std::string device = "cpu";  // the runs' device; "mixed" when they differ
};

ActivationAnalysis analyze_activations(const std::vector<ActivationRun>& runs);

}  // namespace nnperf
