// cuDNN's convolution algorithms (forward and both backward passes) on the CUDA device: the GPU
// rows of the conv profiler (cuDNN algorithm names as the CPU registry spells its own). cuDNN is
// loaded at run time (libcudnn.so.9, as the probe finds it), so nnperf starts and runs its CPU work
// where cuDNN or a GPU is missing; the CUDA backend's build compiles against cudnn.h for the types
// only. Numerics: NCHW float32, cross-correlation (PyTorch's convolution), FP32 math
// (CUDNN_FMA_MATH: no TF32 tensor-core rounding), groups and dilation as the problem says.
//
// Implemented in kernels/conv/cudnn_cuda.cc; without the CUDA backend cudnn_nocuda.cc answers
// "nnperf was built without the CUDA backend". Tests: tests/gpu/cudnn_conv_test.cc.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/conv/conv_backward.h"  // ConvPass

namespace nnperf::cudnn {

// cuDNN's forward algorithms in cudnnConvolutionFwdAlgo_t order, by nnperf's names:
// implicit_gemm, implicit_precomp_gemm, gemm, direct, fft, fft_tiling, winograd,
// winograd_nonfused.
std::span<const char* const> forward_algorithms();
// The backward passes' algorithms in cudnnConvolutionBwdDataAlgo_t / BwdFilterAlgo_t order:
// data: algo_0, algo_1, fft, fft_tiling, winograd, winograd_nonfused; weights (cuDNN's
// "filter"): algo_0, algo_1, fft, algo_3, winograd (never implemented by cuDNN: refused by its
// workspace query like any unsupported one), winograd_nonfused, fft_tiling. kForward: the above.
std::span<const char* const> algorithms(ConvPass pass);
// The entry of algorithms(pass) that `name` names under the project's name rule
// (core/name_registry.h: "Implicit-GEMM" is implicit_gemm), or null.
const char* find_algorithm(ConvPass pass, std::string_view name);
// find_algorithm's entry as a string, or UsageError naming `flag` and listing the pass's names.
std::string checked_algorithm(ConvPass pass, std::string_view flag, std::string_view name);

// "" when cuDNN can run here (a CUDA device and libcudnn loaded, a handle created); else one line
// saying why. Probed once.
const std::string& unavailable_reason();
inline bool available() { return unavailable_reason().empty(); }
// cuDNN's version ("9.14.0"), or "" when it is not loaded.
std::string version();

// How the caller launches its convolutions, which find times the candidates as: each call made
// at every run (its host work can leave the GPU waiting when kernels are short), or captured once
// into a CUDA graph (cuda::CapturedWork: the GPU's time alone). The two can rank differently:
// on an H200 at batch 1, implicit_precomp_gemm ran ResNet-50's 1x1 layers in 0.010-0.020 ms as a
// graph and 0.08-0.28 ms called eagerly, where implicit_gemm or fft_tiling took 0.03-0.11 ms.
enum class Launch { kEager, kGraph };
const char* to_string(Launch launch);

// What find times, and how it launches the candidates.
struct FindOptions {
  std::size_t max_workspace_bytes = std::size_t{1} << 30;  // candidates needing more are not run
  Launch launch = Launch::kEager;
  // cuDNN's graph-API engine configurations of the pass (ConvForward::engines,
  // ConvBackward::engines) are candidates beside its legacy algorithms, timed by nnperf as
  // launched (cuDNN's legacy find never runs them). Off by default: docs/gpu.md says how far they
  // have been checked on a GPU.
  bool engines = false;
};
// The options as one key ("1073741824/graph", "1073741824/graph/engines"), for find's cache.
std::string to_string(const FindOptions& o);

// One algorithm as cudnnFindConvolutionForwardAlgorithmEx or
// cudnnGetConvolutionForwardAlgorithm_v7 reports it.
struct AlgoResult {
  std::string algorithm;
  std::string status;  // "CUDNN_STATUS_SUCCESS" or cuDNN's refusal
  double ms = 0;       // find: nnperf's timing of the call as launched (median of 5); guess: 0
  std::size_t workspace_bytes = 0;
  // cuDNN's CUDNN_DETERMINISTIC for this algorithm and problem (an engine: no NONDETERMINISTIC
  // numerical note)
  bool deterministic = false;
  double cudnn_ms = 0;  // find: cuDNN's own timing (0 when not timed again, and for engines)
};

// cuDNN's find ranking per problem, pass and FindOptions, kept for the process: `find`
// runs only the first time a key is asked for (a model's repeated layer shapes are timed once, as
// the CPU's find cache does); later askers get the same ranking. Thread-safe; `find` may throw, and
// then nothing is kept. Implemented in cudnn_find_cache.cc (no CUDA needed).
std::vector<AlgoResult> cached_find(const ConvProblem& p, ConvPass pass, const FindOptions& o,
                                    const std::function<std::vector<AlgoResult>()>& find);
// How many rankings the cache holds, and how many askers it answered without running find.
struct FindCacheStats {
  std::size_t entries = 0, hits = 0;
};
FindCacheStats find_cache_stats();

// The workspace every ConvForward and ConvBackward of the process shares, made now exactly
// `bytes` long (a plan's largest need, before a CUDA graph captures its convolutions): grown, or
// shrunk where find's candidates had grown it further (so the memory a plan reports is what it
// holds). Either way a new buffer moves cuda::scratch_generation(), and a graph captured on the
// old one must be captured again.
void fit_workspace(std::size_t bytes);

// One problem on the device: descriptors and device tensors made once, then any algorithm run on
// them. Throws Error naming cuDNN's status on a failed call; UsageError("--device cuda: ...")
// when cuDNN is unavailable.
class ConvForward {
 public:
  // src [mb, ic, ih, iw] and wei [oc, ic/g, kh, kw], uploaded once.
  ConvForward(const ConvProblem& p, std::span<const float> src, std::span<const float> wei);
  // The weights only: input and output are the caller's device buffers (find_on, run_on), as in
  // a whole model on the device (nn/cuda_inference.h); find, run and output refuse.
  ConvForward(const ConvProblem& p, std::span<const float> wei);
  ~ConvForward();
  ConvForward(const ConvForward&) = delete;
  ConvForward& operator=(const ConvForward&) = delete;

  // "" when cuDNN can serve `algorithm` for this problem (its workspace query succeeds), else
  // cuDNN's status; an unknown name throws UsageError listing forward_algorithms().
  std::string why_not(std::string_view algorithm);
  std::size_t workspace_bytes(std::string_view algorithm);
  // cudnnGetConvolutionForwardAlgorithm_v7's ranking (heuristics, nothing run), best first.
  std::vector<AlgoResult> guess();
  // cuDNN's graph (backend) API for this problem: the FP32 engine configurations its heuristics
  // propose (mode A, then the fallback list; no TF32 tensor cores, none compiled at run time),
  // each an execution plan made once, named "engine:<global index>.<n>"; every call that takes
  // an algorithm name takes these too (why_not, workspace_bytes, run, run_on, run_with). Made at
  // the first call; engines_reason() says why there are none. Candidates of find with
  // FindOptions::engines; bench conv2d --engines times them beside the legacy algorithms.
  std::vector<std::string> engines();
  std::string engines_reason();
  // cudnnFindConvolutionForwardAlgorithmEx: every algorithm run and timed by cuDNN on this
  // problem's tensors with a workspace of at most o.max_workspace_bytes; with o.engines, the
  // engine configurations within that workspace join them (each run once first: one that fails
  // keeps its error as status, untimed). The ones served are then timed again by nnperf,
  // launched as o.launch says (median of 5 rounds alternating them; cuDNN times each once and
  // its figures misranked batch-1 layers either way), and ranked fastest first by that, the
  // refused ones after.
  std::vector<AlgoResult> find(const FindOptions& o = {});
  std::vector<AlgoResult> find_on(const FindOptions& o, const float* src, float* dst);
  // Queues one forward pass (dst = conv(src, wei)) with `algorithm`. Every ConvForward and
  // ConvBackward of the process shares one cuDNN workspace (they run on one stream), grown when a
  // run asks for more and made exactly a plan's need by fit_workspace; each algorithm's
  // workspace size is asked of cuDNN once.
  void run(std::string_view algorithm);
  // The same on device buffers src [mb, ic, ih, iw] and dst [mb, oc, oh, ow]; run_with also
  // takes the weights from a device buffer (training, where they change every step).
  void run_on(std::string_view algorithm, const float* src, float* dst);
  void run_with(std::string_view algorithm, const float* src, const float* wei, float* dst);
  // Frees the weights uploaded at construction, for a caller that from now on runs only with
  // its own (run_with: the GPU trainer, whose plans would otherwise hold a second copy of every
  // convolution's weights); find, find_on, run and run_on refuse after it.
  void release_weights();
  // The output [mb, oc, oh, ow] once the queued work has finished.
  std::vector<float> output();

 private:
  const float* own_weights() const;  // the uploaded weights; Error once released
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One problem's backward pass on the device, as ConvForward: descriptors and device tensors made
// once, then any of the pass's algorithms run on them. kBackwardData: dx [mb, ic, ih, iw] from
// w [oc, ic/g, kh, kw] and dy [mb, oc, oh, ow]; kBackwardWeights: dw from x and dy.
class ConvBackward {
 public:
  // `first` is w for backward-data, x for backward-weights; both uploaded once.
  ConvBackward(const ConvProblem& p, ConvPass pass, std::span<const float> first,
               std::span<const float> dy);
  // Descriptors only: every tensor is the caller's device buffer (find_on, run_on); find, run and
  // output refuse.
  ConvBackward(const ConvProblem& p, ConvPass pass);
  ~ConvBackward();
  ConvBackward(const ConvBackward&) = delete;
  ConvBackward& operator=(const ConvBackward&) = delete;

  std::string why_not(std::string_view algorithm);  // as ConvForward::why_not
  std::size_t workspace_bytes(std::string_view algorithm);
  std::vector<AlgoResult> guess();  // cudnnGetConvolutionBackward{Data,Filter}Algorithm_v7
  // The pass's graph-API engine configurations, as ConvForward::engines (the operation graph of
  // the backward-data or backward-filter convolution); every call that takes an algorithm name
  // takes these too.
  std::vector<std::string> engines();
  std::string engines_reason();
  // ...FindAlgorithmEx (and with o.engines the engines), re-timed as ConvForward::find.
  std::vector<AlgoResult> find(const FindOptions& o = {});
  void run(std::string_view algorithm);
  std::vector<float> output();  // dx or dw, once the queued work has finished
  // On the caller's device buffers: first (w or x), dy, and out (dx or dw, overwritten).
  std::vector<AlgoResult> find_on(const FindOptions& o, const float* first, const float* dy,
                                  float* out);
  void run_on(std::string_view algorithm, const float* first, const float* dy, float* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Algorithm selection (kernels/conv/cudnn_choice.cc; no CUDA needed), as
// kernels/conv/conv_dispatch.h chooses on the CPU.

// What one conv layer's forward pass runs: the algorithm, why the one asked for was not taken
// ("" when it was, or when guess or find chose), and its workspace.
struct ForwardChoice {
  std::string algorithm, fallback_reason;
  std::size_t workspace_bytes = 0;
};
// The forward algorithm for conv layer `who` (problem p): `asked` (one of forward_algorithms())
// when cuDNN serves it, else cuDNN's guess with the reason (an Error when strict); "guess": the
// first that cudnnGetConvolutionForwardAlgorithm_v7 ranks and cuDNN serves; "find": the fastest
// of cudnnFindConvolutionForwardAlgorithmEx (and what `find` adds) on x and y (device buffers of
// the layer's input and output), run the first time p is asked for in the process (cached_find).
ForwardChoice choose_forward(ConvForward& conv, const ConvProblem& p, const std::string& who,
                             const std::string& asked, bool strict, const float* x, float* y,
                             const FindOptions& find);
// A backward pass's algorithm: `asked` (a name of algorithms(pass), guess or find) where cuDNN
// serves it, else the first that guess (or find, once per problem: cached_find, on first, dy and
// out) ranks; with `deterministic`, only those cuDNN marks deterministic. Error when none serves.
std::string choose_backward(ConvBackward& c, const ConvProblem& p, ConvPass pass,
                            const std::string& asked, bool deterministic, const FindOptions& find,
                            const float* first, const float* dy, float* out);

}  // namespace nnperf::cudnn
