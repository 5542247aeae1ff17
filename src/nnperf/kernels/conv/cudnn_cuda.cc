// cuDNN's convolutions, forward and both backward passes (kernels/conv/cudnn_conv.h): libcudnn
// loaded with dlopen and its legacy convolution API (cuDNN 9's libcudnn.so.9 forwards it to
// libcudnn_cnn) resolved by name; cudnn.h gives the types and constants only (a CUDA build without
// it compiles cudnn_nocuda.cc instead, CMakeLists.txt).
#include <cudnn.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/gpu/probe.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/kernels/conv/cudnn_internal.h"

namespace nnperf::cudnn {

namespace {

// The entry points used, resolved from the loaded library.
struct Api {
  void* lib = nullptr;
  decltype(&cudnnGetVersion) GetVersion = nullptr;
  decltype(&cudnnGetErrorString) GetErrorString = nullptr;
  decltype(&cudnnCreate) Create = nullptr;
  decltype(&cudnnDestroy) Destroy = nullptr;
  decltype(&cudnnSetStream) SetStream = nullptr;
  decltype(&cudnnCreateTensorDescriptor) CreateTensorDescriptor = nullptr;
  decltype(&cudnnSetTensor4dDescriptor) SetTensor4dDescriptor = nullptr;
  decltype(&cudnnDestroyTensorDescriptor) DestroyTensorDescriptor = nullptr;
  decltype(&cudnnCreateFilterDescriptor) CreateFilterDescriptor = nullptr;
  decltype(&cudnnSetFilter4dDescriptor) SetFilter4dDescriptor = nullptr;
  decltype(&cudnnDestroyFilterDescriptor) DestroyFilterDescriptor = nullptr;
  decltype(&cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor = nullptr;
  decltype(&cudnnSetConvolution2dDescriptor) SetConvolution2dDescriptor = nullptr;
  decltype(&cudnnSetConvolutionGroupCount) SetConvolutionGroupCount = nullptr;
  decltype(&cudnnSetConvolutionMathType) SetConvolutionMathType = nullptr;
  decltype(&cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor = nullptr;
  decltype(&cudnnGetConvolution2dForwardOutputDim) GetConvolution2dForwardOutputDim = nullptr;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) GetConvolutionForwardWorkspaceSize = nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithmMaxCount) GetConvolutionForwardAlgorithmMaxCount =
      nullptr;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) GetConvolutionForwardAlgorithm_v7 = nullptr;
  decltype(&cudnnFindConvolutionForwardAlgorithmEx) FindConvolutionForwardAlgorithmEx = nullptr;
  decltype(&cudnnConvolutionForward) ConvolutionForward = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataWorkspaceSize) GetBwdDataWorkspaceSize = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithmMaxCount) GetBwdDataAlgorithmMaxCount = nullptr;
  decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) GetBwdDataAlgorithm_v7 = nullptr;
  decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) FindBwdDataAlgorithmEx = nullptr;
  decltype(&cudnnConvolutionBackwardData) ConvolutionBackwardData = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterWorkspaceSize) GetBwdFilterWorkspaceSize = nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithmMaxCount) GetBwdFilterAlgorithmMaxCount =
      nullptr;
  decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) GetBwdFilterAlgorithm_v7 = nullptr;
  decltype(&cudnnFindConvolutionBackwardFilterAlgorithmEx) FindBwdFilterAlgorithmEx = nullptr;
  decltype(&cudnnConvolutionBackwardFilter) ConvolutionBackwardFilter = nullptr;
  cudnnHandle_t handle = nullptr;
  std::string reason;  // "" when usable
};

template <typename F>
bool resolve(Api& a, F& f, const char* name) {
  return detail::resolve(a.lib, f, name, a.reason);
}

Api load() {
  Api a;
  std::string file, errors;
  a.lib = dlopen_first({"libcudnn.so.9", "libcudnn.so"}, &file, &errors);
  if (a.lib == nullptr) {
    a.reason = "no cuDNN (" + errors + ")";
    return a;
  }
  // Built against cuDNN 9's enums (algorithm lists, backend attributes, numerical notes):
  // `libcudnn.so` may be another major version, which is named before any entry point it lacks.
  if (resolve(a, a.GetVersion, "cudnnGetVersion")) {
    if (const auto v = static_cast<long long>(a.GetVersion()); v / 10000 != 9) {
      a.reason =
          fmt::format("cuDNN {} found, but nnperf is built for cuDNN 9", cudnn_version_string(v));
      return a;
    }
  }
  resolve(a, a.GetErrorString, "cudnnGetErrorString");
  resolve(a, a.Create, "cudnnCreate");
  resolve(a, a.SetStream, "cudnnSetStream");
  resolve(a, a.Destroy, "cudnnDestroy");
  resolve(a, a.CreateTensorDescriptor, "cudnnCreateTensorDescriptor");
  resolve(a, a.SetTensor4dDescriptor, "cudnnSetTensor4dDescriptor");
  resolve(a, a.DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor");
  resolve(a, a.CreateFilterDescriptor, "cudnnCreateFilterDescriptor");
  resolve(a, a.SetFilter4dDescriptor, "cudnnSetFilter4dDescriptor");
  resolve(a, a.DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor");
  resolve(a, a.CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor");
  resolve(a, a.SetConvolution2dDescriptor, "cudnnSetConvolution2dDescriptor");
  resolve(a, a.SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount");
  resolve(a, a.SetConvolutionMathType, "cudnnSetConvolutionMathType");
  resolve(a, a.DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor");
  resolve(a, a.GetConvolution2dForwardOutputDim, "cudnnGetConvolution2dForwardOutputDim");
  resolve(a, a.GetConvolutionForwardWorkspaceSize, "cudnnGetConvolutionForwardWorkspaceSize");
  resolve(a, a.GetConvolutionForwardAlgorithmMaxCount,
          "cudnnGetConvolutionForwardAlgorithmMaxCount");
  resolve(a, a.GetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
  resolve(a, a.FindConvolutionForwardAlgorithmEx, "cudnnFindConvolutionForwardAlgorithmEx");
  resolve(a, a.ConvolutionForward, "cudnnConvolutionForward");
  resolve(a, a.GetBwdDataWorkspaceSize, "cudnnGetConvolutionBackwardDataWorkspaceSize");
  resolve(a, a.GetBwdDataAlgorithmMaxCount, "cudnnGetConvolutionBackwardDataAlgorithmMaxCount");
  resolve(a, a.GetBwdDataAlgorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
  resolve(a, a.FindBwdDataAlgorithmEx, "cudnnFindConvolutionBackwardDataAlgorithmEx");
  resolve(a, a.ConvolutionBackwardData, "cudnnConvolutionBackwardData");
  resolve(a, a.GetBwdFilterWorkspaceSize, "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  resolve(a, a.GetBwdFilterAlgorithmMaxCount, "cudnnGetConvolutionBackwardFilterAlgorithmMaxCount");
  resolve(a, a.GetBwdFilterAlgorithm_v7, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
  resolve(a, a.FindBwdFilterAlgorithmEx, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
  resolve(a, a.ConvolutionBackwardFilter, "cudnnConvolutionBackwardFilter");
  if (!a.reason.empty()) return a;
  // The library and every entry point first (checkable on a machine without a GPU), then the
  // device the handle needs.
  if (!cuda::available()) {
    a.reason = cuda::unavailable_reason();
    return a;
  }
  if (const cudnnStatus_t s = a.Create(&a.handle); s != CUDNN_STATUS_SUCCESS) {
    a.reason = fmt::format("cudnnCreate: {}", a.GetErrorString(s));
    a.handle = nullptr;
  } else if (const cudnnStatus_t t = a.SetStream(a.handle, cudaStreamPerThread);
             t != CUDNN_STATUS_SUCCESS) {
    // The calling thread's default stream, as our kernels' (capturable into a CUDA graph).
    a.reason = fmt::format("cudnnSetStream: {}", a.GetErrorString(t));
  }
  return a;
}

Api& api() {
  static Api a = load();  // the handle lives as long as the process (the driver tears down last)
  return a;
}

Api& usable() {
  Api& a = api();
  if (!a.reason.empty()) throw UsageError("--device cuda: " + a.reason);
  return a;
}

using detail::check;

int narrow(int64_t v) { return static_cast<int>(v); }  // ConvProblem terms are below 2^24

}  // namespace

const std::string& unavailable_reason() { return api().reason; }

namespace detail {
void* library() { return api().lib; }
cudnnHandle_t handle() { return usable().handle; }
std::string status_name(cudnnStatus_t status) { return api().GetErrorString(status); }
void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error(fmt::format("{}: {}", what, status_name(s)));
}
}  // namespace detail

std::string version() {
  const Api& a = api();
  if (a.GetVersion == nullptr) return "";
  return cudnn_version_string(static_cast<long long>(a.GetVersion()));
}

namespace {

// The tensor, filter and convolution descriptors of one problem (every pass uses the same four).
struct Descriptors {
  ConvProblem p;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  // Each algorithm's workspace (by its index in the pass's list), asked of cuDNN once: the
  // descriptors never change, and the query costs host time on every run otherwise (a pass at
  // batch 1 is bound by the host's launches).
  std::array<std::optional<std::size_t>, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> workspace_of;
  static_assert(static_cast<int>(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT) <=
                    static_cast<int>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT) &&
                static_cast<int>(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT) <=
                    static_cast<int>(CUDNN_CONVOLUTION_FWD_ALGO_COUNT));
  // The workspace of algorithm k, from `query` (bytes -> cuDNN's status) the first time.
  template <typename Query>
  std::size_t remembered_workspace(int k, Query query, const char* what) {
    std::optional<std::size_t>& known = workspace_of.at(static_cast<std::size_t>(k));
    if (!known) {
      std::size_t bytes = 0;
      check(query(&bytes), what);
      known = bytes;
    }
    return *known;
  }
  ConvPass pass = ConvPass::kForward;
  std::unique_ptr<detail::EngineSet> engine_set;  // the pass's graph-API plans, made on first use
  detail::EngineSet& engines() {
    if (!engine_set) engine_set = std::make_unique<detail::EngineSet>(p, pass);
    return *engine_set;
  }
  // `names` (find's served legacy algorithms) and, with o.engines, the engines' names after them.
  std::vector<std::string> with_engines(std::vector<std::string> names, const FindOptions& o) {
    if (o.engines) {
      const std::vector<std::string>& e = engines().names();
      names.insert(names.end(), e.begin(), e.end());
    }
    return names;
  }
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    Api& a = api();
    if (x != nullptr) a.DestroyTensorDescriptor(x);
    if (y != nullptr) a.DestroyTensorDescriptor(y);
    if (w != nullptr) a.DestroyFilterDescriptor(w);
    if (conv != nullptr) a.DestroyConvolutionDescriptor(conv);
  }
  void set(const ConvProblem& problem);
};

void Descriptors::set(const ConvProblem& problem) {
  Api& a = usable();
  p = problem;
  check(a.CreateTensorDescriptor(&x), "cudnnCreateTensorDescriptor");
  check(a.CreateTensorDescriptor(&y), "cudnnCreateTensorDescriptor");
  check(a.CreateFilterDescriptor(&w), "cudnnCreateFilterDescriptor");
  check(a.CreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor");
  check(a.SetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, narrow(p.mb), narrow(p.ic),
                                narrow(p.ih), narrow(p.iw)),
        "cudnnSetTensor4dDescriptor (input)");
  check(a.SetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, narrow(p.oc),
                                narrow(p.icg()), narrow(p.kh), narrow(p.kw)),
        "cudnnSetFilter4dDescriptor");
  check(a.SetConvolution2dDescriptor(conv, narrow(p.ph), narrow(p.pw), narrow(p.sh), narrow(p.sw),
                                     narrow(p.dh), narrow(p.dw), CUDNN_CROSS_CORRELATION,
                                     CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(a.SetConvolutionGroupCount(conv, narrow(p.g)), "cudnnSetConvolutionGroupCount");
  check(a.SetConvolutionMathType(conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  int n = 0, c = 0, h = 0, wd = 0;
  check(a.GetConvolution2dForwardOutputDim(conv, x, w, &n, &c, &h, &wd),
        "cudnnGetConvolution2dForwardOutputDim");
  if (n != p.mb || c != p.oc || h != p.oh() || wd != p.ow()) {
    fail("cuDNN conv {}: output {}x{}x{}x{}, expected {}x{}x{}x{}", p.str(), n, c, h, wd, p.mb,
         p.oc, p.oh(), p.ow());
  }
  check(a.SetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, wd),
        "cudnnSetTensor4dDescriptor (output)");
}

// cuDNN's perf results (any pass's AlgoPerf_t) as AlgoResults under the pass's names.
template <typename Perf>
std::vector<AlgoResult> results_of(const Perf* perf, int n, std::span<const char* const> names) {
  std::vector<AlgoResult> out;
  for (int i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(perf[i].algo);
    out.push_back({k < names.size() ? names[k] : fmt::format("algo_{}", k),
                   api().GetErrorString(perf[i].status),
                   perf[i].status == CUDNN_STATUS_SUCCESS ? static_cast<double>(perf[i].time) : 0.0,
                   perf[i].memory, perf[i].determinism == CUDNN_DETERMINISTIC});
  }
  return out;
}

// cuDNN's find times each algorithm once, and on an H200 at batch 1 its ranking put
// implicit_gemm first on VGG-16 and ResNet-50 layers where implicit_precomp_gemm ran in up to half
// its time as a CUDA graph; ranked as graphs, implicit_precomp_gemm came first on ResNet-50's 1x1
// layers, where called eagerly it ran 2.3-3.6x slower than the fastest algorithm (bench conv2d,
// 2026-11-26): the launch decides the ranking. So find's served candidates are
// timed again as the caller launches them (`launch`: each call made between the events, or
// captured once as a CUDA graph and launched), once untimed, then kFindRounds rounds alternating
// them between CUDA events (cuda::time_alternately); ranked by the median, cuDNN's own figure kept
// in cudnn_ms. Candidates needing more workspace than `limit` are left where cuDNN put them, after
// the timed ones: both cuDNN's figure for a candidate and what a run of it asks for
// (`workspace_of`, the workspace-size query run() sizes the workspace by) must fit, so that no
// timed run grows the shared workspace under the graphs captured for the others.
constexpr int kFindRounds = 5;

std::vector<AlgoResult> retimed(std::vector<AlgoResult> found, std::size_t limit, Launch launch,
                                const std::function<std::size_t(const std::string&)>& workspace_of,
                                const std::function<void(std::string_view)>& run) {
  std::vector<AlgoResult> timed, rest;
  for (AlgoResult& r : found) {
    const bool ok = r.status == "CUDNN_STATUS_SUCCESS" && r.workspace_bytes <= limit &&
                    workspace_of(r.algorithm) <= limit;
    (ok ? timed : rest).push_back(std::move(r));
  }
  if (timed.empty()) return rest;
  std::vector<std::vector<double>> ms = cuda::time_alternately(
      static_cast<int>(timed.size()),
      [&](int i) { run(timed[static_cast<std::size_t>(i)].algorithm); }, launch == Launch::kGraph,
      1, kFindRounds);
  for (std::size_t i = 0; i < timed.size(); ++i) {
    std::vector<double>& v = ms[i];
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    timed[i].cudnn_ms = timed[i].ms;
    timed[i].ms = v[v.size() / 2];
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const AlgoResult& a, const AlgoResult& b) { return a.ms < b.ms; });
  for (AlgoResult& r : rest) timed.push_back(std::move(r));
  return timed;
}

// The position of `name` in the pass's list; UsageError listing them when absent.
int pass_algo_index(ConvPass pass, std::string_view name) {
  const char* row = find_algorithm(pass, name);
  const auto names = algorithms(pass);
  if (row == nullptr) {
    throw UsageError(fmt::format("unknown cuDNN {} algorithm '{}'; expected one of: {}",
                                 to_string(pass), name, fmt::join(names, ", ")));
  }
  return static_cast<int>(std::find(names.begin(), names.end(), row) - names.begin());
}

// One workspace for every convolution of the process: all of them are queued on one stream, so
// no two use it at once, and the largest need is held once (as PyTorch's cuDNN workspace) instead
// of once per layer and pass. A run or find that needs more grows it; fit_workspace makes it
// exactly a plan's largest need (shrinking what find's candidates grew). A new buffer frees the
// old one, which waits for the work queued on it (cudaFree synchronises with the device).
cuda::Buffer& shared_workspace() {
  static cuda::Buffer workspace;
  return workspace;
}

cuda::Buffer& workspace_of_at_least(std::size_t bytes) {
  cuda::Buffer& w = shared_workspace();
  cuda::grow_scratch(w, (bytes + sizeof(float) - 1) / sizeof(float));
  return w;
}

// The shared workspace's address after growing it to at least `bytes`.
void* workspace_for(std::size_t bytes) { return workspace_of_at_least(bytes).data(); }

// The workspace find gives its candidates: the most any of `names` needs, up to `limit`.
template <typename Bytes>
std::size_t find_workspace(const std::vector<std::string>& names, std::size_t limit, Bytes bytes) {
  std::size_t ws = 0;
  for (const std::string& n : names) ws = std::max(ws, std::min(bytes(n), limit));
  return ws;
}

// Engine `name` of `e` as a candidate of find within `have` bytes of workspace: run once on t
// (and captured once, for a graph launch), so that one cuDNN finalized but will not run, or a
// capture refuses, keeps its error as status and is left untimed instead of failing the find.
AlgoResult engine_candidate(detail::EngineSet& e, const std::string& name, std::size_t have,
                            Launch launch, const detail::EngineTensors& t) {
  AlgoResult r{name, "CUDNN_STATUS_SUCCESS", 0, e.workspace_bytes(name), e.deterministic(name)};
  if (r.workspace_bytes > have) {
    r.status =
        fmt::format("needs {} bytes of workspace, more than find's {}", r.workspace_bytes, have);
    return r;
  }
  const auto queue = [&] { e.run(name, t, workspace_for); };
  try {
    queue();
    if (launch == Launch::kGraph) cuda::CapturedWork().capture(queue);
  } catch (const Error& err) {
    r.status = err.what();
  }
  return r;
}

// find's candidates after cuDNN's own: each engine among `names` (engine_candidate).
void add_engine_candidates(std::vector<AlgoResult>& found, Descriptors& m,
                           const std::vector<std::string>& names, std::size_t have, Launch launch,
                           const detail::EngineTensors& t) {
  for (const std::string& n : names) {
    if (detail::is_engine(n)) found.push_back(engine_candidate(m.engines(), n, have, launch, t));
  }
}

}  // namespace

void fit_workspace(std::size_t bytes) {
  usable();
  cuda::fit_scratch(shared_workspace(), (bytes + sizeof(float) - 1) / sizeof(float));
}

struct ConvForward::Impl : Descriptors {
  void describe(const ConvProblem& problem, std::span<const float> weights);
  cuda::Buffer src, wei, dst;
  cudnnConvolutionFwdAlgo_t algo(std::string_view name) const {
    return static_cast<cudnnConvolutionFwdAlgo_t>(pass_algo_index(ConvPass::kForward, name));
  }
  std::size_t workspace_bytes(cudnnConvolutionFwdAlgo_t k) {
    Api& a = api();
    return remembered_workspace(
        k,
        [&](std::size_t* bytes) {
          return a.GetConvolutionForwardWorkspaceSize(a.handle, x, w, conv, y, k, bytes);
        },
        "cudnnGetConvolutionForwardWorkspaceSize");
  }
  std::vector<AlgoResult> results(const cudnnConvolutionFwdAlgoPerf_t* perf, int n) const {
    return results_of(perf, n, forward_algorithms());
  }
};

// The descriptors of problem p, and the weights uploaded.
void ConvForward::Impl::describe(const ConvProblem& problem, std::span<const float> weights) {
  if (static_cast<int64_t>(weights.size()) != problem.wei_numel()) {
    fail("cuDNN conv {}: {} weight values given, expected {}", problem.str(), weights.size(),
         problem.wei_numel());
  }
  set(problem);
  wei = cuda::Buffer(weights.size());
  wei.upload(weights);
}

ConvForward::ConvForward(const ConvProblem& p, std::span<const float> src,
                         std::span<const float> wei)
    : impl_(std::make_unique<Impl>()) {
  if (static_cast<int64_t>(src.size()) != p.src_numel()) {
    fail("cuDNN conv {}: {} input values given, expected {}", p.str(), src.size(), p.src_numel());
  }
  impl_->describe(p, wei);
  impl_->src = cuda::Buffer(src.size());
  impl_->src.upload(src);
  impl_->dst = cuda::Buffer(static_cast<std::size_t>(p.dst_numel()));
}

ConvForward::ConvForward(const ConvProblem& p, std::span<const float> wei)
    : impl_(std::make_unique<Impl>()) {
  impl_->describe(p, wei);
}

ConvForward::~ConvForward() = default;

std::string ConvForward::why_not(std::string_view algorithm) {
  Api& a = usable();
  if (detail::is_engine(algorithm)) return impl_->engines().why_not(algorithm);
  std::size_t bytes = 0;
  const cudnnStatus_t s = a.GetConvolutionForwardWorkspaceSize(
      a.handle, impl_->x, impl_->w, impl_->conv, impl_->y, impl_->algo(algorithm), &bytes);
  return s == CUDNN_STATUS_SUCCESS ? "" : a.GetErrorString(s);
}

std::size_t ConvForward::workspace_bytes(std::string_view algorithm) {
  usable();
  Impl& m = *impl_;
  if (detail::is_engine(algorithm)) return m.engines().workspace_bytes(algorithm);
  return m.workspace_bytes(m.algo(algorithm));
}

std::vector<std::string> ConvForward::engines() {
  usable();
  return impl_->engines().names();
}

std::string ConvForward::engines_reason() {
  usable();
  return impl_->engines().reason();
}

std::vector<AlgoResult> ConvForward::guess() {
  Api& a = usable();
  int max = 0, got = 0;
  check(a.GetConvolutionForwardAlgorithmMaxCount(a.handle, &max),
        "cudnnGetConvolutionForwardAlgorithmMaxCount");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max, 1)));
  check(a.GetConvolutionForwardAlgorithm_v7(a.handle, impl_->x, impl_->w, impl_->conv, impl_->y,
                                            max, &got, perf.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7");
  std::vector<AlgoResult> out = impl_->results(perf.data(), got);
  for (AlgoResult& r : out) r.ms = 0;  // heuristics: nothing ran
  return out;
}

std::vector<AlgoResult> ConvForward::find(const FindOptions& o) {
  if (impl_->src.size() == 0)
    fail("cuDNN conv {}: find() without its own tensors; use find_on", impl_->p.str());
  return find_on(o, impl_->src.data(), impl_->dst.data());
}

std::vector<AlgoResult> ConvForward::find_on(const FindOptions& o, const float* x, float* y) {
  Api& a = usable();
  Impl& m = *impl_;
  std::vector<std::string> served;
  for (const char* n : forward_algorithms()) {
    if (why_not(n).empty()) served.emplace_back(n);
  }
  const float* wei = own_weights();  // refused before the workspace grows for nothing
  const std::vector<std::string> names = m.with_engines(std::move(served), o);
  const auto ws_of = [&](const std::string& n) { return workspace_bytes(n); };
  cuda::Buffer& workspace =
      workspace_of_at_least(find_workspace(names, o.max_workspace_bytes, ws_of));
  // What find may use: the limit asked for, not more, even where an earlier convolution grew the
  // shared workspace past it (the cached ranking must not depend on what ran before).
  const std::size_t have = std::min(workspace.size() * sizeof(float), o.max_workspace_bytes);
  int max = 0, got = 0;
  check(a.GetConvolutionForwardAlgorithmMaxCount(a.handle, &max),
        "cudnnGetConvolutionForwardAlgorithmMaxCount");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max, 1)));
  check(a.FindConvolutionForwardAlgorithmEx(a.handle, m.x, x, m.w, wei, m.conv, m.y, y, max, &got,
                                            perf.data(), workspace.data(), have),
        "cudnnFindConvolutionForwardAlgorithmEx");
  std::vector<AlgoResult> found = m.results(perf.data(), got);
  add_engine_candidates(found, m, names, have, o.launch, {x, wei, y});
  return retimed(std::move(found), have, o.launch, ws_of,
                 [&](std::string_view algo) { run_on(algo, x, y); });
}

void ConvForward::run(std::string_view algorithm) {
  if (impl_->src.size() == 0)
    fail("cuDNN conv {}: run() without its own tensors; use run_on", impl_->p.str());
  run_on(algorithm, impl_->src.data(), impl_->dst.data());
}

void ConvForward::run_on(std::string_view algorithm, const float* x, float* y) {
  run_with(algorithm, x, own_weights(), y);
}

void ConvForward::release_weights() { impl_->wei = cuda::Buffer(); }

const float* ConvForward::own_weights() const {
  if (impl_->wei.size() == 0 && impl_->p.wei_numel() > 0) {
    fail("cuDNN conv {}: its weights were released (release_weights); use run_with",
         impl_->p.str());
  }
  return impl_->wei.data();
}

void ConvForward::run_with(std::string_view algorithm, const float* x, const float* wei,
                           float* y) {
  Api& a = usable();
  Impl& m = *impl_;
  if (detail::is_engine(algorithm)) {
    m.engines().run(algorithm, {x, wei, y}, workspace_for);
    return;
  }
  const cudnnConvolutionFwdAlgo_t k = m.algo(algorithm);  // one lookup of the name
  const std::size_t ws = m.workspace_bytes(k);
  const float one = 1.0f, zero = 0.0f;
  check(a.ConvolutionForward(a.handle, &one, m.x, x, m.w, wei, m.conv, k,
                             workspace_of_at_least(ws).data(), ws, &zero, m.y, y),
        "cudnnConvolutionForward");
}

std::vector<float> ConvForward::output() {
  if (impl_->dst.size() == 0)
    fail("cuDNN conv {}: output() without its own tensors", impl_->p.str());
  cuda::synchronize();
  std::vector<float> out(impl_->dst.size());
  impl_->dst.download(out);
  return out;
}

// ---- backward passes ----

struct ConvBackward::Impl : Descriptors {
  cuda::Buffer first, dy, out;  // first: w (data) or x (weights); out: dx or dw
  bool data() const { return pass == ConvPass::kBackwardData; }
  // The pass's tensors in the engines' roles: {dx, w, dy} or {x, dw, dy}.
  detail::EngineTensors tensors(const float* first_, const float* dy_, float* out_) const {
    return data() ? detail::EngineTensors{out_, first_, dy_}
                  : detail::EngineTensors{first_, out_, dy_};
  }
  // The workspace query's status (CUDNN_STATUS_SUCCESS when the algorithm serves the problem).
  cudnnStatus_t query(std::string_view name, std::size_t* bytes) const {
    Api& a = api();
    const int k = pass_algo_index(pass, name);
    return data() ? a.GetBwdDataWorkspaceSize(a.handle, w, y, conv, x,
                                              static_cast<cudnnConvolutionBwdDataAlgo_t>(k), bytes)
                  : a.GetBwdFilterWorkspaceSize(a.handle, x, y, conv, w,
                                                static_cast<cudnnConvolutionBwdFilterAlgo_t>(k),
                                                bytes);
  }
  int max_count() const {
    Api& a = api();
    int max = 0;
    check(data() ? a.GetBwdDataAlgorithmMaxCount(a.handle, &max)
                 : a.GetBwdFilterAlgorithmMaxCount(a.handle, &max),
          "cudnnGetConvolutionBackward*AlgorithmMaxCount");
    return std::max(max, 1);
  }
};

ConvBackward::ConvBackward(const ConvProblem& p, ConvPass pass, std::span<const float> first,
                           std::span<const float> dy)
    : impl_(std::make_unique<Impl>()) {
  if (pass == ConvPass::kForward)
    fail("cuDNN conv {}: ConvBackward needs a backward pass", p.str());
  const bool data = pass == ConvPass::kBackwardData;
  const int64_t want_first = data ? p.wei_numel() : p.src_numel();
  if (static_cast<int64_t>(first.size()) != want_first ||
      static_cast<int64_t>(dy.size()) != p.dst_numel()) {
    fail("cuDNN conv {} {}: {} and {} values given, expected {} ({}) and {} (dy)", p.str(),
         to_string(pass), first.size(), dy.size(), want_first, data ? "w" : "x", p.dst_numel());
  }
  Impl& m = *impl_;
  m.pass = pass;
  m.set(p);
  m.first = cuda::Buffer(first.size());
  m.first.upload(first);
  m.dy = cuda::Buffer(dy.size());
  m.dy.upload(dy);
  m.out = cuda::Buffer(static_cast<std::size_t>(data ? p.src_numel() : p.wei_numel()));
}

ConvBackward::ConvBackward(const ConvProblem& p, ConvPass pass)
    : impl_(std::make_unique<Impl>()) {
  if (pass == ConvPass::kForward) fail("cuDNN conv {}: ConvBackward needs a backward pass", p.str());
  impl_->pass = pass;
  impl_->set(p);
}

ConvBackward::~ConvBackward() = default;

std::vector<std::string> ConvBackward::engines() {
  usable();
  return impl_->engines().names();
}

std::string ConvBackward::engines_reason() {
  usable();
  return impl_->engines().reason();
}

std::string ConvBackward::why_not(std::string_view algorithm) {
  usable();
  if (detail::is_engine(algorithm)) return impl_->engines().why_not(algorithm);
  std::size_t bytes = 0;
  const cudnnStatus_t s = impl_->query(algorithm, &bytes);
  return s == CUDNN_STATUS_SUCCESS ? "" : api().GetErrorString(s);
}

std::size_t ConvBackward::workspace_bytes(std::string_view algorithm) {
  usable();
  Impl& m = *impl_;
  if (detail::is_engine(algorithm)) return m.engines().workspace_bytes(algorithm);
  return m.remembered_workspace(
      pass_algo_index(m.pass, algorithm),
      [&](std::size_t* bytes) { return m.query(algorithm, bytes); },
      "cudnnGetConvolutionBackward*WorkspaceSize");
}

std::vector<AlgoResult> ConvBackward::guess() {
  Api& a = usable();
  Impl& m = *impl_;
  const int max = m.max_count();
  int got = 0;
  std::vector<AlgoResult> out;
  if (m.data()) {
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(max));
    check(a.GetBwdDataAlgorithm_v7(a.handle, m.w, m.y, m.conv, m.x, max, &got, perf.data()),
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    out = results_of(perf.data(), got, algorithms(m.pass));
  } else {
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(max));
    check(a.GetBwdFilterAlgorithm_v7(a.handle, m.x, m.y, m.conv, m.w, max, &got, perf.data()),
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    out = results_of(perf.data(), got, algorithms(m.pass));
  }
  for (AlgoResult& r : out) r.ms = 0;  // heuristics: nothing ran
  return out;
}

std::vector<AlgoResult> ConvBackward::find(const FindOptions& o) {
  Impl& m = *impl_;
  if (m.dy.size() == 0) fail("cuDNN conv {}: find() without its own tensors; use find_on", m.p.str());
  return find_on(o, m.first.data(), m.dy.data(), m.out.data());
}

std::vector<AlgoResult> ConvBackward::find_on(const FindOptions& o, const float* first,
                                              const float* dy, float* out) {
  Api& a = usable();
  Impl& m = *impl_;
  std::vector<std::string> served;
  for (const char* n : algorithms(m.pass)) {
    std::size_t bytes = 0;
    if (m.query(n, &bytes) == CUDNN_STATUS_SUCCESS) served.emplace_back(n);
  }
  const std::vector<std::string> names = m.with_engines(std::move(served), o);
  const auto ws_of = [&](const std::string& n) { return workspace_bytes(n); };
  cuda::Buffer& workspace =
      workspace_of_at_least(find_workspace(names, o.max_workspace_bytes, ws_of));
  const int max = m.max_count();
  int got = 0;
  // As ConvForward::find_on: the limit, even where the workspace has grown past it.
  const std::size_t have = std::min(workspace.size() * sizeof(float), o.max_workspace_bytes);
  std::vector<AlgoResult> found;
  if (m.data()) {
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(static_cast<std::size_t>(max));
    check(a.FindBwdDataAlgorithmEx(a.handle, m.w, first, m.y, dy, m.conv, m.x, out, max, &got,
                                   perf.data(), workspace.data(), have),
          "cudnnFindConvolutionBackwardDataAlgorithmEx");
    found = results_of(perf.data(), got, algorithms(m.pass));
  } else {
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(static_cast<std::size_t>(max));
    check(a.FindBwdFilterAlgorithmEx(a.handle, m.x, first, m.y, dy, m.conv, m.w, out, max, &got,
                                     perf.data(), workspace.data(), have),
          "cudnnFindConvolutionBackwardFilterAlgorithmEx");
    found = results_of(perf.data(), got, algorithms(m.pass));
  }
  add_engine_candidates(found, m, names, have, o.launch, m.tensors(first, dy, out));
  return retimed(std::move(found), have, o.launch, ws_of,
                 [&](std::string_view algo) { run_on(algo, first, dy, out); });
}

void ConvBackward::run(std::string_view algorithm) {
  Impl& m = *impl_;
  if (m.dy.size() == 0) fail("cuDNN conv {}: run() without its own tensors; use run_on", m.p.str());
  run_on(algorithm, m.first.data(), m.dy.data(), m.out.data());
}

void ConvBackward::run_on(std::string_view algorithm, const float* first, const float* dy,
                          float* out) {
  Api& a = usable();
  Impl& m = *impl_;
  if (detail::is_engine(algorithm)) {
    m.engines().run(algorithm, m.tensors(first, dy, out), workspace_for);
    return;
  }
  const std::size_t ws = workspace_bytes(algorithm);
  cuda::Buffer& workspace = workspace_of_at_least(ws);
  const int k = pass_algo_index(m.pass, algorithm);
  const float one = 1.0f, zero = 0.0f;
  if (m.data()) {
    check(a.ConvolutionBackwardData(a.handle, &one, m.w, first, m.y, dy, m.conv,
                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(k), workspace.data(),
                                    ws, &zero, m.x, out),
          "cudnnConvolutionBackwardData");
  } else {
    check(a.ConvolutionBackwardFilter(a.handle, &one, m.x, first, m.y, dy, m.conv,
                                      static_cast<cudnnConvolutionBwdFilterAlgo_t>(k),
                                      workspace.data(), ws, &zero, m.w, out),
          "cudnnConvolutionBackwardFilter");
  }
}

std::vector<float> ConvBackward::output() {
  if (impl_->out.size() == 0) fail("cuDNN conv {}: output() without its own tensors", impl_->p.str());
  cuda::synchronize();
  std::vector<float> out(impl_->out.size());
  impl_->out.download(out);
  return out;
}

}  // namespace nnperf::cudnn
