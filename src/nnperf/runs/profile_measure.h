// The profiler's measurement, one input size at a time (runs/profile_run.cc plans the sweep and
// renders the records): the sweep's planned state, what a size measured, and measure_size, which
// times the whole model (no hooks) and then its layers in separate passes, on the CPU or the GPU.
// Internal to `nnperf profile`.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/models/registry.h"
#include "nnperf/nn/cuda_inference.h"
#include "nnperf/nn/graph.h"
#include "nnperf/profile/exec_log.h"
#include "nnperf/profile/power.h"
#include "nnperf/profile/stats.h"
#include "nnperf/runs/profile_run.h"
#include "nnperf/train/trainer.h"

namespace nnperf::profile_sweep {

// Which algorithm each conv layer of the planned graph runs: "gemm:12 winograd:4", and how many
// ran another than the one requested (a named algorithm; guess and find choose per layer).
struct AlgorithmUse {
  int conv_layers = 0, other = 0;
  std::map<std::string, int> used;
  std::string first_reason;
  std::string text() const {
    std::vector<std::string> parts;
    for (const auto& [name, n] : used) parts.push_back(fmt::format("{}:{}", name, n));
    return fmt::format("{}", fmt::join(parts, " "));
  }
};

// What one input size measured: the record every output of that size is rendered from.
struct LayerRow {
  std::string name;
  LayerColumns columns;
  Summary time;  // ms over the layer passes
};
struct TraceSlice {
  std::string name, kind;
  double begin_us = 0, dur_us = 0;
  nlohmann::json args;
};
struct SizeRecord {
  int64_t size = 0;
  Summary whole;              // ms per whole-model pass, no hooks
  int64_t passes = 0;         // timed whole-model passes
  int64_t energy_passes = 0;  // passes inside the power window
  PowerWindow power;
  AlgorithmUse use;
  std::vector<LayerRow> layers;  // empty without --layers
  double layers_sum = 0;
  // On the GPU: the layers' sum before each layer's event cost (Sweep::mark_cost_ms) came off;
  // the plan's device memory (buffers, parameters, the shared cuDNN workspace) and, launched as
  // a graph, the nodes of the untimed pass's graph.
  double layers_sum_raw = 0;
  std::size_t device_bytes = 0, graph_nodes = 0;
  std::vector<TraceSlice> trace;  // the last layer pass
};

// Everything a sweep measures with, planned once.
struct Sweep {
  const ModelEntry& model;
  int threads = 1;
  Graph graph;
  PlanContext ctx;
  Rng rng;
  std::unique_ptr<ExecLog> exec;
  PowerMonitor power;
  std::unique_ptr<Trainer> trainer;  // --pass train
  std::vector<int32_t> labels;
  std::unique_ptr<CudaInference> gpu;  // --device cuda: the planned model on the device
  // --device cuda: the device time one layer's event adds (cuda_mark_cost_ms, measured once in
  // the sweep's launch mode), taken off each layer's time.
  double mark_cost_ms = 0;
  // The same between kernels that fill the device (MarkKernels::kFullDevice): recorded in
  // run.json beside it, not taken off.
  double mark_cost_full_device_ms = 0;
  // One pass: a forward, or a training step (on the CPU; the GPU's passes are queued by
  // measure_whole_gpu and measure_layers_gpu).
  void run(const Tensor& x) {
    if (trainer) {
      trainer->step(x, labels);
    } else {
      graph.forward(x);
    }
  }
};

// A node's layers-CSV columns; on the GPU the conv algorithm and workspace are cuDNN's.
LayerColumns node_columns(const Sweep& sw, int n);

// Plans the model at this size (and on the GPU the device copy), then measures it: the whole
// model, and with --layers every node. `show` gets progress text.
SizeRecord measure_size(Sweep& sw, const ProfileOptions& o, int64_t size,
                        const std::function<void(const std::string&)>& show);

}  // namespace nnperf::profile_sweep
