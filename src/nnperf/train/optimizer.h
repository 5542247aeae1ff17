// Optimizers: SGD with momentum (PyTorch semantics) and Adam (bias-corrected, PyTorch semantics).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/kernels/adam.h"
#include "nnperf/kernels/multi_tensor_update.h"
#include "nnperf/nn/layer.h"

namespace nnperf {

struct OptimizerOptions {
  std::string name = "adam";  // a row of optimizer_registry()
  // Doubles as the user typed them (run records show 0.001, not 0.0010000000474974513); the
  // update loops use float copies.
  double lr = 1e-3;
  double momentum = 0.9;      // sgd
  double weight_decay = 0.0;  // L2 added to the gradient (both, as torch.optim.SGD/Adam)
  bool nesterov = false;      // sgd
  float beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;  // adam
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual std::string name() const = 0;
  // One update of every parameter from its grad. The parameter list must be the same (same order,
  // same shapes) on every call; state is created on the first call.
  virtual void step(std::span<const Param> params) = 0;
  void set_lr(float lr) { lr_ = lr; }
  // Threads the update may use (element-wise: the same floats on any number).
  void set_threads(int threads) { threads_ = threads > 1 ? threads : 1; }
  float lr() const { return lr_; }
  int64_t steps() const { return steps_; }
  // State for checkpoints: named buffers and the step counter. Names are torch.optim's state
  // keys with the parameter index: "momentum_buffer.<i>" (sgd, momentum > 0), "exp_avg.<i>" and
  // "exp_avg_sq.<i>" (adam). load_state checks the names; shapes are checked on the next step.
  virtual std::vector<std::pair<std::string, const Tensor*>> state() const = 0;
  virtual void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                          int64_t steps) = 0;

 protected:
  float lr_ = 1e-3f;
  int64_t steps_ = 0;
  int threads_ = 1;
};

// The coefficients of Adam's step number t (1 for the first) at learning rate lr: the CPU
// optimizer and the GPU trainer (train/cuda_mlp) take the same step.
AdamCoefficients adam_coefficients(const OptimizerOptions& options, float lr, int64_t t);
// The same for SGD: the momentum buffer is the gradient on the step that creates it (fresh_state:
// keep 0), as torch.optim.SGD's with dampening 0; a buffer loaded from a checkpoint is kept even
// at step 0, as the CPU optimizer does.
SgdCoefficients sgd_coefficients(const OptimizerOptions& options, float lr, bool fresh_state);

// The optimizers, one row each: the name (core/name_registry.h's rule), what it does, and its
// maker (which checks the options only it reads).
struct OptimizerEntry {
  const char* name;
  const char* summary;
  std::unique_ptr<Optimizer> (*make)(const OptimizerOptions&);
};
std::span<const OptimizerEntry> optimizer_registry();
// The row `name` names; UsageError "unknown optimizer 'x': expected sgd or adam" otherwise.
const OptimizerEntry& find_optimizer(std::string_view name);

// Throws UsageError for an unknown name ("expected sgd or adam") or out-of-range options.
std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& options);
// Buffers of each parameter's size the optimizer keeps: adam 2 (exp_avg, exp_avg_sq), SGD 1 with
// momentum (the momentum buffer), else 0.
int optimizer_state_copies(const OptimizerOptions& options);
// The options checked as make_optimizer checks them, with the name as the optimizer reports it
// ("sgd" or "adam", whatever spelling the name rule accepted): what code that compares names reads.
OptimizerOptions checked_optimizer(const OptimizerOptions& options);

}  // namespace nnperf
