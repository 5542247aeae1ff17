// cuDNN's forward convolution (kernels/conv/cudnn_conv.h): libcudnn loaded with dlopen and its
// legacy convolution API (cuDNN 9's libcudnn.so.9 forwards it to libcudnn_cnn) resolved by
// name; cudnn.h gives the types and constants only (a CUDA build without it compiles
// cudnn_nocuda.cc instead, CMakeLists.txt).
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/conv/cudnn_conv.h"

#include <cudnn.h>

namespace nnperf::cudnn {

namespace {
// cudnnConvolutionFwdAlgo_t of a name: its position in forward_algorithms().
int algo_index(std::string_view name) {
  const auto names = forward_algorithms();
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (name == names[i]) return static_cast<int>(i);
  }
  std::string list;
  for (const char* n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  throw UsageError(fmt::format("unknown cuDNN forward algorithm '{}'; expected one of: {}", name,
                               list));
}
}  // namespace

namespace {

// The entry points used, resolved from the loaded library.
struct Api {
  void* lib = nullptr;
  decltype(&cudnnGetVersion) GetVersion = nullptr;
  decltype(&cudnnGetErrorString) GetErrorString = nullptr;
  decltype(&cudnnCreate) Create = nullptr;
  decltype(&cudnnDestroy) Destroy = nullptr;
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
  cudnnHandle_t handle = nullptr;
  std::string reason;  // "" when usable
};

template <typename F>
bool resolve(Api& a, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(a.lib, name));
  if (f == nullptr && a.reason.empty()) a.reason = fmt::format("libcudnn has no {}", name);
  return f != nullptr;
}

Api load() {
  Api a;
  std::string errors;
  for (const char* n : {"libcudnn.so.9", "libcudnn.so"}) {
    a.lib = dlopen(n, RTLD_NOW | RTLD_LOCAL);
    if (a.lib != nullptr) break;
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e != nullptr ? e : n);
  }
  if (a.lib == nullptr) {
    a.reason = "no cuDNN (" + errors + ")";
    return a;
  }
  resolve(a, a.GetVersion, "cudnnGetVersion");
  resolve(a, a.GetErrorString, "cudnnGetErrorString");
  resolve(a, a.Create, "cudnnCreate");
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

void check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw Error(fmt::format("{}: {}", what, api().GetErrorString(s)));
}

int narrow(int64_t v) { return static_cast<int>(v); }  // ConvProblem terms are below 2^24

}  // namespace

const std::string& unavailable_reason() { return api().reason; }

std::string version() {
  const Api& a = api();
  if (a.GetVersion == nullptr) return "";
  const std::size_t v = a.GetVersion();  // 9.x.y as 90000 + 100 x + y
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

struct ConvForward::Impl {
  void describe(const ConvProblem& problem, std::span<const float> weights);
  ConvProblem p;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cuda::Buffer src, wei, dst, workspace;
  ~Impl() {
    Api& a = api();
    if (x != nullptr) a.DestroyTensorDescriptor(x);
    if (y != nullptr) a.DestroyTensorDescriptor(y);
    if (w != nullptr) a.DestroyFilterDescriptor(w);
    if (conv != nullptr) a.DestroyConvolutionDescriptor(conv);
  }
  cudnnConvolutionFwdAlgo_t algo(std::string_view name) const {
    return static_cast<cudnnConvolutionFwdAlgo_t>(algo_index(name));
  }
  std::vector<AlgoResult> results(const cudnnConvolutionFwdAlgoPerf_t* perf, int n) const {
    std::vector<AlgoResult> out;
    for (int i = 0; i < n; ++i) {
      const auto k = static_cast<std::size_t>(perf[i].algo);
      const auto names = forward_algorithms();
      out.push_back({k < names.size() ? names[k] : fmt::format("algo_{}", k),
                     api().GetErrorString(perf[i].status),
                     perf[i].status == CUDNN_STATUS_SUCCESS ? static_cast<double>(perf[i].time)
                                                            : 0.0,
                     perf[i].memory});
    }
    return out;
  }
};

// The descriptors of problem p, and the weights uploaded.
void ConvForward::Impl::describe(const ConvProblem& problem, std::span<const float> weights) {
  Api& a = usable();
  Impl& m = *this;
  const ConvProblem& p = problem;
  const std::span<const float> wei = weights;
  m.p = p;
  if (static_cast<int64_t>(wei.size()) != p.wei_numel()) {
    fail("cuDNN conv {}: {} weight values given, expected {}", p.str(), wei.size(), p.wei_numel());
  }
  check(a.CreateTensorDescriptor(&m.x), "cudnnCreateTensorDescriptor");
  check(a.CreateTensorDescriptor(&m.y), "cudnnCreateTensorDescriptor");
  check(a.CreateFilterDescriptor(&m.w), "cudnnCreateFilterDescriptor");
  check(a.CreateConvolutionDescriptor(&m.conv), "cudnnCreateConvolutionDescriptor");
  check(a.SetTensor4dDescriptor(m.x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, narrow(p.mb),
                                narrow(p.ic), narrow(p.ih), narrow(p.iw)),
        "cudnnSetTensor4dDescriptor (input)");
  check(a.SetFilter4dDescriptor(m.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, narrow(p.oc),
                                narrow(p.icg()), narrow(p.kh), narrow(p.kw)),
        "cudnnSetFilter4dDescriptor");
  check(a.SetConvolution2dDescriptor(m.conv, narrow(p.ph), narrow(p.pw), narrow(p.sh),
                                     narrow(p.sw), narrow(p.dh), narrow(p.dw),
                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(a.SetConvolutionGroupCount(m.conv, narrow(p.g)), "cudnnSetConvolutionGroupCount");
  check(a.SetConvolutionMathType(m.conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  int n = 0, c = 0, h = 0, wd = 0;
  check(a.GetConvolution2dForwardOutputDim(m.conv, m.x, m.w, &n, &c, &h, &wd),
        "cudnnGetConvolution2dForwardOutputDim");
  if (n != p.mb || c != p.oc || h != p.oh() || wd != p.ow()) {
    fail("cuDNN conv {}: output {}x{}x{}x{}, expected {}x{}x{}x{}", p.str(), n, c, h, wd, p.mb,
         p.oc, p.oh(), p.ow());
  }
  check(a.SetTensor4dDescriptor(m.y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, wd),
        "cudnnSetTensor4dDescriptor (output)");
  m.wei = cuda::Buffer(wei.size());
  m.wei.upload(wei);
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
  std::size_t bytes = 0;
  const cudnnStatus_t s = a.GetConvolutionForwardWorkspaceSize(
      a.handle, impl_->x, impl_->w, impl_->conv, impl_->y, impl_->algo(algorithm), &bytes);
  return s == CUDNN_STATUS_SUCCESS ? "" : a.GetErrorString(s);
}

std::size_t ConvForward::workspace_bytes(std::string_view algorithm) {
  Api& a = usable();
  std::size_t bytes = 0;
  check(a.GetConvolutionForwardWorkspaceSize(a.handle, impl_->x, impl_->w, impl_->conv, impl_->y,
                                             impl_->algo(algorithm), &bytes),
        "cudnnGetConvolutionForwardWorkspaceSize");
  return bytes;
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

std::vector<AlgoResult> ConvForward::find(std::size_t max_workspace_bytes) {
  if (impl_->src.size() == 0) fail("cuDNN conv {}: find() without its own tensors; use find_on", impl_->p.str());
  return find_on(max_workspace_bytes, impl_->src.data(), impl_->dst.data());
}

std::vector<AlgoResult> ConvForward::find_on(std::size_t max_workspace_bytes, const float* x,
                                             float* y) {
  Api& a = usable();
  std::size_t ws = 0;
  for (const char* n : forward_algorithms()) {
    if (why_not(n).empty()) ws = std::max(ws, std::min(workspace_bytes(n), max_workspace_bytes));
  }
  if (impl_->workspace.size() * sizeof(float) < ws) {
    impl_->workspace = cuda::Buffer((ws + sizeof(float) - 1) / sizeof(float));
  }
  int max = 0, got = 0;
  check(a.GetConvolutionForwardAlgorithmMaxCount(a.handle, &max),
        "cudnnGetConvolutionForwardAlgorithmMaxCount");
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(max, 1)));
  check(a.FindConvolutionForwardAlgorithmEx(
            a.handle, impl_->x, x, impl_->w, impl_->wei.data(), impl_->conv, impl_->y, y, max,
            &got, perf.data(), impl_->workspace.data(),
            impl_->workspace.size() * sizeof(float)),
        "cudnnFindConvolutionForwardAlgorithmEx");
  return impl_->results(perf.data(), got);
}

void ConvForward::run(std::string_view algorithm) {
  if (impl_->src.size() == 0) fail("cuDNN conv {}: run() without its own tensors; use run_on", impl_->p.str());
  run_on(algorithm, impl_->src.data(), impl_->dst.data());
}

void ConvForward::run_on(std::string_view algorithm, const float* x, float* y) {
  Api& a = usable();
  const std::size_t ws = workspace_bytes(algorithm);
  if (impl_->workspace.size() * sizeof(float) < ws) {
    impl_->workspace = cuda::Buffer((ws + sizeof(float) - 1) / sizeof(float));
  }
  const float one = 1.0f, zero = 0.0f;
  check(a.ConvolutionForward(a.handle, &one, impl_->x, x, impl_->w, impl_->wei.data(),
                             impl_->conv, impl_->algo(algorithm), impl_->workspace.data(), ws,
                             &zero, impl_->y, y),
        "cudnnConvolutionForward");
}

std::vector<float> ConvForward::output() {
  if (impl_->dst.size() == 0) fail("cuDNN conv {}: output() without its own tensors", impl_->p.str());
  cuda::synchronize();
  std::vector<float> out(impl_->dst.size());
  impl_->dst.download(out);
  return out;
}

}  // namespace nnperf::cudnn
