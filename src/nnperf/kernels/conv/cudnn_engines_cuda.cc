// The graph-API engines of one convolution pass (cudnn_internal.h's EngineSet): backend
// descriptors built with cudnnBackend{Create,Set,Get,Finalize}, resolved by name from the
// libcudnn that cudnn_cuda.cc loaded. Every refusal on the way is kept as a reason, never thrown
// from the constructor: a problem cuDNN's graph API cannot describe still has the legacy rows.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include "nnperf/core/error.h"
#include "nnperf/kernels/conv/cudnn_internal.h"

namespace nnperf::cudnn::detail {

namespace {

struct BackendApi {
  decltype(&cudnnBackendCreateDescriptor) Create = nullptr;
  decltype(&cudnnBackendDestroyDescriptor) Destroy = nullptr;
  decltype(&cudnnBackendSetAttribute) Set = nullptr;
  decltype(&cudnnBackendGetAttribute) Get = nullptr;
  decltype(&cudnnBackendFinalize) Finalize = nullptr;
  decltype(&cudnnBackendExecute) Execute = nullptr;
  std::string reason;  // "" when every entry point resolved
};

const BackendApi& backend() {
  static const BackendApi b = [] {
    BackendApi a;
    if (library() == nullptr) {
      a.reason = "no cuDNN";
      return a;
    }
    void* lib = library();
    resolve(lib, a.Create, "cudnnBackendCreateDescriptor", a.reason);
    resolve(lib, a.Destroy, "cudnnBackendDestroyDescriptor", a.reason);
    resolve(lib, a.Set, "cudnnBackendSetAttribute", a.reason);
    resolve(lib, a.Get, "cudnnBackendGetAttribute", a.reason);
    resolve(lib, a.Finalize, "cudnnBackendFinalize", a.reason);
    resolve(lib, a.Execute, "cudnnBackendExecute", a.reason);
    return a;
  }();
  return b;
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) {
    check(backend().Create(type, &d_), "cudnnBackendCreateDescriptor");
  }
  ~Desc() {
    if (d_ != nullptr) (void)backend().Destroy(d_);
  }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&&) = delete;
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t count,
            const void* values) {
    check(backend().Set(d_, name, type, count, values), "cudnnBackendSetAttribute");
    return *this;
  }
  Desc& set(cudnnBackendAttributeName_t name, const Desc& other) {
    const cudnnBackendDescriptor_t o = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &o);
  }
  void finalize(const char* what) { check(backend().Finalize(d_), what); }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
constexpr int64_t kAlignment = 16;

Desc tensor(int64_t uid, std::array<int64_t, 4> dims) {
  const std::array<int64_t, 4> strides{dims[1] * dims[2] * dims[3], dims[2] * dims[3], dims[3], 1};
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  Desc t(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32)
      .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data())
      .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data())
      .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid)
      .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kAlignment);
  t.finalize("cudnnBackendFinalize (tensor)");
  return t;
}

// The convolution descriptor of p: cross-correlation in FP32.
Desc convolution(const ConvProblem& p) {
  const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const int64_t spatial = 2;
  const std::array<int64_t, 2> pad{p.ph, p.pw}, stride{p.sh, p.sw}, dilation{p.dh, p.dw};
  Desc conv(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  conv.set(CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32)
      .set(CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode)
      .set(CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial)
      .set(CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data())
      .set(CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad.data())
      .set(CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride.data())
      .set(CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dilation.data());
  conv.finalize("cudnnBackendFinalize (convolution)");
  return conv;
}

// A pass's operation descriptor type and its attributes for x (or dx), w (or dw), y (or dy), the
// convolution, alpha and beta.
struct PassOperation {
  cudnnBackendDescriptorType_t type;
  cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  const char* what;
};

PassOperation pass_operation(ConvPass pass) {
  switch (pass) {
    case ConvPass::kForward:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
              "cudnnBackendFinalize (convolution forward)"};
    case ConvPass::kBackwardData:
      return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
              "cudnnBackendFinalize (convolution backward data)"};
    case ConvPass::kBackwardWeights:
      break;
  }
  return {CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
          CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
          "cudnnBackendFinalize (convolution backward filter)"};
}

// The operation graph of one pass: x [mb, ic, ih, iw], w [oc, ic/g, kh, kw] (the graph API reads
// the groups from the shapes), y [mb, oc, oh, ow], or their gradients in the pass's roles; alpha
// 1, beta 0 (the output overwritten).
Desc operation_graph(const ConvProblem& p, ConvPass pass) {
  const Desc x = tensor(kUidX, {p.mb, p.ic, p.ih, p.iw});
  const Desc w = tensor(kUidW, {p.oc, p.icg(), p.kh, p.kw});
  const Desc y = tensor(kUidY, {p.mb, p.oc, p.oh(), p.ow()});
  const Desc conv = convolution(p);
  const PassOperation po = pass_operation(pass);
  const float alpha = 1.0f, beta = 0.0f;
  Desc op(po.type);
  op.set(po.x, x)
      .set(po.w, w)
      .set(po.y, y)
      .set(po.conv, conv)
      .set(po.alpha, CUDNN_TYPE_FLOAT, 1, &alpha)
      .set(po.beta, CUDNN_TYPE_FLOAT, 1, &beta);
  op.finalize(po.what);
  cudnnHandle_t h = handle();
  Desc graph(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, op)
      .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h);
  graph.finalize("cudnnBackendFinalize (operation graph)");
  return graph;
}

// The engine configurations a heuristics mode proposes for the graph (none when it refuses).
std::vector<Desc> heuristics(const Desc& graph, cudnnBackendHeurMode_t mode) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph)
      .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  heur.finalize("cudnnBackendFinalize (engine heuristics)");
  int64_t count = 0;
  check(backend().Get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                      &count, nullptr),
        "cudnnBackendGetAttribute (heuristics' result count)");
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  int64_t got = 0;
  check(backend().Get(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                      count, &got, raw.data()),
        "cudnnBackendGetAttribute (heuristics' results)");
  while (static_cast<int64_t>(configs.size()) > std::max<int64_t>(got, 0)) configs.pop_back();
  return configs;
}

// A configuration's engine: its global index, and whether its notes allow it here.
struct EngineFacts {
  int64_t index = -1;
  bool fp32_fma = true, precompiled = true, deterministic = true;
};

EngineFacts facts_of(const Desc& config) {
  Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  cudnnBackendDescriptor_t e = engine.get();
  int64_t n = 0;
  check(backend().Get(config.get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                      &n, &e),
        "cudnnBackendGetAttribute (engine of a configuration)");
  EngineFacts f;
  check(backend().Get(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &f.index),
        "cudnnBackendGetAttribute (engine index)");
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> numerical{};
  check(backend().Get(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                      static_cast<int64_t>(numerical.size()), &n, numerical.data()),
        "cudnnBackendGetAttribute (numerical notes)");
  for (int64_t i = 0; i < std::min<int64_t>(n, numerical.size()); ++i) {
    const cudnnBackendNumericalNote_t note = numerical[static_cast<std::size_t>(i)];
    f.fp32_fma &= note != CUDNN_NUMERICAL_NOTE_TENSOR_CORE &&
                  note != CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS &&
                  note != CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION;
    f.deterministic &= note != CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
  }
  std::array<cudnnBackendBehaviorNote_t, CUDNN_BEHAVIOR_NOTE_TYPE_COUNT> behavior{};
  check(backend().Get(e, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE, CUDNN_TYPE_BEHAVIOR_NOTE,
                      static_cast<int64_t>(behavior.size()), &n, behavior.data()),
        "cudnnBackendGetAttribute (behavior notes)");
  for (int64_t i = 0; i < std::min<int64_t>(n, behavior.size()); ++i) {
    f.precompiled &=
        behavior[static_cast<std::size_t>(i)] != CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
  }
  return f;
}

// x, w, y (or their gradients) and the workspace, in the variant pack's order (the uids kUidX,
// kUidW, kUidY, then the workspace attribute).
using Pointers = std::array<void*, 4>;

Desc variant_pack(const Pointers& p) {
  std::array<int64_t, 3> uids{kUidX, kUidW, kUidY};
  std::array<void*, 3> data{p[0], p[1], p[2]};
  void* workspace = p[3];
  Desc pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids.data())
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, data.data())
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  pack.finalize("cudnnBackendFinalize (variant pack)");
  return pack;
}

}  // namespace

struct EngineSet::Impl {
  struct Plan {
    Desc plan;
    std::size_t workspace_bytes = 0;
    bool deterministic = true;
    std::optional<Desc> pack;  // the last run's variant pack, for `pointers`
    Pointers pointers{};
  };
  std::string reason;
  std::vector<std::string> names;
  std::map<std::string, Plan, std::less<>> plans;

  void add_plans(const std::vector<Desc>& configs, std::map<int64_t, int>& seen);
  std::string why_not(std::string_view name) const;
  Plan& plan(std::string_view name);  // throws Error with why_not(name) when absent
};

// Each allowed configuration made into a plan; a plan cuDNN will not finalize is left out.
void EngineSet::Impl::add_plans(const std::vector<Desc>& configs, std::map<int64_t, int>& seen) {
  cudnnHandle_t h = handle();
  for (const Desc& config : configs) {
    EngineFacts f;
    try {
      f = facts_of(config);
    } catch (const Error&) {
      continue;
    }
    if (!f.fp32_fma || !f.precompiled) continue;
    Desc plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
    plan.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h)
        .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, config);
    if (backend().Finalize(plan.get()) != CUDNN_STATUS_SUCCESS) continue;
    int64_t bytes = 0, n = 0;
    check(backend().Get(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                        &n, &bytes),
          "cudnnBackendGetAttribute (plan workspace)");
    const std::string name = fmt::format("engine:{}.{}", f.index, seen[f.index]++);
    names.push_back(name);
    Plan entry{std::move(plan),
               static_cast<std::size_t>(std::max<int64_t>(bytes, 0)),
               f.deterministic,
               std::nullopt,
               {}};
    plans.emplace(name, std::move(entry));
  }
}

EngineSet::EngineSet(const ConvProblem& p, ConvPass pass) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  if (!backend().reason.empty()) {
    m.reason = backend().reason;
    return;
  }
  try {
    const Desc graph = operation_graph(p, pass);
    std::map<int64_t, int> seen;  // configurations per engine so far
    for (const cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      try {
        m.add_plans(heuristics(graph, mode), seen);
      } catch (const Error& e) {
        if (mode == CUDNN_HEUR_MODE_A) m.reason = e.what();
      }
    }
    if (!m.names.empty()) m.reason.clear();
    if (m.names.empty() && m.reason.empty()) m.reason = "no FP32 engine configuration finalized";
  } catch (const Error& e) {
    m.reason = e.what();
  }
}

EngineSet::~EngineSet() = default;

const std::string& EngineSet::reason() const { return impl_->reason; }
const std::vector<std::string>& EngineSet::names() const { return impl_->names; }

std::string EngineSet::Impl::why_not(std::string_view name) const {
  if (plans.count(name) > 0) return "";
  return reason.empty() ? fmt::format("no engine configuration {} for this problem", name) : reason;
}

EngineSet::Impl::Plan& EngineSet::Impl::plan(std::string_view name) {
  const auto it = plans.find(name);
  if (it == plans.end()) throw Error(std::string(name) + ": " + why_not(name));
  return it->second;
}

std::string EngineSet::why_not(std::string_view name) const { return impl_->why_not(name); }

std::size_t EngineSet::workspace_bytes(std::string_view name) const {
  return impl_->plan(name).workspace_bytes;
}

bool EngineSet::deterministic(std::string_view name) const {
  return impl_->plan(name).deterministic;
}

void EngineSet::run(std::string_view name, const EngineTensors& t,
                    void* (*workspace)(std::size_t bytes)) {
  Impl::Plan& p = impl_->plan(name);
  // cuDNN takes every tensor as void*: the pass writes one of them (its output)
  const Pointers pointers{const_cast<float*>(t.x), const_cast<float*>(t.w), const_cast<float*>(t.y),
                          workspace(p.workspace_bytes)};
  if (!p.pack || p.pointers != pointers) {
    for (std::size_t i = 0; i < 3; ++i) {
      if (reinterpret_cast<std::uintptr_t>(pointers[i]) % kAlignment != 0)
        throw Error(fmt::format("cuDNN {}: a tensor at {} is not {}-byte aligned", name,
                                pointers[i], kAlignment));
    }
    p.pack.reset();
    p.pack.emplace(variant_pack(pointers));
    p.pointers = pointers;
  }
  check(backend().Execute(handle(), p.plan.get(), p.pack->get()), "cudnnBackendExecute");
}

}  // namespace nnperf::cudnn::detail
