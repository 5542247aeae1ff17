// MLP training on a CUDA device: the Linear -> activation -> ... -> Linear chain of an MLP graph
// (models/mlp; a leading Flatten is a no-op on [mb, features] rows) with its weights, gradients,
// activations and optimizer state in device memory, the GEMMs run by a device row of the GEMM
// registry (`cuda`, our tiled kernel, or `cublas`) and everything else by the GPU kernels of
// kernels/cuda_kernels.h. The step is the CPU Trainer's (train/trainer.h): forward, softmax
// cross-entropy (mean over the batch, label smoothing), backward, then torch.optim's SGD or Adam
// update with the same coefficients (adam_coefficients), so the two agree to float rounding.
//
// Synchronisation: the loss comes back to the host once per step (as a PyTorch loop's
// loss.item()); step() and forward() also wait for the rest of their work before returning, so
// a host clock around them measures the whole iteration. Nothing here reads a clock.
//
// The host code is built in every configuration; without the CUDA backend (or a device) the
// constructor throws the reason (gpu/cuda.h). Tests: tests/gpu/cuda_mlp_test.cc against the CPU
// Trainer on the same weights and batches.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nnperf/data/dataset.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/nn/graph.h"
#include "nnperf/train/optimizer.h"
#include "nnperf/train/trainer.h"

namespace nnperf {

namespace cuda_kernels {
struct UpdateTable;
}

class CudaMlpTrainer {
 public:
  // Copies the graph's parameters to the device (the graph is left as it is; download_params()
  // writes the device's values back). Throws UsageError naming the node when a layer is neither
  // Linear, activation nor a leading Flatten, when `gemm` is not a device row, or when no device
  // is usable (the reason, prefixed by "--device cuda").
  CudaMlpTrainer(Graph& graph, const GemmAlgorithm& gemm, const OptimizerOptions& optimizer,
                 float label_smoothing = 0.0f);
  ~CudaMlpTrainer();
  CudaMlpTrainer(const CudaMlpTrainer&) = delete;
  CudaMlpTrainer& operator=(const CudaMlpTrainer&) = delete;

  // One training step on x ([mb, features] or [mb, 1, H, W] with H*W = features) and labels in
  // [0, classes), queued whole and synchronised once at its end, when the loss comes back.
  // Throws DivergenceError, naming the step, when the loss is not finite (the update has run).
  BatchResult step(const Tensor& x, std::span<const int32_t> labels);
  // The forward pass alone (mlp-bench's forward timing); returns when it has finished.
  void forward(const Tensor& x);
  // Forward and loss, no update.
  BatchResult evaluate(const Tensor& x, std::span<const int32_t> labels);
  BatchResult evaluate(const Dataset& data, int64_t batch_size);

  // Called around each node's kernels with the graph's node ids (Phase::kForward in every
  // forward pass, kBackward in step()), so a LayerProfiler over a CUDA event timer
  // (cuda::make_event_timer) times the layers on the device's stream without synchronising;
  // null: none.
  void set_hook(GraphHook* hook) { hook_ = hook; }
  void set_lr(float lr) { lr_ = lr; }
  float lr() const { return lr_; }
  int64_t steps() const { return steps_; }
  const GemmAlgorithm& gemm() const { return gemm_; }
  // The device's weights and biases into the graph's Linear layers.
  void download_params();
  // The logits of the last forward pass ([mb, classes]), copied to the host.
  Tensor logits() const;

 private:
  struct Dense;
  struct Node;
  void ensure_batch(int64_t mb);
  void upload_batch(const Tensor& x, std::span<const int32_t> labels);
  void run_forward();
  void queue_loss(bool want_grad);  // into loss_slot_
  // The queued loss, once the queued work has finished; DivergenceError when it is not finite
  // (`step`: the 1-based step it came from, 0 in evaluation).
  BatchResult read_loss(int64_t step) const;
  void run_backward();
  // This step's coefficients into the update table's slot (cuda_kernels::set_coefficients).
  void set_update_coefficients();
  void update();  // one launch over every weight and bias (cuda_kernels::multi_*_update)

  const GemmAlgorithm& gemm_;
  OptimizerOptions opt_;
  float lr_;
  float label_smoothing_;
  int64_t features_ = 0, classes_ = 0, mb_ = 0, capacity_ = 0, steps_ = 0;
  std::vector<Dense> dense_;
  std::vector<Node> nodes_;  // in forward order, Flatten dropped
  std::unique_ptr<cuda_kernels::UpdateTable> update_table_;
  cuda::Buffer x_, labels_;  // labels_ holds int32 bit patterns
  cuda::Buffer loss_slot_;   // cuda_kernels::kLossSlotFloats: the last loss queued
  std::vector<float> label_bits_;
  GraphHook* hook_ = nullptr;
};

}  // namespace nnperf
