// Layers with explicit forward/backward pairs. A layer is planned once per input shape (validate,
// pick algorithms, size workspaces); forward/backward then only compute.
#pragma once
#include <algorithm>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nnperf/core/interrupt.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/tensor.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {

// A trainable parameter: value and gradient of the same shape. Gradients are overwritten by each
// backward pass (not accumulated across passes).
struct Param {
  std::string name;  // a layer returns "weight"; Graph::params() prefixes the node: "fc1.weight"
  Tensor* value = nullptr;
  Tensor* grad = nullptr;
  int node = 0;  // the graph node whose layer owns it (set by Graph::params())
};

struct ConvAlgorithm;  // kernels/conv/conv.h
struct ConvProblem;
struct ConvBackwardAlgorithm;  // kernels/conv/conv_backward.h

struct PlanContext {
  const GemmAlgorithm* gemm = nullptr;  // algorithm for Linear (and later im2col conv) layers
  int threads = 1;
  bool training = true;  // when false, layers may skip saving what backward needs
  // false: the graph keeps no node outputs, gradients or scratch (forward/backward refuse), only
  // shapes and the layers' parameters: the host side of a device trainer (train/cuda_cnn.h),
  // which would otherwise hold every activation and gradient of the batch in host memory too.
  bool node_storage = true;
  // Conv2d layers: a conv registry name, "guess" (the supported algorithm with the lowest cost())
  // or "find" (time every supported algorithm once per problem and threads, keep the fastest).
  std::string conv_algorithm = "guess";
  // A named algorithm that cannot serve a layer: throw (strict) or fall back to the best guess.
  bool strict = false;
  // Milliseconds of one run, for "find"; nn/ reads no clocks, so profile/conv_timer.h provides
  // it (time_conv_ms). Null makes "find" an error. A candidate whose untimed warm-up run already
  // exceeds `loser_above_ms` cannot win: the timer may return that run's time at once.
  double (*time_conv)(const ConvAlgorithm& algo, const ConvProblem& p, int threads,
                      double loser_above_ms, bool with_weight_prep) = nullptr;
  // The same for the backward passes' rows (profile/conv_timer.h's time_conv_backward_ms).
  double (*time_conv_backward)(const ConvBackwardAlgorithm& algo, const ConvProblem& p,
                               int threads, double loser_above_ms) = nullptr;
  // "find" times the candidates in order of modelled cost and skips one whose modelled cost is
  // over 8x the best time measured so far (the models are within ~2x; fft on a 1x1 layer is
  // 20x). true times every supported algorithm, as cudnnFind does.
  bool find_exhaustive = false;
  // Training plans with node storage: a layer followed by a ReLU that is its only consumer applies
  // the ReLU itself where it can (Layer::fuse_relu; BatchNorm2d does), and the ReLU node runs
  // nothing. false keeps every node's own output (tests comparing outputs node by node with a
  // device that runs the ReLU nodes).
  bool fuse_relu = true;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string kind() const = 0;      // "Linear", "Activation"
  virtual std::string describe() const = 0;  // "Linear(784->512)", "GELU"
  // Validates the input shapes and returns the output shape. Throws nnperf::Error naming the
  // layer and the expected shape on a mismatch.
  virtual Shape plan(std::span<const Shape> src, const PlanContext& ctx) = 0;
  virtual void forward(std::span<const Tensor* const> src, Tensor& dst) = 0;
  // d_src[i] receives dL/d src[i] (overwritten); it is null when no gradient is needed there.
  virtual void backward(std::span<const Tensor* const> src, const Tensor& dst, const Tensor& d_dst,
                        std::span<Tensor* const> d_src) = 0;
  // True when backward's dL/d src[i] is d_dst itself for every input (Add): Graph then lets an
  // input whose only consumer this layer is read this node's gradient instead of a copy (its
  // d_src slot null).
  virtual bool passes_gradient_through() const { return false; }
  // Graph::plan calls this before plan() with true where the node's only consumer is a ReLU that
  // the layer may apply itself (forward: its output is max(0, output); backward: d_dst is the
  // gradient at the ReLU's output), false otherwise. Returns whether the layer will, for a plan
  // with `ctx`; one that does gives the same bits as itself followed by the ReLU node.
  virtual bool fuse_relu(bool /*fuse*/, const PlanContext& /*ctx*/) { return false; }
  virtual std::vector<Param> params() { return {}; }
  // Number of parameter values (the sum of params()' numel) without handing out writable
  // pointers: params() may have side effects (Conv2d marks its packed weights stale). Every
  // layer that overrides params() overrides this too.
  virtual int64_t num_params() const { return 0; }
  // Deterministic initialisation from rng (no-op for layers without parameters).
  virtual void init(Rng& /*rng*/) {}
  // Forward FLOPs for one pass on the planned shapes (2 per multiply-add).
  virtual double forward_flops() const { return 0.0; }
  virtual bool is_activation() const { return false; }
  // After plan(): the algorithm chosen for this layer and why, for NNPERF_VERBOSE=dispatch and
  // the per-layer CSVs ("gemm=blocked forward m64n128k784 weight-grad ..."); empty for layers
  // without a choice.
  virtual std::string dispatch() const { return {}; }
};

// Fills w by fill(part) over consecutive parts of at most 2^20 values, polling Ctrl-C before each:
// a large layer's initialisation (VGG-16's first Linear, 103M weights) takes a good part of a
// second, longer on a loaded machine. Rng draws one sequential stream, so the values are those of
// one call.
template <typename Fill>
void fill_in_parts(std::span<float> w, Fill fill) {
  constexpr std::size_t kPart = std::size_t{1} << 20;
  for (std::size_t at = 0; at < w.size(); at += kPart) {
    check_interrupt();
    fill(w.subspan(at, std::min(kPart, w.size() - at)));
  }
}

}  // namespace nnperf
