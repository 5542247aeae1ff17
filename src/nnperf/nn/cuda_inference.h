// A planned Graph's inference on the CUDA device: the profiler's `--device cuda`. The graph is
// planned on the host (shapes, parameters, BatchNorm running statistics are read from it; none of
// its CPU work runs); every node gets a device buffer for its output, its parameters are
// uploaded once, and run() queues one forward pass on the default stream: convolutions by cuDNN
// (kernels/conv/cudnn_conv.h) with the algorithm asked for, guess or find, BatchNorm as the
// per-channel affine map of its running statistics, pools, activations, Add, Concat and Linear
// (cuBLAS) by the kernels of kernels/cuda_kernels.h; Flatten and Dropout (inference: identity)
// alias their input. A named algorithm that cuDNN cannot serve for a layer falls back to cuDNN's
// guess with the status recorded, or is an error when strict, as on the CPU. Layers without a GPU
// kernel are refused by name before anything is allocated.
#pragma once
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nnperf/core/clock.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/nn/graph.h"

namespace nnperf {

namespace cuda {
class CapturedWork;
}

// What ran for one node (convolutions: the cuDNN algorithm, why not the requested one, its
// workspace).
// A node's algorithm, fallback reason and workspace: a conv's cudnn::choose_forward, empty for
// the others.
using CudaNodeInfo = cudnn::ForwardChoice;

class CudaInference {
 public:
  // `graph` must be planned for inference; it must outlive this object. conv_algorithm: one of
  // cudnn::forward_algorithms(), "guess" (cudnnGetConvolutionForwardAlgorithm_v7's first) or
  // "find" (cudnnFindConvolutionForwardAlgorithmEx on this node's buffers, fastest first).
  // cuda_graph: each pass is launched as one CUDA graph (cuda::CapturedWork) instead of kernel
  // by kernel: captured at the first run() (again after process-wide scratch such as cuDNN's
  // shared workspace was reallocated: cuda::CapturedWork::current),
  // and a timed run() captures its pass with the timeline's marks as event-record nodes, so the
  // nodes' times and the whole pass are both free of the host's launch gaps; find then ranks
  // cuDNN's candidates as graphs too (cudnn::Launch). find_engines: find's candidates include
  // cuDNN's graph-API engine configurations (cudnn::FindOptions::engines).
  // Throws UsageError without a device or cuDNN, Error naming a layer without a GPU kernel or
  // the device memory the plan needs when it exceeds what is free.
  CudaInference(const Graph& graph, const std::string& conv_algorithm, bool strict,
                bool cuda_graph = false, bool find_engines = false);
  ~CudaInference();
  CudaInference(const CudaInference&) = delete;
  CudaInference& operator=(const CudaInference&) = delete;

  // Copies the input ([mb, C, H, W] as planned) to the device.
  void set_input(std::span<const float> host);
  // Times the nodes of each run() on `timeline` (a CUDA event timeline; null: none): one mark
  // before the first node and one after each node that queues work, so a node's time runs from
  // the mark before it to its own, and the nodes' times add up to the whole timed pass with
  // nothing left out and one event per node (not a begin/end pair: at batch 1 a pass is bound by
  // the host's launches, and every event record lengthens it). Flatten and Dropout queue nothing:
  // no mark, time 0.
  // The timeline's marks are readied here (Timeline::reserve), outside the timed passes.
  void set_timeline(Timeline* timeline);
  bool cuda_graph() const { return cuda_graph_; }
  // The nodes of the captured untimed pass (0 before one).
  std::size_t graph_nodes() const;
  // Queues one forward pass; returns without waiting for it.
  void run();
  // With cuda_graph: captures the untimed pass when it is not current, without running it (the
  // capture queues nothing on the device), so that a first timed run() holds no capture and a
  // profiler sees only the passes run. Without: nothing to do.
  void prepare();
  // After a run() with a timeline: waits for it (the one synchronisation) and returns each node's
  // milliseconds, indexed by node ([0], the input, is 0).
  std::vector<double> node_ms();
  // Whether node n records a mark in a timed run (Flatten and Dropout do not: time 0), so that
  // its time holds one mark's cost (cuda_mark_cost_ms).
  bool marked(int n) const;
  // Waits for the queued work and returns the output node's values.
  std::vector<float> output() const;

  const CudaNodeInfo& node(int n) const { return info_[static_cast<std::size_t>(n)]; }
  // Buffers, parameters and the largest cuDNN workspace of its layers (they share one).
  std::size_t device_bytes() const { return device_bytes_; }

 private:
  struct Node;
  void plan_node(int n, const std::string& conv_algorithm, bool strict);
  void run_node(int n);
  void queue_pass();  // every node's work (and marks), kernel by kernel

  const Graph& graph_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<CudaNodeInfo> info_;
  Timeline* timeline_ = nullptr;
  std::vector<int> marks_;  // per node: the index of the timeline mark that ends it
  bool cuda_graph_ = false, find_engines_ = false;
  std::unique_ptr<cuda::CapturedWork> plain_, timed_;  // the passes as graphs, untimed and timed
  std::size_t device_bytes_ = 0;
};

// The kernels cuda_mark_cost_ms puts the marks between: one block each, or two blocks per SM
// (each a float4 addition over 2048 floats per SM), which fill the device as a real layer's do.
enum class MarkKernels { kOneBlock, kFullDevice };

// The device time one timeline mark adds between two kernels of a pass launched as
// `cuda_graph` says (a graph of them, or kernel by kernel): 200 kernels back to back with and
// without a mark after each, alternated over 15 timed rounds after an untimed one, (median with -
// median without) / 200, at least 0. Between two kernels an event also keeps the next kernel
// from starting its launch while the last one runs, which is why a timed pass's layers add up to
// more than an untimed pass (measured on an H200 at batch 1 with one-block kernels: 2-2.6 us
// per layer, 1.3 us for two events alone).
double cuda_mark_cost_ms(bool cuda_graph, MarkKernels kernels = MarkKernels::kOneBlock);

// "" when every node of `graph` has a GPU kernel, else the refusal naming the first that has not
// (checked before anything touches a device, so also on machines without one).
std::string cuda_unsupported(const Graph& graph);

// The device bytes the node outputs of a planned graph need (float32), for the refusal before
// allocating; parameters and workspaces come on top.
std::size_t cuda_activation_bytes(const Graph& graph);

}  // namespace nnperf
