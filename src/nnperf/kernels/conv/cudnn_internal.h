// Shared by the cuDNN translation units (cudnn_cuda.cc, cudnn_engines_cuda.cc,
// cudnn_batchnorm_cuda.cc; CUDA builds with cudnn.h only): the loaded library and handle, status
// checks, and the graph-API engines of one convolution pass.
#pragma once
#include <cudnn.h>
#include <dlfcn.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"  // ConvPass

namespace nnperf::cudnn::detail {

// The loaded libcudnn (dlopen), or null when it is absent.
void* library();
// The process's handle, queueing on the calling thread's default stream; throws UsageError
// ("--device cuda: <reason>") when cuDNN is unusable.
cudnnHandle_t handle();
// cuDNN's name for a status ("CUDNN_STATUS_NOT_SUPPORTED").
std::string status_name(cudnnStatus_t status);
// Throws Error("<what>: <status name>") unless `s` is CUDNN_STATUS_SUCCESS.
void check(cudnnStatus_t s, const char* what);

// `f` = the entry point `name` of `lib`; when it is missing, `reason` (if still "") says so.
template <typename F>
bool resolve(void* lib, F& f, const char* name, std::string& reason) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f == nullptr && reason.empty()) reason = "libcudnn has no " + std::string(name);
  return f != nullptr;
}

// The three tensors of a convolution in a pass's roles: x (dx for backward-data), w (dw for
// backward-weights), y (dy for both backward passes); the pass writes one of them.
struct EngineTensors {
  const float* x = nullptr;
  const float* w = nullptr;
  const float* y = nullptr;
};

// cuDNN's graph (backend) API for one pass of an FP32 NCHW convolution (forward, backward-data or
// backward-weights): an operation graph of the pass, the engine configurations cuDNN's heuristics
// propose for it (mode A, then the fallback list), less those whose numerical notes say tensor
// cores (TF32 for FP32 data), down-converted inputs or reduced-precision reduction (so the math
// is FP32 FMA, as the legacy algorithms' and PyTorch's with TF32 off) and those compiled at run
// time; each made into an execution plan once and run by cudnnBackendExecute on the caller's
// buffers, overwriting the pass's output (beta 0). Names: "engine:<global index>.<n>", n counting
// that engine's configurations in the heuristics' order. Built from descriptors only: nothing
// runs until run().
class EngineSet {
 public:
  EngineSet(const ConvProblem& p, ConvPass pass);
  ~EngineSet();
  EngineSet(const EngineSet&) = delete;
  EngineSet& operator=(const EngineSet&) = delete;

  // "" when the operation graph and the heuristics worked, else cuDNN's refusal (then no names).
  const std::string& reason() const;
  const std::vector<std::string>& names() const;
  // "" when `name` is one of names(), else why not.
  std::string why_not(std::string_view name) const;
  std::size_t workspace_bytes(std::string_view name) const;
  // Whether the engine has no NONDETERMINISTIC numerical note (the same bits every run).
  bool deterministic(std::string_view name) const;
  // The pass by that plan on t, its workspace from workspace(workspace_bytes(name)) (a device
  // buffer of at least that many bytes; one lookup of the name for both). Pointers must be
  // 16-byte aligned (the tensors are described so; cudaMalloc's are). Each plan keeps the variant
  // pack (the pointers) of its last run and makes a new one only when they change, so repeated
  // eager runs on the same buffers do no descriptor work. Not thread-safe (neither is its owner).
  void run(std::string_view name, const EngineTensors& t, void* (*workspace)(std::size_t bytes));

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Whether `name` names a graph-API engine configuration ("engine:...").
inline bool is_engine(std::string_view name) { return name.starts_with("engine:"); }

}  // namespace nnperf::cudnn::detail
