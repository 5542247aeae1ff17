// Graph: plan() sizes every node's output and gradient once and fixes, for every edge, where
// backward writes its gradient: the first consumer to run backward (the latest node) overwrites
// the producer's gradient, every later one writes a scratch tensor that is then added in; a
// pass-through layer (Add) instead hands its own gradient to an input it is the only consumer
// of (GradientRouting::kShared), and so does a ReLU node whose producer applies it
// (PlanContext::fuse_relu), which also shares the producer's output. So forward() and backward()
// allocate nothing and the hooks bracket only the layer's own work (plus its gradient
// accumulation).
#include "nnperf/nn/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string_view>
#include <utility>

#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/verbose.h"
#include "nnperf/kernels/elementwise.h"
#include "nnperf/nn/activation.h"

namespace nnperf {

struct Graph::Impl {
  struct Accumulate {
    Tensor* dst;
    const Tensor* src;
  };
  struct Node {
    std::string name;
    std::unique_ptr<Layer> layer;  // null for the input node
    std::vector<int> inputs;
    Shape shape;
    Tensor value;
    // A ReLU its producer applies (fuse_relus): runs nothing; its output is the producer's and
    // the producer's gradient is this node's (a kShared edge).
    bool fused = false;
    // Where the output is: &value, or a fused ReLU's producer's (value then holds no storage).
    const Tensor* value_view = nullptr;
    Tensor grad;  // dL/d value; unused for the input and the output node
    // Where dL/d value is: &grad, or the gradient of the pass-through layer that is this node's
    // only consumer (route_gradients; grad then holds no storage).
    const Tensor* grad_view = nullptr;
    // Fixed at plan time (slots fed by the graph input are refreshed by every forward).
    std::vector<const Tensor*> src;
    std::vector<Tensor*> d_src;
    std::vector<Accumulate> accumulate;
  };

  std::vector<Node> nodes;
  // Scratch gradients for fan-out edges, one per (shape, concurrent use); owned here so the
  // pointers in Node::d_src stay valid.
  std::vector<std::unique_ptr<Tensor>> scratch;
  bool planned = false;
  bool training = true;
  bool storage = true;  // PlanContext::node_storage of the last plan
  const Tensor* input = nullptr;
  GraphHook* hook = nullptr;

  void check_node(int node, bool allow_input) const {
    const int lo = allow_input ? 0 : 1;
    if (node < lo || node >= static_cast<int>(nodes.size())) {
      throw Error(fmt::format("graph: node {} out of range [{}, {})", node, lo, nodes.size()));
    }
  }
  void require_planned(const char* what) const {
    if (!planned) throw Error(fmt::format("graph: {} before plan()", what));
  }
  // Edges leaving each node (node 0: the graph input).
  std::vector<int> consumer_counts() const {
    std::vector<int> consumers(nodes.size(), 0);
    for (std::size_t i = 1; i < nodes.size(); ++i) {
      for (int in : nodes[i].inputs) ++consumers[static_cast<std::size_t>(in)];
    }
    return consumers;
  }
  // Every node but the output feeds a later one.
  void check_every_node_is_used() const {
    const std::vector<int> consumers = consumer_counts();
    for (std::size_t i = 0; i + 1 < nodes.size(); ++i) {
      if (consumers[i] == 0) {
        throw Error(
            fmt::format("graph: node {} '{}' feeds no later node; only the last node (the "
                        "output) may be unused",
                        i, nodes[i].name));
      }
    }
  }

  // The ReLU nodes whose producer applies them (Layer::fuse_relu), where ctx allows it: the
  // producer's only consumer, not the graph input's, not the output node (whose gradient is
  // backward()'s argument, stored nowhere). Every layer is asked, so none keeps an earlier
  // plan's answer.
  void fuse_relus(const PlanContext& ctx) {
    const bool allowed = ctx.fuse_relu && ctx.training && ctx.node_storage;
    const std::vector<int> consumers = consumer_counts();
    const std::size_t last = nodes.size() - 1;
    std::vector<std::size_t> relu_of(nodes.size(), 0);  // node k's only consumer, a ReLU
    for (std::size_t j = 1; j < nodes.size(); ++j) {
      nodes[j].fused = false;
      auto* act = dynamic_cast<Activation*>(nodes[j].layer.get());
      if (act == nullptr) continue;
      act->set_fused_into("");
      const int k = nodes[j].inputs[0];
      if (j != last && nodes[j].inputs.size() == 1 && k != kInput &&
          consumers[static_cast<std::size_t>(k)] == 1 &&
          std::string_view(act->kernel().name) == "ReLU") {
        relu_of[static_cast<std::size_t>(k)] = j;
      }
    }
    for (std::size_t k = 1; k < nodes.size(); ++k) {
      const std::size_t j = relu_of[k];
      if (!nodes[k].layer->fuse_relu(allowed && j != 0, ctx) || j == 0) continue;
      nodes[j].fused = true;
      static_cast<Activation&>(*nodes[j].layer).set_fused_into(nodes[k].name);
    }
  }

  // Node i's layer planned on its inputs' shapes; its output (and, training, gradient) storage
  // and input pointers set.
  void plan_node(int i, const PlanContext& ctx, bool verbose_dispatch) {
    Node& node = nodes[static_cast<std::size_t>(i)];
    std::vector<Shape> src_shapes;
    for (int in : node.inputs) src_shapes.push_back(nodes[static_cast<std::size_t>(in)].shape);
    try {
      node.shape = node.layer->plan(src_shapes, ctx);
    } catch (const InterruptedError&) {
      throw;  // Ctrl-C during find's timing: not a planning error
    } catch (const Error& e) {
      throw Error(fmt::format("graph node {} '{}': {}", i, node.name, e.what()), e.kind());
    }
    if (verbose_dispatch) {
      const std::string d = node.layer->dispatch();
      fmt::print(stderr, "nnperf dispatch: node {} '{}' {} -> {}{}{}\n", i, node.name,
                 node.layer->describe(), node.shape.str(), d.empty() ? "" : ": ", d);
    }
    if (ctx.node_storage && !node.fused) {
      node.value.resize(node.shape);
    } else {
      node.value = Tensor();
    }
    node.value_view =
        node.fused ? nodes[static_cast<std::size_t>(node.inputs[0])].value_view : &node.value;
    if (ctx.training && ctx.node_storage && i + 1 < static_cast<int>(nodes.size())) {
      node.grad.resize(node.shape);
    } else {
      node.grad = Tensor();  // an inference plan holds no gradient storage (also after training)
    }
    node.grad_view = &node.grad;
    node.src.assign(node.inputs.size(), nullptr);
    for (std::size_t s = 0; s < node.inputs.size(); ++s) {
      if (node.inputs[s] != kInput)
        node.src[s] = nodes[static_cast<std::size_t>(node.inputs[s])].value_view;
    }
    node.d_src.assign(node.inputs.size(), nullptr);
    node.accumulate.clear();
  }

  GradientRouting routing() const {
    GradientRouting r;
    r.edge.resize(nodes.size());
    std::vector<bool> written(nodes.size(), false);
    for (std::size_t j = nodes.size(); j-- > 1;) {
      const Node& node = nodes[j];
      std::vector<int> used;  // scratch buffers taken by this node's backward call
      for (const int k : node.inputs) {
        int route = GradientRouting::kNone;
        const auto producer = static_cast<std::size_t>(k);
        if (k == kInput) {
          // no gradient for the graph input
        } else if (!written[producer]) {
          written[producer] = true;
          route = GradientRouting::kProducer;
        } else {
          route = free_scratch(r.scratch, nodes[producer].shape, used);
        }
        r.edge[j].push_back(route);
      }
    }
    share_pass_through_gradients(r);
    return r;
  }
  // GradientRouting's kShared edges and storage (pass-through layers and fused ReLUs): latest
  // node first, so a chain of them resolves to the last one's storage; the output node (j = size
  // - 1) keeps its own.
  void share_pass_through_gradients(GradientRouting& r) const {
    r.storage.resize(nodes.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) r.storage[i] = static_cast<int>(i);
    const std::vector<int> consumers = consumer_counts();
    for (std::size_t j = nodes.size() - 1; j-- > 1;) {
      if (!nodes[j].layer->passes_gradient_through() && !nodes[j].fused) continue;
      for (std::size_t s = 0; s < nodes[j].inputs.size(); ++s) {
        const int k = nodes[j].inputs[s];
        if (k == kInput || consumers[static_cast<std::size_t>(k)] != 1 ||
            r.edge[j][s] != GradientRouting::kProducer) {
          continue;
        }
        r.edge[j][s] = GradientRouting::kShared;
        r.storage[static_cast<std::size_t>(k)] = r.storage[j];
      }
    }
  }
  // The first scratch buffer of `shape` not in `used` (a new one if none), marked used.
  static int free_scratch(std::vector<Shape>& shapes, const Shape& shape, std::vector<int>& used) {
    int t = 0;
    for (; t < static_cast<int>(shapes.size()); ++t) {
      if (shapes[static_cast<std::size_t>(t)] == shape &&
          std::find(used.begin(), used.end(), t) == used.end()) {
        break;
      }
    }
    if (t == static_cast<int>(shapes.size())) shapes.push_back(shape);
    used.push_back(t);
    return t;
  }

  // Node storage wired as routing() says: a node whose gradient is in another's storage reads
  // it there (grad_view), and its own is released.
  void route_gradients() {
    const GradientRouting r = routing();
    for (const Shape& shape : r.scratch) scratch.push_back(std::make_unique<Tensor>(shape));
    for (std::size_t j = 1; j < nodes.size(); ++j) {
      Node& node = nodes[j];
      const auto owner = static_cast<std::size_t>(r.storage[j]);
      if (owner != j) {
        node.grad_view = &nodes[owner].grad;
        node.grad = Tensor();
      }
      for (std::size_t s = 0; s < node.inputs.size(); ++s) {
        const int route = r.edge[j][s];
        if (route == GradientRouting::kNone || route == GradientRouting::kShared) continue;
        Node& producer = nodes[static_cast<std::size_t>(node.inputs[s])];
        if (route == GradientRouting::kProducer) {
          node.d_src[s] = &producer.grad;
          continue;
        }
        Tensor* t = scratch[static_cast<std::size_t>(route)].get();
        node.d_src[s] = t;
        node.accumulate.push_back({&producer.grad, t});
      }
    }
  }

  void require_storage(const char* what) const {
    require_planned(what);
    if (!storage) {
      throw Error(fmt::format("graph: {} on a graph planned for shapes only (node_storage off)",
                              what));
    }
  }
};

Graph::Graph() : impl_(std::make_unique<Impl>()) {
  impl_->nodes.push_back(Impl::Node{});
  impl_->nodes[0].name = "input";
}
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

int Graph::add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  const int id = size();
  if (layer == nullptr) throw Error(fmt::format("graph: node '{}' has no layer", name));
  if (name.empty()) throw Error(fmt::format("graph: node {} needs a name", id));
  for (const Impl::Node& n : impl_->nodes) {
    if (n.name == name) throw Error(fmt::format("graph: duplicate node name '{}'", name));
  }
  if (inputs.empty()) throw Error(fmt::format("graph: node '{}' has no inputs", name));
  for (int in : inputs) {
    if (in < 0 || in >= id) {
      throw Error(
          fmt::format("graph: node '{}' (id {}) takes input {}; inputs must be earlier "
                      "nodes, 0..{}",
                      name, id, in, id - 1));
    }
  }
  Impl::Node node;
  node.name = std::move(name);
  node.layer = std::move(layer);
  node.inputs = std::move(inputs);
  impl_->nodes.push_back(std::move(node));
  impl_->planned = false;
  return id;
}

void Graph::plan(const Shape& input_shape, const PlanContext& ctx) {
  Impl& g = *impl_;
  g.planned = false;
  if (size() < 2) throw Error("graph: nothing to plan, the graph has no layers");
  g.check_every_node_is_used();
  g.nodes[0].shape = input_shape;
  g.training = ctx.training;
  g.storage = ctx.node_storage;
  // NNPERF_VERBOSE=dispatch prints each layer's plan-time choice.
  const bool verbose_dispatch = verbose_enabled("dispatch");
  g.fuse_relus(ctx);
  for (int i = 1; i < size(); ++i) g.plan_node(i, ctx, verbose_dispatch);
  g.scratch.clear();
  if (ctx.training && ctx.node_storage) g.route_gradients();
  g.input = nullptr;
  g.planned = true;
}

bool Graph::planned() const { return impl_->planned; }

const Shape& Graph::input_shape() const {
  impl_->require_planned("input_shape()");
  return impl_->nodes[0].shape;
}

const Tensor& Graph::forward(const Tensor& x) {
  Impl& g = *impl_;
  g.require_storage("forward()");
  if (x.shape() != g.nodes[0].shape) {
    throw Error(fmt::format("graph input: expected shape {} (as planned), got {}",
                            g.nodes[0].shape.str(), x.shape().str()));
  }
  g.input = &x;
  const int count = size();
  for (int i = 1; i < count; ++i) {
    Impl::Node& node = g.nodes[i];
    for (std::size_t s = 0; s < node.inputs.size(); ++s) {
      if (node.inputs[s] == kInput) node.src[s] = &x;
    }
    check_interrupt();  // Ctrl-C: a safe point between nodes
    if (g.hook != nullptr) g.hook->before(i, Phase::kForward);
    if (!node.fused) node.layer->forward(node.src, node.value);
    if (g.hook != nullptr) g.hook->after(i, Phase::kForward);
  }
  return *g.nodes.back().value_view;
}

void Graph::backward(const Tensor& d_output, const std::function<void(int node)>& node_done) {
  Impl& g = *impl_;
  g.require_storage("backward()");
  if (!g.training) throw Error("graph: backward() on a graph planned for inference (training off)");
  if (g.input == nullptr) throw Error("graph: backward() before forward()");
  const Impl::Node& out = g.nodes.back();
  if (d_output.shape() != out.shape) {
    throw Error(fmt::format("graph output gradient: expected shape {}, got {}", out.shape.str(),
                            d_output.shape().str()));
  }
  for (int i = size() - 1; i >= 1; --i) {
    Impl::Node& node = g.nodes[i];
    const Tensor& d_dst = i == size() - 1 ? d_output : *node.grad_view;
    if (g.hook != nullptr) g.hook->before(i, Phase::kBackward);
    if (!node.fused) node.layer->backward(node.src, *node.value_view, d_dst, node.d_src);
    for (const Impl::Accumulate& a : node.accumulate) {
      add_inplace(a.dst->data(), a.src->data(), a.dst->numel());
    }
    if (g.hook != nullptr) g.hook->after(i, Phase::kBackward);
    if (node_done) node_done(i);
  }
}

GradientRouting Graph::gradient_routing() const {
  impl_->require_planned("gradient_routing()");
  return impl_->routing();
}

void Graph::init(Rng& rng) {
  for (int i = 1; i < size(); ++i) {
    check_interrupt();  // Ctrl-C: a large model's initialisation takes a second or more
    impl_->nodes[i].layer->init(rng);
  }
}

std::vector<Param> Graph::params() {
  std::vector<Param> all;
  for (int i = 1; i < size(); ++i) {
    Impl::Node& node = impl_->nodes[i];
    for (Param p : node.layer->params()) {
      p.name = node.name + "." + p.name;
      p.node = i;
      all.push_back(std::move(p));
    }
  }
  return all;
}

int64_t Graph::num_params() const {
  // Layer::num_params(), not params(): handing out writable pointers has side effects (Conv2d
  // marks its packed weights stale, so the next inference forward would repack them).
  int64_t n = 0;
  for (int i = 1; i < size(); ++i) n += impl_->nodes[i].layer->num_params();
  return n;
}

double Graph::forward_flops() const {
  impl_->require_planned("forward_flops()");
  double flops = 0.0;
  for (int i = 1; i < size(); ++i) flops += impl_->nodes[i].layer->forward_flops();
  return flops;
}

int Graph::size() const { return static_cast<int>(impl_->nodes.size()); }

const std::string& Graph::name(int node) const {
  impl_->check_node(node, true);
  return impl_->nodes[node].name;
}

Layer& Graph::layer(int node) {
  impl_->check_node(node, false);
  return *impl_->nodes[node].layer;
}

const Layer& Graph::layer(int node) const {
  impl_->check_node(node, false);
  return *impl_->nodes[node].layer;
}

const std::vector<int>& Graph::inputs(int node) const {
  impl_->check_node(node, true);
  return impl_->nodes[node].inputs;
}

const Shape& Graph::output_shape(int node) const {
  impl_->require_planned("output_shape()");
  impl_->check_node(node, true);
  return impl_->nodes[node].shape;
}

const Tensor& Graph::output() const {
  impl_->require_planned("output()");
  return *impl_->nodes.back().value_view;
}

const Tensor& Graph::grad(int node) const {
  impl_->check_node(node, false);
  if (node == size() - 1) throw Error("graph: grad() of the output node (backward's argument)");
  return *impl_->nodes[node].grad_view;
}

const Tensor& Graph::value(int node) const {
  impl_->check_node(node, true);
  if (node == kInput) {
    if (impl_->input == nullptr) throw Error("graph: value(0) before forward()");
    return *impl_->input;
  }
  // Unplanned (never, or add() since): the views may point into moved nodes.
  const Impl::Node& n = impl_->nodes[node];
  return impl_->planned ? *n.value_view : n.value;
}

void Graph::set_hook(GraphHook* hook) { impl_->hook = hook; }

}  // namespace nnperf
