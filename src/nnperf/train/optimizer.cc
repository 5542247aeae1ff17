// SGD (momentum, nesterov, weight decay) and Adam with torch.optim's update rules, one fused
// loop per parameter tensor, written with SSE and AVX2 intrinsics (optimizer_internal.h), split
// into slices between the threads of set_threads on long tensors. Checkpoint state: "momentum_buffer.<i>" (SGD), "exp_avg.<i>" and "exp_avg_sq.<i>"
// (Adam), i = parameter index, plus the step counter.
#include "nnperf/train/optimizer.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <map>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/kernels/elementwise.h"
#include "nnperf/train/optimizer_internal.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace nnperf {

void sgd_update_sse(float* w, const float* grad, float* buf, int64_t n, const SgdCoefficients& c) {
  int64_t j = 0;
#if defined(__SSE2__)
  const __m128 wd = _mm_set1_ps(c.weight_decay), lr = _mm_set1_ps(c.lr);
  const __m128 keep = _mm_set1_ps(c.keep), mu = _mm_set1_ps(c.momentum);
  for (; j + 4 <= n; j += 4) {
    const __m128 wj = _mm_loadu_ps(w + j);
    const __m128 g = _mm_add_ps(_mm_loadu_ps(grad + j), _mm_mul_ps(wd, wj));
    __m128 step = g;
    if (buf != nullptr) {
      const __m128 b = _mm_add_ps(_mm_mul_ps(keep, _mm_loadu_ps(buf + j)), g);
      _mm_storeu_ps(buf + j, b);
      step = c.nesterov ? _mm_add_ps(g, _mm_mul_ps(mu, b)) : b;
    }
    _mm_storeu_ps(w + j, _mm_sub_ps(wj, _mm_mul_ps(lr, step)));
  }
#endif
  for (; j < n; ++j) sgd_element(w, grad, buf, j, c);
}

namespace {

// Per-parameter buffers of one kind ("exp_avg"), created on the first step or loaded.
class BufferSet {
 public:
  explicit BufferSet(std::string kind) : kind_(std::move(kind)) {}
  bool empty() const { return buffers_.empty(); }
  std::size_t size() const { return buffers_.size(); }
  Tensor& operator[](std::size_t i) { return buffers_[i]; }

  // Validates the buffers against the parameters (after a load) or creates them zeroed.
  // Returns true when they were just created.
  bool ensure(std::span<const Param> params) {
    if (buffers_.empty()) {
      for (const Param& p : params) buffers_.push_back(Tensor::zeros(p.value->shape()));
      return true;
    }
    if (buffers_.size() != params.size()) {
      throw Error(fmt::format("optimizer state has {} '{}' buffers but the model has {} parameters",
                              buffers_.size(), kind_, params.size()));
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (buffers_[i].shape() != params[i].value->shape()) {
        throw Error(fmt::format("optimizer state '{}.{}' has shape {} but parameter '{}' is {}",
                                kind_, i, buffers_[i].shape().str(), params[i].name,
                                params[i].value->shape().str()));
      }
    }
    return false;
  }

  void append_state(std::vector<std::pair<std::string, const Tensor*>>& out) const {
    for (std::size_t i = 0; i < buffers_.size(); ++i) {
      out.emplace_back(fmt::format("{}.{}", kind_, i), &buffers_[i]);
    }
  }

  // Takes "<kind>.<i>" entries; they must be numbered 0..n-1.
  void load(const std::map<std::string, const Tensor*>& entries) {
    buffers_.clear();
    for (std::size_t i = 0;; ++i) {
      auto it = entries.find(fmt::format("{}.{}", kind_, i));
      if (it == entries.end()) break;
      buffers_.push_back(*it->second);
    }
  }

 private:
  std::string kind_;
  std::vector<Tensor> buffers_;
};

void check_param(const Param& p) {
  if (p.value == nullptr || p.grad == nullptr || p.value->numel() != p.grad->numel()) {
    throw Error(fmt::format("optimizer: parameter '{}' has no gradient of its shape", p.name));
  }
}

// Checks that every key is one of `kinds` followed by ".<i>", and returns them by name.
std::map<std::string, const Tensor*> index_state(
    const std::vector<std::pair<std::string, Tensor>>& state,
    std::initializer_list<const char*> kinds, const char* optimizer) {
  std::map<std::string, const Tensor*> out;
  for (const auto& [key, tensor] : state) {
    bool known = false;
    for (const char* kind : kinds) {
      const std::string prefix = std::string(kind) + ".";
      if (key.rfind(prefix, 0) == 0 && key.size() > prefix.size() &&
          key.find_first_not_of("0123456789", prefix.size()) == std::string::npos) {
        known = true;
      }
    }
    if (!known) {
      throw Error(fmt::format("{} optimizer state: unexpected entry '{}'", optimizer, key));
    }
    out[key] = &tensor;
  }
  return out;
}

void sgd_update(float* w, const float* grad, float* buf, int64_t n, const SgdCoefficients& c) {
  if (active_simd() >= SimdLevel::kAvx2) {
    sgd_update_avx2(w, grad, buf, n, c);
  } else {
    sgd_update_sse(w, grad, buf, n, c);
  }
}

class Sgd : public Optimizer {
 public:
  explicit Sgd(const OptimizerOptions& o) : o_(o), momentum_buffer_("momentum_buffer") {
    lr_ = static_cast<float>(o.lr);
  }
  std::string name() const override { return "sgd"; }

  void step(std::span<const Param> params) override {
    for (const Param& p : params) check_param(p);
    const bool use_momentum = o_.momentum != 0.0f;
    bool first = false;
    if (use_momentum) first = momentum_buffer_.ensure(params);
    // torch.optim.SGD (dampening 0): buf = g on the step that creates it, then mu * buf + g.
    const SgdCoefficients c = sgd_coefficients(o_, lr_, first);
    for (std::size_t i = 0; i < params.size(); ++i) {
      float* w = params[i].value->data();
      const float* grad = params[i].grad->data();
      float* buf = use_momentum ? momentum_buffer_[i].data() : nullptr;
      for_slices(params[i].value->numel(), threads_, [&](int64_t lo, int64_t hi) {
        sgd_update(w + lo, grad + lo, buf != nullptr ? buf + lo : nullptr, hi - lo, c);
      });
    }
    ++steps_;
  }

  std::vector<std::pair<std::string, const Tensor*>> state() const override {
    std::vector<std::pair<std::string, const Tensor*>> out;
    momentum_buffer_.append_state(out);
    return out;
  }

  void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                  int64_t steps) override {
    const auto entries = index_state(state, {"momentum_buffer"}, "sgd");
    momentum_buffer_.load(entries);
    if (entries.size() != momentum_buffer_.size()) {
      throw Error("sgd optimizer state: buffer indices must run 0, 1, 2, ... without gaps");
    }
    steps_ = steps;
  }

 private:
  OptimizerOptions o_;
  BufferSet momentum_buffer_;
};



// m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2; w -= step_size * m / (sqrt(v) / sqrt(bc2) + eps)
// with g = grad + wd * w. std::sqrt keeps errno semantics in our flags (no -fno-math-errno), which
// stops GCC from vectorising the loop, so the body is written with SSE (baseline x86-64); the
// scalar tail does the same operations in the same order.
void adam_update_sse(float* w, const float* grad, float* m, float* v, int64_t n,
                 const AdamCoefficients& c) {
  int64_t j = 0;
#if defined(__SSE2__)
  const __m128 b1 = _mm_set1_ps(c.beta1), omb1 = _mm_set1_ps(c.one_minus_beta1);
  const __m128 b2 = _mm_set1_ps(c.beta2), omb2 = _mm_set1_ps(c.one_minus_beta2);
  const __m128 wd = _mm_set1_ps(c.weight_decay), step = _mm_set1_ps(c.step_size);
  const __m128 isb = _mm_set1_ps(c.inv_sqrt_bc2), eps = _mm_set1_ps(c.eps);
  for (; j + 4 <= n; j += 4) {
    const __m128 wj = _mm_loadu_ps(w + j);
    const __m128 g = _mm_add_ps(_mm_loadu_ps(grad + j), _mm_mul_ps(wd, wj));
    const __m128 mj = _mm_add_ps(_mm_mul_ps(b1, _mm_loadu_ps(m + j)), _mm_mul_ps(omb1, g));
    const __m128 vj =
        _mm_add_ps(_mm_mul_ps(b2, _mm_loadu_ps(v + j)), _mm_mul_ps(_mm_mul_ps(omb2, g), g));
    const __m128 denom = _mm_add_ps(_mm_mul_ps(_mm_sqrt_ps(vj), isb), eps);
    _mm_storeu_ps(m + j, mj);
    _mm_storeu_ps(v + j, vj);
    _mm_storeu_ps(w + j, _mm_sub_ps(wj, _mm_div_ps(_mm_mul_ps(step, mj), denom)));
  }
#endif
  for (; j < n; ++j) {
    const float g = grad[j] + c.weight_decay * w[j];
    m[j] = c.beta1 * m[j] + c.one_minus_beta1 * g;
    v[j] = c.beta2 * v[j] + (c.one_minus_beta2 * g) * g;
    const float denom = std::sqrt(v[j]) * c.inv_sqrt_bc2 + c.eps;
    w[j] -= (c.step_size * m[j]) / denom;
  }
}

// The widest path this CPU has; all paths do the same operations in the same order (no FMA
// contraction: CMakeLists.txt builds optimizer_avx2.cc with -ffp-contract=off, which GCC needs
// for intrinsics too), so results do not depend on the path (tests/train/
// multi_tensor_update_test.cc holds each path to the same scalar code bit for bit).
void adam_update(float* w, const float* grad, float* m, float* v, int64_t n, const AdamCoefficients& c) {
  if (active_simd() >= SimdLevel::kAvx2) {
    adam_update_avx2(w, grad, m, v, n, c);
  } else {
    adam_update_sse(w, grad, m, v, n, c);
  }
}

}  // namespace

AdamCoefficients adam_coefficients(const OptimizerOptions& o, float lr, int64_t t) {
  // Bias corrections in double: 1 - beta2^t is ~1e-3 for the first steps.
  const double bc1 = 1.0 - std::pow(static_cast<double>(o.beta1), static_cast<double>(t));
  const double bc2 = 1.0 - std::pow(static_cast<double>(o.beta2), static_cast<double>(t));
  return {o.beta1,
          1.0f - o.beta1,
          o.beta2,
          1.0f - o.beta2,
          static_cast<float>(o.weight_decay),
          static_cast<float>(lr / bc1),
          static_cast<float>(1.0 / std::sqrt(bc2)),
          o.eps};
}

SgdCoefficients sgd_coefficients(const OptimizerOptions& o, float lr, bool fresh_state) {
  const auto mu = static_cast<float>(o.momentum);
  return {lr, static_cast<float>(o.weight_decay), mu, fresh_state ? 0.0f : mu, o.nesterov};
}

namespace {

class Adam : public Optimizer {
 public:
  explicit Adam(const OptimizerOptions& o) : o_(o), exp_avg_("exp_avg"), exp_avg_sq_("exp_avg_sq") {
    lr_ = static_cast<float>(o.lr);
  }
  std::string name() const override { return "adam"; }

  void step(std::span<const Param> params) override {
    for (const Param& p : params) check_param(p);
    exp_avg_.ensure(params);
    exp_avg_sq_.ensure(params);
    const AdamCoefficients c = adam_coefficients(o_, lr_, steps_ + 1);
    for (std::size_t i = 0; i < params.size(); ++i) {
      float* w = params[i].value->data();
      const float* g = params[i].grad->data();
      float* m = exp_avg_[i].data();
      float* v = exp_avg_sq_[i].data();
      for_slices(params[i].value->numel(), threads_, [&](int64_t lo, int64_t hi) {
        adam_update(w + lo, g + lo, m + lo, v + lo, hi - lo, c);
      });
    }
    ++steps_;
  }

  std::vector<std::pair<std::string, const Tensor*>> state() const override {
    std::vector<std::pair<std::string, const Tensor*>> out;
    exp_avg_.append_state(out);
    exp_avg_sq_.append_state(out);
    return out;
  }

  void load_state(const std::vector<std::pair<std::string, Tensor>>& state,
                  int64_t steps) override {
    const auto entries = index_state(state, {"exp_avg", "exp_avg_sq"}, "adam");
    exp_avg_.load(entries);
    exp_avg_sq_.load(entries);
    if (exp_avg_.size() != exp_avg_sq_.size()) {
      throw Error(fmt::format("adam optimizer state: {} exp_avg but {} exp_avg_sq buffers",
                              exp_avg_.size(), exp_avg_sq_.size()));
    }
    if (entries.size() != exp_avg_.size() + exp_avg_sq_.size()) {
      throw Error("adam optimizer state: buffer indices must run 0, 1, 2, ... without gaps");
    }
    steps_ = steps;
  }

 private:
  OptimizerOptions o_;
  BufferSet exp_avg_, exp_avg_sq_;
};

std::unique_ptr<Optimizer> make_sgd(const OptimizerOptions& o) {
  if (!(o.momentum >= 0.0f)) {
    throw UsageError(fmt::format("sgd: momentum must be >= 0, got {}", o.momentum));
  }
  if (o.nesterov && o.momentum <= 0.0f) {
    throw UsageError("sgd: nesterov momentum requires a momentum > 0 (as torch.optim.SGD)");
  }
  return std::make_unique<Sgd>(o);
}

std::unique_ptr<Optimizer> make_adam(const OptimizerOptions& o) {
  if (!(o.beta1 >= 0.0f && o.beta1 < 1.0f && o.beta2 >= 0.0f && o.beta2 < 1.0f)) {
    throw UsageError(fmt::format("adam: betas must be in [0, 1), got {} and {}", o.beta1, o.beta2));
  }
  if (!(o.eps >= 0.0f)) throw UsageError(fmt::format("adam: eps must be >= 0, got {}", o.eps));
  return std::make_unique<Adam>(o);
}

constexpr std::array<OptimizerEntry, 2> kOptimizers = {{
    {"sgd", "SGD with momentum, weight decay and optional Nesterov (torch.optim.SGD)", make_sgd},
    {"adam", "Adam, bias-corrected, L2 weight decay (torch.optim.Adam)", make_adam},
}};
constexpr Registry<OptimizerEntry> kRegistry{kOptimizers};

}  // namespace

std::span<const OptimizerEntry> optimizer_registry() { return kOptimizers; }

const OptimizerEntry& find_optimizer(std::string_view name) {
  if (const OptimizerEntry* row = kRegistry.find(name)) return *row;
  throw UsageError(
      fmt::format("unknown optimizer '{}': expected {}", name, kRegistry.alternatives()));
}

std::unique_ptr<Optimizer> make_optimizer(const OptimizerOptions& o) {
  if (!(o.lr >= 0.0f)) throw UsageError(fmt::format("optimizer: lr must be >= 0, got {}", o.lr));
  if (!(o.weight_decay >= 0.0f)) {
    throw UsageError(fmt::format("optimizer: weight decay must be >= 0, got {}", o.weight_decay));
  }
  return find_optimizer(o.name).make(o);
}

int optimizer_state_copies(const OptimizerOptions& options) {
  const OptimizerOptions o = checked_optimizer(options);
  return o.name == "adam" ? 2 : (o.momentum != 0.0 ? 1 : 0);
}

OptimizerOptions checked_optimizer(const OptimizerOptions& options) {
  OptimizerOptions o = options;
  o.name = make_optimizer(options)->name();
  return o;
}

}  // namespace nnperf
