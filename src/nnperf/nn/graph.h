// Graph: a small DAG of layers. Nodes are added in topological order (a node's inputs must exist
// already), forward runs in that order, backward in reverse with gradient accumulation where a
// node feeds several consumers (residual and dense connections in the CNN work).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nnperf/nn/layer.h"

namespace nnperf {

enum class Phase { kForward, kBackward };

// Called around every node execution; the profiler implements it (profile/). Node 0.. are the
// graph's nodes; the input node is never reported.
class GraphHook {
 public:
  virtual ~GraphHook() = default;
  virtual void before(int node, Phase phase) = 0;
  virtual void after(int node, Phase phase) = 0;
};

// Where backward writes each edge's gradient, fixed at plan time from the graph's structure and
// shapes: in backward order, a node's first consumer overwrites the node's gradient, every later
// consumer writes a scratch buffer that is added in right after that consumer's backward. A
// scratch buffer is reused by later consumers of the same shape (never twice by one node). Edges
// from the graph input get no gradient (no one reads it), so layers fed by it skip that work.
// A pass-through layer (Add) hands its own gradient to each input it is the only consumer of:
// that edge is kShared (nothing written: the input's backward reads the Add's gradient, and the
// input needs no gradient storage of its own), through chains of them to the last one's; never
// the output node's, whose gradient is the loss's. A ReLU fused into its producer (PlanContext::
// fuse_relu) is such a pass-through too: the producer's backward takes the gradient at the ReLU's
// output.
struct GradientRouting {
  static constexpr int kShared = -3;    // the producer's gradient is this node's: nothing to write
  static constexpr int kNone = -2;      // edge from the graph input: no gradient
  static constexpr int kProducer = -1;  // writes the producer's gradient
  // edge[node][slot]: kShared, kNone, kProducer or an index into scratch (edge[0] is empty).
  std::vector<std::vector<int>> edge;
  std::vector<Shape> scratch;  // each scratch buffer's shape
  // storage[node]: the node whose gradient storage holds this node's gradient (itself, or the
  // last pass-through node of its kShared chain); storage[0] = 0.
  std::vector<int> storage;
};

class Graph {
 public:
  Graph();
  ~Graph();
  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;

  static constexpr int kInput = 0;  // node 0 is the graph input
  // Adds a node fed by `inputs` (node ids < this node's id); returns its id. The last node added
  // is the output.
  int add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs);
  int add(std::string name, std::unique_ptr<Layer> layer) {
    return add(std::move(name), std::move(layer), {size() - 1});
  }

  // Plans every node for this input shape (including the batch dimension). With
  // ctx.node_storage false, only shapes and the layers' own state: value() and grad() are empty
  // and forward()/backward() refuse.
  void plan(const Shape& input_shape, const PlanContext& ctx);
  bool planned() const;
  const Shape& input_shape() const;

  // Runs forward; `x` must have the planned shape and stay alive until backward.
  const Tensor& forward(const Tensor& x);
  // Runs backward from dL/d output; fills every parameter's grad. node_done(i), if given, runs
  // after node i's backward (and the hook's after()): node i's parameter gradients are final
  // then, and just written (the Trainer checks them there, while they are still in cache).
  void backward(const Tensor& d_output, const std::function<void(int node)>& node_done = {});

  void init(Rng& rng);
  std::vector<Param> params();
  int64_t num_params() const;
  double forward_flops() const;  // sum over nodes for the planned shape

  int size() const;  // number of nodes, the input included
  const std::string& name(int node) const;
  Layer& layer(int node);  // node >= 1
  const Layer& layer(int node) const;
  const std::vector<int>& inputs(int node) const;
  const Shape& output_shape(int node) const;
  const Tensor& output() const;
  // The node's output from the last forward. A ReLU fused into its producer (PlanContext::
  // fuse_relu) shares the producer's output: both nodes' value is the ReLU's.
  const Tensor& value(int node) const;
  // dL/d (node's output) from the last backward, for 1 <= node < size() - 1 (the output node's
  // gradient is backward()'s argument).
  const Tensor& grad(int node) const;
  // The gradient routing of the planned graph (also of a shapes-only plan): Graph::backward
  // follows it, and device trainers walking the graph on their own buffers follow the same.
  GradientRouting gradient_routing() const;

  void set_hook(GraphHook* hook);  // null to remove

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace nnperf
