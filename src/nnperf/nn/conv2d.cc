// Conv2d: algorithm choice (named / guess / find with a process-wide cache), weight folding and
// packing at plan time, forward through the chosen registry row, and a backward made of im2col,
// col2im and three BLAS GEMMs per image and group (the layout math is spelled out at backward()).
#include "nnperf/nn/conv2d.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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
#include "nnperf/core/verbose.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/nn/batchnorm.h"

namespace nnperf {

namespace {

struct FindWinner {
  std::string algo;
  double ms;
  std::string report;  // every candidate's time or why it was not timed
};

// A candidate modelled at over kFindPruneFactor x the best measured time is not timed (unless
// PlanContext::find_exhaustive); one whose warm-up run exceeds kFindLoserFactor x the best median
// is stopped after that run (warm-ups include first-touch costs, hence the margin).
constexpr double kFindPruneFactor = 8.0;
constexpr double kFindLoserFactor = 3.0;

std::mutex& find_mutex() {
  static std::mutex m;
  return m;
}

std::map<std::pair<std::string, int>, FindWinner>& find_cache() {
  static std::map<std::pair<std::string, int>, FindWinner> cache;
  return cache;
}

std::string lower(std::string_view s) {
  std::string out;
  for (char c : s) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The supported algorithm with the lowest cost(); null when none serves p.
const ConvAlgorithm* cheapest(const ConvProblem& p, int threads) {
  const ConvAlgorithm* best = nullptr;
  double best_cost = std::numeric_limits<double>::infinity();
  for (const ConvAlgorithm& a : conv_algorithms()) {
    if (!a.why_not(p).empty()) continue;
    const double c = a.cost(p, threads);
    if (best == nullptr || c < best_cost) {
      best = &a;
      best_cost = c;
    }
  }
  return best;
}

// Below this many elements per thread, the im2col/col2im loops stay on one thread.
constexpr int64_t kMinColElementsPerThread = 1 << 15;

// col[(c*kh + i)*kw + j][oy*ow + ox] = src[c][oy*sh - ph + i*dh][ox*sw - pw + j*dw] (0 outside).
void im2col(const ConvProblem& p, const float* src, float* col, int threads) {
  const int64_t oh = p.oh(), ow = p.ow(), icg = p.icg();
  const int64_t rows = icg * p.kh * p.kw;
  const int t = static_cast<int>(
      std::clamp<int64_t>(rows * oh * ow / kMinColElementsPerThread, 1, std::max(1, threads)));
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = r / (p.kh * p.kw), i = (r / p.kw) % p.kh, j = r % p.kw;
    const float* plane = src + c * p.ih * p.iw;
    float* out = col + r * oh * ow;
    for (int64_t oy = 0; oy < oh; ++oy) {
      const int64_t iy = oy * p.sh - p.ph + i * p.dh;
      float* row = out + oy * ow;
      if (iy < 0 || iy >= p.ih) {
        std::fill(row, row + ow, 0.0f);
        continue;
      }
      for (int64_t ox = 0; ox < ow; ++ox) {
        const int64_t ix = ox * p.sw - p.pw + j * p.dw;
        row[ox] = (ix >= 0 && ix < p.iw) ? plane[iy * p.iw + ix] : 0.0f;
      }
    }
  }
}

// The adjoint of im2col: d_src (zeroed here) += every col entry at the pixel it was read from.
// Rows of one channel all land in that channel's plane, so channels run in parallel.
void col2im(const ConvProblem& p, const float* col, float* d_src, int threads) {
  const int64_t oh = p.oh(), ow = p.ow(), icg = p.icg();
  const int t =
      static_cast<int>(std::clamp<int64_t>(icg * p.kh * p.kw * oh * ow / kMinColElementsPerThread,
                                           1, std::min<int64_t>(icg, std::max(1, threads))));
#pragma omp parallel for num_threads(t) if (t > 1) schedule(static)
  for (int64_t c = 0; c < icg; ++c) {
    float* plane = d_src + c * p.ih * p.iw;
    std::fill(plane, plane + p.ih * p.iw, 0.0f);
    for (int64_t i = 0; i < p.kh; ++i) {
      for (int64_t j = 0; j < p.kw; ++j) {
        const float* in = col + ((c * p.kh + i) * p.kw + j) * oh * ow;
        for (int64_t oy = 0; oy < oh; ++oy) {
          const int64_t iy = oy * p.sh - p.ph + i * p.dh;
          if (iy < 0 || iy >= p.ih) continue;
          for (int64_t ox = 0; ox < ow; ++ox) {
            const int64_t ix = ox * p.sw - p.pw + j * p.dw;
            if (ix >= 0 && ix < p.iw) plane[iy * p.iw + ix] += in[oy * ow + ox];
          }
        }
      }
    }
  }
}

// A 1x1 convolution with stride 1 and no padding reads its input as the col matrix itself.
bool col_is_src(const ConvProblem& p) {
  return p.kh == 1 && p.kw == 1 && p.sh == 1 && p.sw == 1 && p.ph == 0 && p.pw == 0;
}

}  // namespace

void clear_conv_find_cache() {
  std::lock_guard<std::mutex> lock(find_mutex());
  find_cache().clear();
}

int conv_find_cache_size() {
  std::lock_guard<std::mutex> lock(find_mutex());
  return static_cast<int>(find_cache().size());
}

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

// "find": the supported algorithms in order of modelled cost, each timed by ctx.time_conv; see
// kFindPruneFactor / kFindLoserFactor for what is not timed in full.
namespace {
FindWinner run_find(const ConvProblem& p, int threads, const PlanContext& ctx,
                    const std::string& who) {
  std::vector<std::pair<double, const ConvAlgorithm*>> candidates;
  for (const ConvAlgorithm& a : conv_algorithms()) {
    if (a.why_not(p).empty()) candidates.emplace_back(a.cost(p, threads) * 1e3, &a);
  }
  // Ties keep registry order (the pointers into the registry table order it). Not
  // std::stable_sort: GCC 12's temporary buffer trips AddressSanitizer's new/free check.
  std::sort(candidates.begin(), candidates.end());
  FindWinner w{"", std::numeric_limits<double>::infinity(), ""};
  for (const auto& [model_ms, a] : candidates) {
    if (!w.report.empty()) w.report += ' ';
    if (!ctx.find_exhaustive && std::isfinite(w.ms) && model_ms > kFindPruneFactor * w.ms) {
      w.report += fmt::format("{}=skipped(model {:.3g} ms > {:g}x best)", a->name, model_ms,
                              kFindPruneFactor);
      continue;
    }
    const double loser =
        std::isfinite(w.ms) ? kFindLoserFactor * w.ms : std::numeric_limits<double>::infinity();
    const double ms = ctx.time_conv(*a, p, threads, loser);
    w.report += fmt::format("{}={:.3f}ms", a->name, ms);
    if (ms < w.ms) {
      w.algo = a->name;
      w.ms = ms;
    }
  }
  if (w.algo.empty()) {
    throw Error(fmt::format("{}: 'find' got no finite time for any algorithm on {}", who, p.str()));
  }
  return w;
}
}  // namespace

const ConvAlgorithm* Conv2d::choose(const PlanContext& ctx) {
  fallback_reason_.clear();
  find_ms_ = -1.0;
  const std::string wanted = lower(ctx.conv_algorithm);
  const ConvAlgorithm* best = cheapest(problem_, threads_);
  if (best == nullptr) {
    throw Error(fmt::format("{}: no convolution algorithm serves {} (registered: {})", describe(),
                            problem_.str(), conv_algorithm_names()));
  }
  if (wanted == "guess" || wanted.empty()) {
    requested_ = "guess";
    return best;
  }
  if (wanted == "find") {
    requested_ = "find";
    if (ctx.time_conv == nullptr) {
      throw Error(fmt::format(
          "{}: conv algorithm 'find' needs a timer: set PlanContext::time_conv (time_conv_ms "
          "from profile/conv_timer.h)",
          describe()));
    }
    const std::pair<std::string, int> key{
        problem_.str() + (ctx.find_exhaustive ? " exhaustive" : ""), threads_};
    std::lock_guard<std::mutex> lock(find_mutex());  // held while timing: runs must not overlap
    auto it = find_cache().find(key);
    if (it == find_cache().end()) {
      it = find_cache().emplace(key, run_find(problem_, threads_, ctx, describe())).first;
      if (verbose_enabled("dispatch")) {
        std::fprintf(stderr, "nnperf_verbose,find,%s,%s\n", problem_.str().c_str(),
                     it->second.report.c_str());
      }
    }
    find_ms_ = it->second.ms;
    return &find_conv(it->second.algo);
  }
  const ConvAlgorithm* named = nullptr;
  try {
    named = &find_conv(ctx.conv_algorithm);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {} (or guess, find)", describe(), e.what()));
  }
  requested_ = named->name;
  const std::string why = named->why_not(problem_);
  if (why.empty()) return named;
  if (ctx.strict) {
    throw Error(fmt::format("layer {}: {} cannot serve {}: {}", describe(), named->name,
                            problem_.str(), why));
  }
  fallback_reason_ = why;
  return best;
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
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) {
    throw Error(fmt::format("{}: input {} is too small or malformed for this layer: {}", describe(),
                            x.str(), invalid));
  }
  problem_ = p;
  training_ = ctx.training;
  threads_ = std::max(1, ctx.threads);
  algo_ = choose(ctx);

  std::size_t bytes = algo_->workspace_bytes(problem_, threads_);
  if (training_) {
    // Backward: col and dcol, K x (oh*ow) floats each, plus what BLAS asks for its three shapes.
    const int64_t k = p.icg() * p.kh * p.kw, n = p.oh() * p.ow();
    const GemmAlgorithm& blas = find_gemm("blas");
    std::size_t gemm_bytes = 0;
    for (const GemmShape& s :
         {GemmShape{false, true, p.ocg(), k, n}, GemmShape{true, false, k, n, p.ocg()}}) {
      gemm_bytes = std::max(gemm_bytes, blas.workspace_bytes(s, threads_));
    }
    const std::size_t col = static_cast<std::size_t>(k * n) * sizeof(float);
    const std::size_t col_aligned = (col + 63) / 64 * 64;
    bytes = std::max(bytes, 2 * col_aligned + gemm_bytes);
    d_weight_.resize(weight_.shape());
    d_weight_.zero();
    if (has_bias_) {
      d_bias_.resize(bias_.shape());
      d_bias_.zero();
    }
  }
  workspace_.reserve(bytes);
  has_packed_ = algo_->pack_weights != nullptr && algo_->packed_weights_floats != nullptr;
  if (has_packed_) packed_.reserve(algo_->packed_weights_floats(problem_) * sizeof(float));
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
  if (has_packed_) {
    algo_->pack_weights(problem_, run_weights(), static_cast<float*>(packed_.data()));
  }
  stale_ = false;
  ++preparations_;
}

const float* Conv2d::run_weights() const {
  return bn_ != nullptr ? folded_weight_.data() : weight_.data();
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
  a.p = &problem_;
  a.src = src[0]->data();
  a.wei = run_weights();
  a.packed = has_packed_ ? static_cast<const float*>(packed_.data()) : nullptr;
  a.bias = run_bias();
  a.dst = dst.data();
  a.workspace = workspace_.data();
  a.threads = threads_;
  algo_->run(a);
}

// Per image n and group g, with K = icg*kh*kw and N = oh*ow:
//   col   [K x N]    = im2col(src[n, g])           (src itself for 1x1 / s1 / p0)
//   dW_g  [ocg x K] += dY[n, g] [ocg x N] . col^T   (beta 0 for the first image)
//   dcol  [K x N]    = W_g^T [K x ocg] . dY[n, g]   then d_src[n, g] = col2im(dcol)
//   db    [oc]       = sum over n and N of dY
void Conv2d::backward(std::span<const Tensor* const> src, const Tensor& /*dst*/,
                      const Tensor& d_dst, std::span<Tensor* const> d_src) {
  NNPERF_CHECK(training_, "{}: backward() needs a plan for training", describe());
  const ConvProblem& p = problem_;
  const GemmAlgorithm& blas = find_gemm("blas");
  const int64_t icg = p.icg(), ocg = p.ocg(), k = icg * p.kh * p.kw, n_out = p.oh() * p.ow();
  const int64_t plane_in = p.ih * p.iw;
  const bool direct = col_is_src(p);
  const std::size_t col_bytes =
      (static_cast<std::size_t>(k * n_out) * sizeof(float) + 63) / 64 * 64;
  auto* base = static_cast<char*>(workspace_.data());
  auto* col = reinterpret_cast<float*>(base);
  auto* dcol = reinterpret_cast<float*>(base + col_bytes);
  void* gemm_ws = base + 2 * col_bytes;
  const float* x = src[0]->data();
  const float* dy = d_dst.data();
  float* dx = d_src[0] != nullptr ? d_src[0]->data() : nullptr;

  auto gemm = [&](GemmShape shape, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* c, int64_t ldc, float beta) {
    blas.run(gemm_args(shape, a, lda, b, ldb, c, ldc, gemm_ws, threads_, beta));
  };

  for (int64_t n = 0; n < p.mb; ++n) {
    for (int64_t g = 0; g < p.g; ++g) {
      const float* x_ng = x + (n * p.ic + g * icg) * plane_in;
      const float* dy_ng = dy + (n * p.oc + g * ocg) * n_out;
      const float* cols = x_ng;
      if (!direct) {
        im2col(p, x_ng, col, threads_);
        cols = col;
      }
      gemm({false, true, ocg, k, n_out}, dy_ng, n_out, cols, n_out, d_weight_.data() + g * ocg * k,
           k, n == 0 ? 0.0f : 1.0f);
      if (dx == nullptr) continue;
      float* dx_ng = dx + (n * p.ic + g * icg) * plane_in;
      const float* w_g = weight_.data() + g * ocg * k;
      if (direct) {
        gemm({true, false, k, n_out, ocg}, w_g, k, dy_ng, n_out, dx_ng, n_out, 0.0f);
      } else {
        gemm({true, false, k, n_out, ocg}, w_g, k, dy_ng, n_out, dcol, n_out, 0.0f);
        col2im(p, dcol, dx_ng, threads_);
      }
    }
  }
  if (has_bias_) {
    float* db = d_bias_.data();
    for (int64_t o = 0; o < p.oc; ++o) {
      double s = 0.0;
      for (int64_t n = 0; n < p.mb; ++n) {
        const float* d = dy + (n * p.oc + o) * n_out;
        for (int64_t i = 0; i < n_out; ++i) s += d[i];
      }
      db[o] = static_cast<float>(s);
    }
  }
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
      rng.fill_uniform(w, -bound, bound);
      if (has_bias_) {
        rng.fill_uniform(std::span<float>(bias_.data(), static_cast<std::size_t>(oc_)), -bound,
                         bound);
      }
      break;
    }
    case ConvInit::kHeNormal:
    case ConvInit::kHeNormalFanOut: {
      const double fan = init_ == ConvInit::kHeNormal ? fan_in : fan_out;
      rng.fill_normal(w, 0.0f, static_cast<float>(std::sqrt(2.0 / fan)));
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
