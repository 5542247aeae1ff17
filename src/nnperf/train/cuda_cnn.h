// CNN training on the CUDA device (`train --device cuda`: epochs, and the fixed-iteration driver
// with --iters): a graph planned for training on the host (shapes and initial parameters are read
// from it; none of its CPU work runs) walked on the device. Forward: cuDNN convolutions (the
// forward algorithm asked for, guess or find; a named one cuDNN cannot serve falls back to its
// guess), BatchNorm in training mode (batch statistics, running statistics updated), activations,
// ReLU6, pools (max with its argmax), Add, Concat, Linear (cuBLAS), Flatten, Dropout (inverted;
// its masks drawn on the device by a counter-based generator, not the CPU layer's stream). Loss:
// softmax cross-entropy with label smoothing. Backward: cuDNN's backward-data and
// backward-weights algorithms (guess, or find when asked) and the backward kernels of
// kernels/cuda_kernels.h, with a node feeding several consumers getting their gradients summed,
// as Graph does. Update: torch.optim's SGD (momentum, Nesterov, weight decay) or Adam, as the CPU
// optimizer, one launch over every parameter. One synchronisation per step, at its end (the loss
// comes back); with `launch = "graph"` the forward, loss, backward and update of a full batch are
// one CUDA graph, captured once and launched in one call (CudaTrainOptions::launch). Evaluation:
// BatchNorm on its running statistics, Dropout off. Layers without GPU kernels are refused by name
// before anything is allocated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/gpu/cuda.h"
#include "nnperf/nn/graph.h"
#include "nnperf/train/cuda_launch.h"
#include "nnperf/train/optimizer.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace cuda_kernels {
struct UpdateTable;
}

class Conv2d;

// "" when every node of `graph` can be trained on the GPU, else the refusal naming the first
// that cannot (checked without a device).
std::string cuda_training_unsupported(const Graph& graph);

// The device memory the GPU trainer allocates for `graph` (planned for training) before cuDNN's
// workspace and the gradient scratch buffers of nodes with several consumers: every node's output,
// the gradients of the nodes that keep their own (not those whose gradient is the Add's they
// feed: GradientRouting::storage; not the input's), max-pool argmax and dropout masks, and each
// parameter's value, gradient and optimizer state (SGD with momentum: one buffer, Adam: two). The
// trainer refuses a plan that needs more than is free before allocating. Computed without a
// device.
std::size_t cuda_training_bytes(const Graph& graph, const OptimizerOptions& optimizer);

// The GPU trainer's convolution algorithms, as `--algorithm` gives them: guess, find (every pass
// by cuDNN's timing), a forward algorithm's name (the backward passes by guess), or per pass
// "fwd=NAME,bwd_data=NAME,bwd_weights=NAME" with any of the three left out (guess), each NAME one
// of that pass's cuDNN algorithms, guess or find: the form CudaCnnTrainer::algorithms() reports.
// find_engines (--engines): the passes that use find rank cuDNN's graph-API engine
// configurations too (cudnn::FindOptions::engines).
struct CudaConvChoice {
  std::string forward = "guess", backward_data = "guess", backward_weights = "guess";
  bool find_engines = false;
};
// Throws UsageError naming `--algorithm` and the pass's algorithms for an unknown name, or
// `--engines` when find_engines is asked and no pass uses find.
CudaConvChoice parse_cuda_conv_choice(const std::string& algorithm, bool find_engines = false);
// The choice in --algorithm's shortest form with the tables' spelling: guess, find, a forward
// name (backward passes by guess), else fwd=..,bwd_data=..,bwd_weights=.. (outputs record this).
std::string to_string(const CudaConvChoice& c);
// Whether any pass of `c` chooses by timing.
bool uses_find(const CudaConvChoice& c);
// A trainer's --algorithm in the tables' spelling, the form runs compare and record: the GPU
// trainer's (to_string of parse_cuda_conv_choice) when `cuda`, else the CPU's
// (canonical_conv_algorithm). UsageError naming --algorithm for an unknown name, and naming
// --deterministic when `deterministic` and a pass chooses by timing.
std::string canonical_train_algorithm(const std::string& algorithm, bool cuda, bool find_engines,
                                      bool deterministic);

// How the GPU trainer runs a step, as `train --device cuda` gives it.
struct CudaTrainOptions {
  // --algorithm, as parse_cuda_conv_choice takes it; a named algorithm that cuDNN cannot serve
  // for a layer falls back to its guess (CudaCnnTrainer::algorithms() says what runs).
  std::string conv_algorithm = "guess";
  float label_smoothing = 0.0f;
  // --deterministic: only algorithms cuDNN reports CUDNN_DETERMINISTIC for the layer (no find;
  // the backward passes' atomics-based algo_0 and the filter's algo_3 are left out).
  bool deterministic = false;
  bool find_engines = false;  // --engines: as CudaConvChoice's
  // --batchnorm: one of cudnn::batchnorm_algorithms(), "own" (the project's kernels, float64
  // statistics) or "cudnn" (cuDNN's, as PyTorch runs BatchNorm2d; UsageError before anything is
  // allocated where a layer's shape is beyond it).
  std::string batchnorm = "own";
  // --launch: "eager" (each kernel and cuDNN call queued as the step runs) or "graph": a step of
  // the planned batch queues its forward, loss, backward and update as one CUDA graph
  // (cuda::CapturedWork),
  // captured at the second such step (the first, eager, has grown every scratch buffer and loaded
  // every kernel) and again whenever process-wide scratch was reallocated since
  // (cuda::CapturedWork::current); what changes per step reaches the graph through device memory
  // (the batch, its labels, Dropout's step count, the update's coefficients); a loaded optimizer
  // state has it captured again. An epoch's short last batch runs eagerly;
  // evaluation's forward pass (always at the planned batch) is a graph of its own, captured at the
  // first evaluation. A step with hooks (a recorded step, e.g. StepRecorder on CUDA events) is
  // captured for itself with its hooks' timeline marks as event-record nodes (host-side hooks such
  // as NVTX ranges then wrap its capture, not its run). find times its candidates as graphs
  // (cudnn::Launch::kGraph). A capture CUDA refuses leaves the run eager, the reason in
  // CudaCnnTrainer::launch(); for a recorded step it throws. The trainer's own default is eager;
  // the commands pass kDefaultCudaLaunch (cuda_launch.h).
  std::string launch = "eager";
};

class CudaCnnTrainer {
 public:
  // `graph` planned for training at the batch's shape (PlanContext::node_storage may be off: only
  // shapes, layers and parameters are read); it must outlive the trainer. Throws
  // UsageError for an unsupported layer or without a device/cuDNN, Error when the device memory
  // the plan needs is not free, UsageError for options that contradict each other or name
  // nothing (all checked before anything is allocated).
  CudaCnnTrainer(Graph& graph, const OptimizerOptions& optimizer, const CudaTrainOptions& options);
  ~CudaCnnTrainer();
  CudaCnnTrainer(const CudaCnnTrainer&) = delete;
  CudaCnnTrainer& operator=(const CudaCnnTrainer&) = delete;

  // One step on n <= the planned batch of images ([n, C, H, W], host memory) and their labels in
  // [0, classes); returns once the device has finished (the loss is read then, after the update).
  // A batch shorter than the planned one (an epoch's last) trains on its n images only: every
  // kernel works on the buffers' first n images (BatchNorm's statistics, the loss's mean over n),
  // and the convolutions get cuDNN plans of their own for that size, made at its first step as
  // the constructor made the planned size's (the same --algorithm; find times cuDNN's algorithms
  // again at that shape) and kept until a step of another short size. Throws DivergenceError
  // when the loss is not finite (the step's update has run).
  BatchResult step(std::span<const float> x, std::span<const int32_t> labels);
  // Evaluation on n <= the planned batch of images ([n, C, H, W], host memory): BatchNorm on its
  // running statistics; the loss (with the trainer's label smoothing) and accuracy computed on the
  // host from the logits, as Trainer::evaluate. Throws DivergenceError on non-finite logits.
  BatchResult evaluate(std::span<const float> x, std::span<const int32_t> labels);
  void set_lr(float lr) { lr_ = lr; }
  int64_t steps() const { return steps_; }
  // The device's parameters and BatchNorm running statistics written back into the graph.
  void download_params();
  // The optimizer's state read back under the CPU optimizer's names (Optimizer::state():
  // momentum_buffer.<i>, or exp_avg.<i> and exp_avg_sq.<i>, i in Graph::params() order; none
  // before the first step or for SGD without momentum), and its loading (a checkpoint's, through
  // the CPU optimizer) with the step count it was saved at.
  std::vector<std::pair<std::string, Tensor>> optimizer_state() const;
  void load_optimizer_state(const std::vector<std::pair<std::string, const Tensor*>>& state,
                            int64_t steps);
  // Node n's output of the last step's forward pass and its gradient, and parameter i's gradient of that step
  // (Graph::params() order), read back from the device (for checks against the CPU Trainer).
  std::vector<float> node_output(int n) const;
  std::vector<float> node_grad(int n) const;  // dL/d node n's output, of the last backward
  // Node outputs, gradients and masks are those of the last step's (or evaluation's) batch: its
  // images only, when it was short.
  // Dropout node n's mask of the last training forward (0 or 1 / (1 - p) per element): draws
  // (step - 1) * E onwards of the node's seed (kernels/counter_rng.h), E the node's elements at
  // the planned batch (a short batch uses the start of its step's range).
  std::vector<float> dropout_mask(int n) const;
  std::vector<float> param_grad(std::size_t i) const;
  // Hooks around every node's forward and backward and around the step's four phases, called as
  // the work is queued (a recorder on the GPU's timeline, e.g. StepRecorder with CUDA events, and
  // NVTX ranges; null: none). For a profiled step: each call costs an event record or more. With
  // launch "graph" a hooked full-batch step is captured with its hooks' calls and launched.
  void set_hooks(GraphHook* layers, StepHook* phases) {
    layer_hook_ = layers;
    step_hook_ = phases;
  }
  // The cuDNN algorithms chosen per conv node: "fwd=..,bwd_data=..,bwd_weights=..", for the
  // planned batch; short_batch_algorithms for the short batch last trained ("" before one), and
  // its size (0 before one).
  std::string algorithms(int node) const;
  // The BatchNorm algorithm the training steps run ("own" or "cudnn").
  const std::string& batchnorm() const { return batchnorm_; }
  std::string short_batch_algorithms(int node) const;
  int64_t short_batch() const { return short_mb_; }
  // How the steps ran: "eager", "graph", or "eager: <why the capture failed>" after a
  // refused capture of a step (the steps from then on eager); a refused capture of evaluation's
  // forward pass leaves evaluations eager only, said as "graph; evaluation eager: <why>".
  // graph_launches() counts the steps launched as the captured graph, step_captures() the
  // captures made of it (again after a loaded optimizer state or a scratch reallocation),
  // evaluation_launches() the evaluations launched as theirs.
  std::string launch() const;
  int64_t graph_launches() const { return graph_launches_; }
  int64_t step_captures() const { return step_captures_; }
  int64_t evaluation_launches() const { return evaluation_launches_; }

 private:
  struct Node;
  struct Param;
  struct ConvPlans;
  void plan_node(int n, bool owns_gradient);
  std::unique_ptr<ConvPlans> plan_conv(Node& m, int n, int64_t mb);
  // Sizes every node's kernels for a batch of mb <= the planned one (see step()).
  void set_batch(int64_t mb);
  void reserve_workspace();
  static std::vector<float> batch_part(const Node& m, cuda::Buffer Node::*buffer);
  static std::string describe(const ConvPlans* plans);
  void route_gradients(const GradientRouting& routing);
  void forward(bool training);
  void forward_node(int n, bool training);
  void batchnorm_forward(Node& m, const float* x, float* y, bool training);
  void batchnorm_backward(Node& m, const float* x, const float* dy, float* dx);
  void mark(StepPhase phase, bool begin);
  // forward, loss (to loss_slot_), backward and the optimizer's update: the whole step, eager or
  // captured
  void queue_step(int64_t mb);
  cuda::CapturedWork* step_graph();  // the graph this step launches (null: eager; launch())
  cuda::CapturedWork* evaluation_graph();  // the same for an evaluation's forward pass
  void prepare_evaluation();
  void backward();
  void backward_node(int n);
  // Before each step, on the host: the first after planning or a loaded state allocates what
  // optimizer state is missing and uploads the table (cuda_kernels::update_table); every step
  // writes its coefficients (rate, Adam's bias corrections, SGD's first-step keep) into the
  // table's slot (cuda_kernels::set_coefficients), where the queued update reads them.
  void prepare_update();
  // One launch over every parameter (cuda_kernels::multi_*_update), its coefficients read from
  // the table's slot on the device, so that a captured step holds the update too.
  void queue_update();

  Graph& graph_;
  OptimizerOptions opt_;
  float lr_, label_smoothing_;
  bool deterministic_;
  CudaConvChoice choice_;
  std::string batchnorm_;  // "own" or "cudnn"
  bool cudnn_batchnorm_;   // batchnorm_ == "cudnn"
  int64_t steps_ = 0, mb_ = 0, classes_ = 0;
  int64_t batch_ = 0;     // the batch the nodes are sized for now (set_batch)
  int64_t short_mb_ = 0;  // the size the nodes' short-batch conv plans were made for (0: none)
  int64_t eval_ready_at_ = -1;  // steps_ when BatchNorm's evaluation maps were last computed
  std::vector<float> eval_input_;
  GraphHook* layer_hook_ = nullptr;
  StepHook* step_hook_ = nullptr;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Param>> params_;
  std::unique_ptr<cuda_kernels::UpdateTable> update_table_;  // null: made at the next update
  bool state_fresh_ = false;   // the state buffers were made, not loaded, and no step used them
  std::vector<cuda::Buffer> scratch_;  // fan-out edges' gradients (GradientRouting::scratch)
  std::vector<float> label_bits_;
  cuda::Buffer labels_;      // int32 labels as float bit patterns
  cuda::Buffer loss_slot_;   // the step's loss sum and correct count (cuda_kernels::read_loss)
  cuda::Buffer step_count_;  // steps_ as a uint64 for Dropout's draws (empty: no Dropout)
  // --launch graph: the captured step (and a recorded step's, with its hooks' marks, and
  // evaluation's), the full-batch steps seen, the launches, and why a step's or evaluation's
  // capture failed ("" while none has; each leaves only its own work eager).
  bool graph_launch_ = false;
  std::unique_ptr<cuda::CapturedWork> step_graph_, recorded_graph_, evaluation_graph_;
  int64_t full_steps_ = 0, graph_launches_ = 0, evaluation_launches_ = 0, step_captures_ = 0;
  std::string step_capture_failure_, evaluation_capture_failure_;
};

}  // namespace nnperf
