// Conv2d: plans the problem, takes each pass's algorithm from the dispatcher
// (kernels/conv/conv_dispatch.h), folds and packs the weights, and runs the chosen rows.
#include "nnperf/nn/conv2d.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/core/verbose.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/nn/batchnorm.h"

namespace nnperf {

Conv2d::Conv2d(int64_t ic, int64_t oc, int64_t kh, int64_t kw, int64_t stride, int64_t pad,
               int64_t dilation, int64_t groups, bool bias, ConvInit init)
    : ic_(ic),
      oc_(oc),
      kh_(kh),
      kw_(kw),
      stride_(stride),
      pad_(pad),
      dilation_(dilation),
      groups_(groups),
      has_bias_(bias),
      init_(init) {
  if (ic_ <= 0 || oc_ <= 0 || kh_ <= 0 || kw_ <= 0 || stride_ <= 0 || dilation_ <= 0 ||
      groups_ <= 0 || pad_ < 0) {
    throw Error(fmt::format(
        "{}: channels, kernel, stride, dilation and groups must be positive, padding >= 0",
        describe()));
  }
  if (ic_ % groups_ != 0 || oc_ % groups_ != 0) {
    throw Error(fmt::format("{}: in ({}) and out ({}) channels must be divisible by groups ({})",
                            describe(), ic_, oc_, groups_));
  }
  weight_ = Tensor::zeros({oc_, ic_ / groups_, kh_, kw_});
  if (has_bias_) bias_ = Tensor::zeros({oc_});
}

Conv2d::~Conv2d() = default;

std::string Conv2d::describe() const {
  std::string s = fmt::format("Conv2d({}->{}, k{}x{}, s{}, p{}", ic_, oc_, kh_, kw_, stride_, pad_);
  if (dilation_ != 1) s += fmt::format(", d{}", dilation_);
  if (groups_ != 1) s += fmt::format(", g{}", groups_);
  if (!has_bias_) s += ", no bias";
  s += ")";
  if (bn_ != nullptr) s += " + BN folded";
  return s;
}

std::string Conv2d::dispatch() const {
  if (algo_ == nullptr) return {};
  std::string s = fmt::format("algo={}", algo_->name);
  if (requested_ == "find") {
    s += fmt::format(" (requested find, {:.3f} ms)", find_ms_);
  } else if (requested_ != algo_->name) {
    s += fmt::format(" (requested {})", requested_);
  }
  s += " problem=" + problem_.str();
  if (crop_.active) {
    s += fmt::format(" (live taps {}x{} of {}x{}: runs {})", crop_.cropped.kh, crop_.cropped.kw,
                     problem_.kh, problem_.kw, crop_.cropped.str());
  }
  if (bwd_data_ != nullptr) {
    s += fmt::format(" backward-data={} backward-weights={}", bwd_data_->name, bwd_weights_->name);
  }
  if (!fallback_reason_.empty()) {
    s += fmt::format("; fallback from {}: {}", requested_, fallback_reason_);
  }
  return s;
}

void Conv2d::fold_batchnorm(std::unique_ptr<BatchNorm2d> bn) {
  if (bn == nullptr) throw Error(fmt::format("{}: fold_batchnorm() got no layer", describe()));
  if (bn->channels() != oc_) {
    throw Error(fmt::format("{}: cannot fold {} (channels differ)", describe(), bn->describe()));
  }
  if (bn_ != nullptr) throw Error(fmt::format("{}: a batch norm is folded in already", describe()));
  bn_ = std::move(bn);
  algo_ = nullptr;  // needs a new plan
  stale_ = true;
}

ConvSelection Conv2d::selection(const PlanContext& ctx) {
  ConvSelection sel;
  sel.wanted = ctx.conv_algorithm;
  sel.strict = ctx.strict;
  sel.exhaustive = ctx.find_exhaustive;
  sel.training = ctx.training;
  sel.time_forward = ctx.time_conv;
  sel.time_backward = ctx.time_conv_backward;
  return sel;
}

ConvProblem Conv2d::problem_for(const Shape& x) const {
  ConvProblem p;
  p.g = groups_;
  p.mb = x[0];
  p.ic = ic_;
  p.ih = x[2];
  p.iw = x[3];
  p.oc = oc_;
  p.kh = kh_;
  p.kw = kw_;
  p.sh = p.sw = stride_;
  p.ph = p.pw = pad_;
  p.dh = p.dw = dilation_;
  return p;
}

Shape Conv2d::plan(std::span<const Shape> src, const PlanContext& ctx) {
  if (src.size() != 1) {
    throw Error(fmt::format("{}: expected 1 input, got {}", describe(), src.size()));
  }
  const Shape& x = src[0];
  if (x.rank() != 4 || x[1] != ic_) {
    throw Error(fmt::format("{}: expected input [mb, {}, h, w], got {}", describe(), ic_, x.str()));
  }
  if (bn_ != nullptr && ctx.training) {
    throw Error(fmt::format(
        "{}: a folded batch norm is for inference only; plan with training off or build the "
        "model without BN folding",
        describe()));
  }
  const ConvProblem p = problem_for(x);
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) {
    throw Error(fmt::format("{}: input {} is too small or malformed for this layer: {}", describe(),
                            x.str(), invalid));
  }
  problem_ = p;
  training_ = ctx.training;
  threads_ = std::max(1, ctx.threads);
  const ConvSelection sel = selection(ctx);
  const bool engine_choice = sel.wanted.empty() || find_conv_choice(sel.wanted) != nullptr;
  crop_ = engine_choice ? conv_live_taps(p) : ConvCrop{};
  const ConvProblem& rp = run_problem();
  if (crop_.active) {
    cropped_weight_.resize(Shape{rp.oc, rp.icg(), rp.kh, rp.kw});
    if (training_) cropped_grad_.resize(cropped_weight_.shape());
  }
  ConvChoice choice;
  algo_ = &choose_conv_forward(rp, threads_, sel, describe(), choice);
  requested_ = choice.requested;
  fallback_reason_ = choice.fallback_reason;
  find_ms_ = choice.find_ms;

  std::size_t bytes = algo_->workspace_bytes(rp, threads_);
  bwd_data_ = bwd_weights_ = nullptr;
  if (training_) {
    ConvChoice c;
    bwd_data_ = &choose_conv_backward(ConvPass::kBackwardData, rp, threads_, sel, describe(), c);
    bwd_weights_ =
        &choose_conv_backward(ConvPass::kBackwardWeights, rp, threads_, sel, describe(), c);
    bytes = std::max({bytes, bwd_data_->workspace_bytes(rp, threads_),
                      bwd_weights_->workspace_bytes(rp, threads_)});
    d_weight_.resize(weight_.shape());
    d_weight_.zero();
    if (has_bias_) {
      d_bias_.resize(bias_.shape());
      d_bias_.zero();
    }
  }
  workspace_.reserve(bytes);
  has_packed_ = algo_->pack_weights != nullptr && algo_->packed_weights_floats != nullptr;
  if (has_packed_) packed_.reserve(algo_->packed_weights_floats(rp) * sizeof(float));
  if (bn_ != nullptr) {
    folded_weight_.resize(weight_.shape());
    folded_bias_.resize(Shape{oc_});
  }
  prepare_weights();
  return Shape{p.mb, oc_, p.oh(), p.ow()};
}

void Conv2d::prepare_weights() {
  if (bn_ != nullptr) {
    std::vector<double> scale(static_cast<std::size_t>(oc_)), shift(scale.size());
    bn_->inference_scale_shift(scale.data(), shift.data());
    const int64_t per_oc = weight_.numel() / oc_;
    for (int64_t o = 0; o < oc_; ++o) {
      for (int64_t i = 0; i < per_oc; ++i) {
        folded_weight_[o * per_oc + i] =
            static_cast<float>(static_cast<double>(weight_[o * per_oc + i]) * scale[o]);
      }
      const double b = has_bias_ ? static_cast<double>(bias_[o]) : 0.0;
      folded_bias_[o] = static_cast<float>(b * scale[o] + shift[o]);
    }
  }
  if (crop_.active) {
    conv_crop_weights(problem_, crop_, base_weights(), cropped_weight_.data(), threads_);
  }
  if (has_packed_) {
    algo_->pack_weights(run_problem(), run_weights(), static_cast<float*>(packed_.data()),
                        threads_);
  }
  stale_ = false;
  ++preparations_;
}

const float* Conv2d::base_weights() const {
  return bn_ != nullptr ? folded_weight_.data() : weight_.data();
}

const float* Conv2d::run_weights() const {
  return crop_.active ? cropped_weight_.data() : base_weights();
}

const float* Conv2d::run_bias() const {
  if (bn_ != nullptr) return folded_bias_.data();
  return has_bias_ ? bias_.data() : nullptr;
}

void Conv2d::forward(std::span<const Tensor* const> src, Tensor& dst) {
  NNPERF_CHECK(algo_ != nullptr, "{}: forward() before plan()", describe());
  // Training: the optimizer rewrote the weights since the last step (no-op for algorithms that
  // read OIHW directly). Inference: only after someone took write access to the weights.
  if (training_ || stale_) prepare_weights();
  ConvArgs a;
  a.p = &run_problem();
  a.src = src[0]->data();
  a.wei = run_weights();
  a.packed = has_packed_ ? static_cast<const float*>(packed_.data()) : nullptr;
  a.bias = run_bias();
  a.dst = dst.data();
  a.workspace = workspace_.data();
  a.threads = threads_;
  algo_->run(a);
}

// dW (and db) from src and dY, then dX from dY and the weights, each by its pass's algorithm,
// on the problem the forward ran (the weights it used: prepared by this step's forward).
void Conv2d::backward(std::span<const Tensor* const> src, const Tensor& /*dst*/,
                      const Tensor& d_dst, std::span<Tensor* const> d_src) {
  NNPERF_CHECK(training_, "{}: backward() needs a plan for training", describe());
  ConvBackwardArgs a;
  a.p = &run_problem();
  a.src = src[0]->data();
  a.wei = run_weights();
  a.dst_grad = d_dst.data();
  a.wei_grad = crop_.active ? cropped_grad_.data() : d_weight_.data();
  a.bias_grad = has_bias_ ? d_bias_.data() : nullptr;
  a.workspace = workspace_.data();
  a.threads = threads_;
  bwd_weights_->run(a);
  if (crop_.active)
    conv_uncrop_weight_grad(problem_, crop_, cropped_grad_.data(), d_weight_.data(), threads_);
  if (d_src[0] == nullptr) return;
  a.src_grad = d_src[0]->data();
  bwd_data_->run(a);
}

std::vector<Param> Conv2d::params() {
  stale_ = true;  // the caller may write through these pointers
  std::vector<Param> out = {{"weight", &weight_, &d_weight_}};
  if (has_bias_) out.push_back({"bias", &bias_, &d_bias_});
  if (bn_ != nullptr) {
    for (Param q : bn_->params()) {
      q.name = "folded_bn." + q.name;
      out.push_back(q);
    }
  }
  return out;
}

void Conv2d::init(Rng& rng) {
  const double fan_in = static_cast<double>((ic_ / groups_) * kh_ * kw_);
  const double fan_out = static_cast<double>(oc_ * kh_ * kw_);
  std::span<float> w(weight_.data(), static_cast<std::size_t>(weight_.numel()));
  switch (init_) {
    case ConvInit::kTorchDefault: {
      // kaiming_uniform(a = sqrt(5)): gain sqrt(2 / 6), bound = gain * sqrt(3 / fan_in)
      // = 1 / sqrt(fan_in); PyTorch draws the bias from the same bound.
      const float bound = static_cast<float>(1.0 / std::sqrt(fan_in));
      fill_in_parts(w, [&](std::span<float> part) { rng.fill_uniform(part, -bound, bound); });
      if (has_bias_) {
        rng.fill_uniform(std::span<float>(bias_.data(), static_cast<std::size_t>(oc_)), -bound,
                         bound);
      }
      break;
    }
    case ConvInit::kHeNormal:
    case ConvInit::kHeNormalFanOut: {
      const double fan = init_ == ConvInit::kHeNormal ? fan_in : fan_out;
      const float stddev = static_cast<float>(std::sqrt(2.0 / fan));
      fill_in_parts(w, [&](std::span<float> part) { rng.fill_normal(part, 0.0f, stddev); });
      if (has_bias_) bias_.zero();
      break;
    }
  }
  if (bn_ != nullptr) bn_->init(rng);
  stale_ = true;
}

double Conv2d::forward_flops() const {
  if (algo_ == nullptr) return 0.0;
  const bool adds_bias = has_bias_ || bn_ != nullptr;
  return problem_.flops() + (adds_bias ? static_cast<double>(problem_.dst_numel()) : 0.0);
}

}  // namespace nnperf
