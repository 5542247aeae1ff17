#include "nnperf/runs/conv_tools.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "nnperf/analysis/peaks.h"
#include "nnperf/core/clock.h"
#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/memory.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/tensor.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/io/run_info.h"
#include "nnperf/kernels/conv/conv_crop.h"
#include "nnperf/kernels/conv/conv_dispatch.h"
#include "nnperf/kernels/conv/cudnn_conv.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

constexpr double kEps = 0x1.0p-23;  // float32 unit roundoff

// The algorithms `names` names (all when empty); an unknown name is refused naming `flag`.
std::vector<const ConvAlgorithm*> select(const std::vector<std::string>& names, const char* flag) {
  std::vector<const ConvAlgorithm*> out;
  if (names.empty()) {
    for (const auto& a : conv_algorithms()) out.push_back(&a);
  } else {
    for (const auto& n : names) {
      try {
        out.push_back(&find_conv(n));
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("{}: {}", flag, e.what()));
      }
    }
  }
  return out;
}

struct Inputs {
  Tensor src, wei, bias;
};

Inputs make_inputs(const ConvProblem& p, uint64_t seed) {
  Inputs in{Tensor(Shape{p.src_numel()}), Tensor(Shape{p.wei_numel()}), Tensor(Shape{p.oc})};
  Rng rng(seed);
  rng.fill_uniform({in.src.data(), static_cast<std::size_t>(in.src.numel())}, -1.0f, 1.0f);
  rng.fill_uniform({in.wei.data(), static_cast<std::size_t>(in.wei.numel())}, -1.0f, 1.0f);
  rng.fill_uniform({in.bias.data(), static_cast<std::size_t>(in.bias.numel())}, -1.0f, 1.0f);
  return in;
}

// `extra_bytes_per_output`: what the command keeps per output element besides the float tensors
// (verify: the float64 reference and its error bound).
void check_problem(const ConvProblem& p, int64_t extra_bytes_per_output) {
  const std::string bad = p.invalid_reason();
  if (!bad.empty()) throw UsageError(fmt::format("--problem {}: {}", p.str(), bad));
  // Input, weights and output in float32, refused before any of them is allocated.
  auto prod = [](std::initializer_list<int64_t> v) -> std::optional<int64_t> {
    int64_t r = 1;
    for (int64_t x : v) {
      const auto m = checked_mul(r, x);
      if (!m) return std::nullopt;
      r = *m;
    }
    return r;
  };
  const auto src = prod({p.mb, p.ic, p.ih, p.iw, 4});
  const auto wei = prod({p.oc, p.icg(), p.kh, p.kw, 4});
  const auto dst = prod({p.mb, p.oc, p.oh(), p.ow(), 4 + extra_bytes_per_output});
  std::optional<int64_t> total;
  if (src && wei && dst) {
    const auto a = checked_add(*src, *wei);
    if (a) total = checked_add(*a, *dst);
  }
  check_memory(total.value_or(-1),
               fmt::format("--problem {} (input, weights and output)", p.str()));
}

// Plans one algorithm (packed weights, workspace) and runs it on demand.
struct Planned {
  const ConvAlgorithm* algo;
  Workspace packed;
  Workspace ws;
  ConvArgs args;
};

void plan(Planned& pl, const ConvProblem& p, const Inputs& in, Tensor& dst, int threads) {
  pl.args = conv_prepare(*pl.algo, p, in.src.data(), in.wei.data(), in.bias.data(), dst.data(),
                         threads, pl.ws, pl.packed);
}

// The float64 reference is a serial loop of about 1e9 multiply-adds a second: a problem far
// beyond a layer's size would keep verify busy for hours, so it is refused up front.
void check_reference_cost(const ConvProblem& p) {
  constexpr double kMaxReferenceMacs = 1e11;
  const double macs = p.flops() / 2;
  if (macs > kMaxReferenceMacs) {
    throw UsageError(fmt::format(
        "--problem {}: the float64 reference would take {:.3g} multiply-adds (about {:.0f} "
        "minutes on one core); verify takes problems up to {:.0e}: use a smaller mb, ic, oc or "
        "image",
        p.str(), macs, macs / 1e9 / 60, kMaxReferenceMacs));
  }
}

}  // namespace

std::vector<ConvVerifyResult> verify_conv(const ConvProblem& p,
                                          const std::vector<std::string>& names, uint64_t seed,
                                          int threads) {
  check_problem(p, 2 * static_cast<int64_t>(sizeof(double)));
  check_reference_cost(p);
  threads = set_threads(threads);
  set_blas_threads(1);  // as in CNN inference (core/threads.h)
  const auto algos = select(names, "--algorithm");
  const Inputs in = make_inputs(p, seed);
  std::vector<double> ref(static_cast<std::size_t>(p.dst_numel())), abs_sum(ref.size());
  conv2d_reference(p, in.src.data(), in.wei.data(), in.bias.data(), ref.data(), abs_sum.data());
  const auto zeros = std::count_if(ref.begin(), ref.end(), [](double v) { return v == 0.0; });
  const bool mistrusted = 2 * zeros > static_cast<std::ptrdiff_t>(ref.size());
  const double k = static_cast<double>(p.icg() * p.kh * p.kw);
  std::vector<ConvVerifyResult> out;
  for (const ConvAlgorithm* a : algos) {
    check_interrupt();
    ConvVerifyResult r;
    r.algorithm = a->name;
    r.tolerance_factor = a->tolerance_factor;
    const std::string why = a->why_not(p);
    if (!why.empty()) {
      r.status = "SKIP";
      r.reason = why;
      out.push_back(r);
      continue;
    }
    Tensor dst(Shape{p.dst_numel()});
    dst.fill(std::numeric_limits<float>::quiet_NaN());  // an unwritten output fails
    Planned pl{a, {}, {}, {}};
    plan(pl, p, in, dst, threads);
    a->run(pl.args);
    std::size_t worst = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double err = std::abs(static_cast<double>(dst[static_cast<int64_t>(i)]) - ref[i]);
      const double bound = a->tolerance_factor * k * kEps * abs_sum[i] + kEps * std::abs(ref[i]);
      const double ratio =
          std::isnan(err) ? std::numeric_limits<double>::infinity() : err / std::max(bound, 1e-300);
      if (!(ratio <= r.worst_bound_ratio)) {
        r.worst_bound_ratio = ratio;
        worst = i;
      }
      if (!(err <= r.max_abs_err)) r.max_abs_err = err;
      if (std::abs(ref[i]) > 0 && !(err / std::abs(ref[i]) <= r.max_rel_err))
        r.max_rel_err = err / std::abs(ref[i]);
    }
    if (mistrusted) {
      r.status = "FAIL";
      r.reason = fmt::format("MISTRUSTED: {} of {} reference outputs are zero", zeros, ref.size());
    } else if (r.worst_bound_ratio <= 1.0) {
      r.status = "PASS";
    } else {
      r.status = "FAIL";
      r.reason = fmt::format(
          "output {} = {} vs reference {} (error {:.3g} > bound {:.3g})", worst,
          dst[static_cast<int64_t>(worst)], ref[worst],
          std::abs(dst[static_cast<int64_t>(worst)] - ref[worst]),
          std::abs(dst[static_cast<int64_t>(worst)] - ref[worst]) / r.worst_bound_ratio);
    }
    out.push_back(r);
  }
  return out;
}

namespace {

// One row of the pass's registry, planned: its workspace and a call that runs it.
struct BenchRow {
  std::string name;
  double modelled_s = 0;  // the cost guess ranks the row by
  Planned forward;  // forward rows
  Workspace ws;     // backward rows
  ConvBackwardArgs backward;
  std::function<void()> run;
};

struct PassTensors {
  Tensor dst, dy, dx, dw, db;
};

// Plans the rows of o.pass (skipped ones become records at once); rows[i].run() runs row i.
std::vector<std::unique_ptr<BenchRow>> plan_rows(const ConvProblem& p, const ConvBenchOptions& o,
                                                 const Inputs& in, PassTensors& t, int threads,
                                                 nlohmann::json& records) {
  std::vector<std::unique_ptr<BenchRow>> rows;
  // A row of either registry: a skipped record with its reason, or a new BenchRow named after it.
  const auto serve = [&](const auto& a) -> BenchRow* {
    const std::string why = a.why_not(p);
    if (!why.empty()) {
      records.push_back(
          {{"algorithm", a.name}, {"problem", p.str()}, {"status", "skipped"}, {"reason", why}});
      return nullptr;
    }
    auto& r = rows.emplace_back(std::make_unique<BenchRow>());
    r->name = a.name;
    return r.get();
  };
  if (o.pass == ConvPass::kForward) {
    ConvSelection sel;
    sel.training = o.training;
    for (const ConvAlgorithm* a : select(o.algorithms, "--algorithms")) {
      BenchRow* r = serve(*a);
      if (r == nullptr) continue;
      r->forward = Planned{a, {}, {}, {}};
      plan(r->forward, p, in, t.dst, threads);
      r->modelled_s = conv_forward_cost(*a, p, threads, sel);
      if (o.training && a->pack_weights != nullptr && a->packed_weights_floats != nullptr) {
        r->run = [r, &p, wei = in.wei.data()] {
          r->forward.algo->pack_weights(p, wei, static_cast<float*>(r->forward.packed.data()),
                                        r->forward.args.threads);
          r->forward.algo->run(r->forward.args);
        };
      } else {
        r->run = [r] { r->forward.algo->run(r->forward.args); };
      }
    }
    return rows;
  }
  std::vector<const ConvBackwardAlgorithm*> algos;
  if (o.algorithms.empty()) {
    for (const auto& a : conv_backward_algorithms(o.pass)) algos.push_back(&a);
  } else {
    for (const auto& n : o.algorithms) {
      try {
        algos.push_back(&find_conv_backward(o.pass, n));
      } catch (const UsageError& e) {
        throw UsageError(fmt::format("--algorithms: {}", e.what()));
      }
    }
  }
  for (const ConvBackwardAlgorithm* a : algos) {
    BenchRow* r = serve(*a);
    if (r == nullptr) continue;
    r->modelled_s = a->cost(p, threads);
    r->ws.reserve(a->workspace_bytes(p, threads));
    ConvBackwardArgs& b = r->backward;
    b.p = &p;
    b.src = in.src.data();
    b.wei = in.wei.data();
    b.dst_grad = t.dy.data();
    b.src_grad = t.dx.data();
    b.wei_grad = t.dw.data();
    b.bias_grad = t.db.data();
    b.workspace = r->ws.data();
    b.threads = threads;
    r->run = [a, r] { a->run(r->backward); };
  }
  return rows;
}

std::string guessed_row(const ConvProblem& p, const ConvBenchOptions& o, int threads) {
  const ConvPass pass = o.pass;
  ConvSelection s;
  s.training = o.training;
  ConvChoice c;
  try {
    return pass == ConvPass::kForward ? choose_conv_forward(p, threads, s, "bench", c).name
                                      : choose_conv_backward(pass, p, threads, s, "bench", c).name;
  } catch (const Error&) {
    return "";  // nothing serves p: every row is a skipped record
  }
}

// The fastest timed row, and how much slower the guess's row ran (when it was timed).
void rank_guess(const nlohmann::json& records, nlohmann::json& ctx) {
  const nlohmann::json* fastest = nullptr;
  const nlohmann::json* guessed = nullptr;
  for (const auto& r : records) {
    if (r["status"] != "ok") continue;
    if (fastest == nullptr || r["time_ms_median"] < (*fastest)["time_ms_median"]) fastest = &r;
    if (r["algorithm"] == ctx["guess"]) guessed = &r;
  }
  if (fastest == nullptr) return;
  ctx["fastest"] = (*fastest)["algorithm"];
  if (guessed != nullptr) {
    ctx["guess_over_fastest"] =
        (*guessed)["time_ms_median"].get<double>() / (*fastest)["time_ms_median"].get<double>();
  }
}

}  // namespace

nlohmann::json bench_conv(const ConvProblem& p, const ConvBenchOptions& o) {
  check_problem(p, o.pass == ConvPass::kForward ? 0 : 4);  // backward: dY as well
  if (o.warmup < 0 || o.measure < 1) throw UsageError("--warmup must be >= 0 and --measure >= 1");
  const int threads = set_threads(o.threads);
  double peak = o.peak_gflops;
  if (peak <= 0) {
    peak = measure_fma_peak(1, 3, 0.05) * threads;
    set_threads(threads);
  }
  set_blas_threads(1);  // as in CNN inference and training (core/threads.h)
  const Inputs in = make_inputs(p, o.seed);
  PassTensors t;
  t.dst = Tensor(Shape{p.dst_numel()});
  if (o.pass != ConvPass::kForward) {
    t.dy = Tensor(Shape{p.dst_numel()});
    Rng rng(o.seed + 1);
    rng.fill_uniform({t.dy.data(), static_cast<std::size_t>(t.dy.numel())}, -1.0f, 1.0f);
    t.dx = Tensor(Shape{p.src_numel()});
    t.dw = Tensor(Shape{p.wei_numel()});
    t.db = Tensor(Shape{p.oc});
  }
  nlohmann::json records = nlohmann::json::array();
  const auto rows = plan_rows(p, o, in, t, threads, records);
  const std::vector<std::vector<double>> ms = time_alternately_on_host(
      static_cast<int>(rows.size()), [&](int i) { rows[static_cast<std::size_t>(i)]->run(); },
      o.warmup, o.measure, check_interrupt);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Summary s = summarize(ms[i]);
    const double gflops = p.flops() / (s.median * 1e-3) * 1e-9;
    records.push_back({{"algorithm", rows[i]->name},
                       {"problem", p.str()},
                       {"status", "ok"},
                       {"time_ms_median", s.median},
                       {"time_ms_min", s.min},
                       {"time_ms_max", s.max},
                       {"reps", s.count},
                       {"flops", p.flops()},
                       {"modelled_ms", rows[i]->modelled_s * 1e3},
                       {"gflops_per_s", gflops},
                       {"percent_of_peak", 100 * gflops / peak}});
  }
  nlohmann::json ctx = run_context();
  ctx["threads"] = threads;
  ctx["peak_gflops_per_s"] = peak;
  ctx["warmup"] = o.warmup;
  ctx["measure"] = o.measure;
  ctx["pass"] = to_string(o.pass);
  ctx["training"] = o.training;
  ctx["guess"] = guessed_row(p, o, threads);
  rank_guess(records, ctx);
  const ConvCrop crop = conv_live_taps(p);
  if (crop.active) ctx["layers_run_as"] = crop.cropped.str();  // under guess or find
  ctx["flops_convention"] = "direct-convolution FLOPs (2 per multiply-add) for every algorithm";
  return {{"context", ctx}, {"records", records}};
}

namespace {

// A cuDNN row's error against the float64 reference: the largest |y - ref| and the largest ratio
// to the bound of a float32 sum of k terms (tolerance factor 1), as `verify conv2d` states them.
void record_error(nlohmann::json& rec, const std::vector<float>& y, const std::vector<double>& ref,
                  const std::vector<double>& abs_sum, double k) {
  double max_abs = 0, worst = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double err = std::abs(static_cast<double>(y[i]) - ref[i]);
    const double bound = k * kEps * abs_sum[i] + kEps * std::abs(ref[i]);
    if (!(err <= max_abs)) max_abs = err;  // NaN wins
    const double ratio = err / std::max(bound, 1e-300);
    if (!(ratio <= worst)) worst = ratio;
  }
  rec["max_abs_err"] = max_abs;
  rec["worst_bound_ratio"] = worst;
}

// The float64 reference of the pass's output and its per-element sums |products|, and the
// reduction length K of the pass (forward: icg*kh*kw, backward-data: ocg*kh*kw,
// backward-weights: mb*oh*ow) for the float32 bound.
// The float64 reference of one pass. Forward and backward-data outputs of one image depend on
// that image alone, so past batch 2 only the first and last images are computed (`images`, each
// `per_image` values of the output, in order): the reference is a serial float64 loop, and the
// whole of a batch-32 VGG layer would take minutes of it. Backward-weights sums over the batch
// and is computed whole.
struct PassReference {
  std::vector<double> ref, abs_sum;
  double k = 0;
  std::vector<int64_t> images;  // empty: the whole output
  int64_t per_image = 0;
};

PassReference pass_reference(const ConvProblem& p, ConvPass pass, const float* x, const float* w,
                             const float* dy) {
  PassReference r;
  if (pass == ConvPass::kBackwardWeights) {
    r.ref.resize(static_cast<std::size_t>(p.wei_numel()));
    r.abs_sum.resize(r.ref.size());
    conv2d_backward_reference(p, x, w, dy, nullptr, r.ref.data(), nullptr, nullptr,
                              r.abs_sum.data());
    r.k = static_cast<double>(p.mb * p.oh() * p.ow());
    return r;
  }
  ConvProblem one = p;
  one.mb = 1;
  const bool forward = pass == ConvPass::kForward;
  const int64_t x_image = one.src_numel(), y_image = one.dst_numel();
  r.per_image = forward ? y_image : x_image;
  r.k = static_cast<double>(forward ? p.icg() * p.kh * p.kw : p.ocg() * p.kh * p.kw);
  if (p.mb > 2) r.images = {0, p.mb - 1};
  const ConvProblem& q = r.images.empty() ? p : one;
  const std::vector<int64_t> starts = r.images.empty() ? std::vector<int64_t>{0} : r.images;
  const std::size_t part = static_cast<std::size_t>(forward ? q.dst_numel() : q.src_numel());
  r.ref.resize(part * starts.size());
  r.abs_sum.resize(r.ref.size());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    double* ref = r.ref.data() + i * part;
    double* abs_sum = r.abs_sum.data() + i * part;
    const float* xi = x + starts[i] * x_image;
    if (forward) {
      conv2d_reference(q, xi, w, nullptr, ref, abs_sum);
    } else {
      conv2d_backward_reference(q, xi, w, dy + starts[i] * y_image, ref, nullptr, nullptr, abs_sum,
                                nullptr);
    }
  }
  return r;
}

// The part of a pass's output that `r` holds the reference of.
std::vector<float> checked_part(std::vector<float> out, const PassReference& r) {
  if (r.images.empty()) return out;
  std::vector<float> part;
  for (const int64_t image : r.images) {
    const auto first = out.begin() + image * r.per_image;
    part.insert(part.end(), first, first + r.per_image);
  }
  return part;
}

// Each named algorithm cuDNN serves is run once and checked (its record kept in `checked`, its
// name in the returned list); the others become skipped records with cuDNN's status. Conv is
// cudnn::ConvForward or cudnn::ConvBackward.
template <typename Conv>
std::vector<std::string> check_cudnn_rows(Conv& conv, const ConvProblem& p,
                                          const std::vector<std::string>& names,
                                          const PassReference& r, nlohmann::json& records,
                                          std::vector<nlohmann::json>& checked) {
  std::vector<std::string> rows;
  const std::vector<double>& ref = r.ref;
  const std::vector<double>& abs_sum = r.abs_sum;
  const double k = r.k;
  for (const std::string& n : names) {
    std::string why = conv.why_not(n);
    nlohmann::json rec{{"algorithm", n}, {"problem", p.str()}, {"device", "cuda"}};
    if (why.empty()) {
      try {
        conv.run(n);
        record_error(rec, checked_part(conv.output(), r), ref, abs_sum, k);
        if (!r.images.empty()) {
          rec["checked"] = fmt::format("images {} and {} of {} against the reference",
                                       r.images.front(), r.images.back(), p.mb);
        }
        rec["workspace_bytes"] = conv.workspace_bytes(n);
      } catch (const Error& e) {
        why = e.what();
      }
    }
    if (!why.empty()) {
      rec["status"] = "skipped";
      rec["reason"] = "cuDNN: " + why;
      records.push_back(rec);
      continue;
    }
    rows.push_back(n);
    checked.push_back(rec);
  }
  return rows;
}

// Alternating rounds (cuda::time_alternately); each row bracketed by CUDA events, read after each
// round (one synchronisation per round, none between rows). With o.cuda_graph each row's call is
// captured once into a CUDA graph (after the check has run every row, so the shared workspace no
// longer moves) and launched in one call. Milliseconds per row, the measured rounds.
template <typename Conv>
std::vector<std::vector<double>> time_cudnn_rows(Conv& conv, const std::vector<std::string>& rows,
                                                 const ConvBenchOptions& o) {
  if (rows.empty()) return {};
  check_interrupt();
  return cuda::time_alternately(
      static_cast<int>(rows.size()), [&](int i) { conv.run(rows[static_cast<std::size_t>(i)]); },
      o.cuda_graph, o.warmup, o.measure, check_interrupt);
}

// The run's context: device, cuDNN, method, and cuDNN's own guess and find for the problem.
template <typename Conv>
nlohmann::json cudnn_context(Conv& conv, const ConvBenchOptions& o) {
  nlohmann::json ctx = run_context();
  ctx["device"] = "cuda";
  ctx["cuda_device"] = cuda::device_summary();
  ctx["cudnn_version"] = cudnn::version();
  ctx["math"] = "FP32 (CUDNN_FMA_MATH: no TF32), NCHW, cross-correlation";
  ctx["timing"] = "CUDA events around each run, read after each round of all rows";
  ctx["launch"] = o.cuda_graph ? "graph (each row's call captured once as a CUDA graph)"
                               : "eager (each row's cuDNN call made at each run)";
  ctx["warmup"] = o.warmup;
  ctx["measure"] = o.measure;
  ctx["pass"] = to_string(o.pass);
  const std::vector<cudnn::AlgoResult> guess = conv.guess();
  const auto first_ok = std::find_if(guess.begin(), guess.end(), [](const cudnn::AlgoResult& a) {
    return a.status == "CUDNN_STATUS_SUCCESS";
  });
  ctx["guess"] = first_ok != guess.end() ? first_ok->algorithm : "";
  nlohmann::json find = nlohmann::json::array();
  cudnn::FindOptions opts;
  opts.launch = o.cuda_graph ? cudnn::Launch::kGraph : cudnn::Launch::kEager;
  opts.engines = o.engines;
  for (const cudnn::AlgoResult& a : conv.find(opts)) {
    find.push_back({{"algorithm", a.algorithm},
                    {"status", a.status},
                    {"ms", a.ms},
                    {"cudnn_ms", a.cudnn_ms},
                    {"workspace_bytes", a.workspace_bytes}});
  }
  // cuDNN's candidates timed again by nnperf as this run launches them (ms; cuDNN's own figure in
  // cudnn_ms), fastest first; workspaces up to 1 GiB
  ctx["find"] = find;
  ctx["flops_convention"] = "direct-convolution FLOPs (2 per multiply-add) for every algorithm";
  return ctx;
}

// The checked rows timed, as records; every pass counts the forward pass's FLOPs.
template <typename Conv>
nlohmann::json bench_cudnn_rows(Conv& conv, const ConvProblem& p,
                                const std::vector<std::string>& names, const PassReference& r,
                                const ConvBenchOptions& o) {
  nlohmann::json records = nlohmann::json::array();
  std::vector<nlohmann::json> checked;
  const std::vector<std::string> rows = check_cudnn_rows(conv, p, names, r, records, checked);
  const std::vector<std::vector<double>> ms = time_cudnn_rows(conv, rows, o);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Summary s = summarize(ms[i]);
    nlohmann::json rec = checked[i];
    rec["status"] = "ok";
    rec["pass"] = to_string(o.pass);
    rec["time_ms_median"] = s.median;
    rec["time_ms_min"] = s.min;
    rec["time_ms_max"] = s.max;
    rec["reps"] = s.count;
    rec["flops"] = p.flops();
    rec["gflops_per_s"] = p.flops() / (s.median * 1e-3) * 1e-9;
    records.push_back(rec);
  }
  return {{"context", cudnn_context(conv, o)}, {"records", records}};
}

}  // namespace

nlohmann::json bench_conv_cuda(const ConvProblem& p, const ConvBenchOptions& o) {
  check_problem(p, 2 * static_cast<int64_t>(sizeof(double)));  // the reference and its bound
  check_reference_cost(p);
  if (o.warmup < 0 || o.measure < 1) throw UsageError("--warmup must be >= 0 and --measure >= 1");
  // cuDNN's algorithms by the name rule, in their spelling; an engine ("engine:<id>...", from
  // --engines' rows) as given. Checked before the device is.
  std::vector<std::string> names;
  for (const std::string& n : o.algorithms) {
    names.push_back(n.starts_with("engine:") ? n
                                             : cudnn::checked_algorithm(o.pass, "--algorithms", n));
  }
  cuda::require("--device cuda");
  if (!cudnn::available()) throw UsageError("--device cuda: " + cudnn::unavailable_reason());
  if (names.empty()) {
    for (const char* n : cudnn::algorithms(o.pass)) names.emplace_back(n);
  }
  const Inputs in = make_inputs(p, o.seed);
  std::vector<float> dy(static_cast<std::size_t>(p.dst_numel()));
  Rng(o.seed + 1).fill_uniform(dy, -1.0f, 1.0f);
  const PassReference r = pass_reference(p, o.pass, in.src.data(), in.wei.data(), dy.data());
  const auto span = [](const Tensor& t) {
    return std::span<const float>(t.data(), static_cast<std::size_t>(t.numel()));
  };
  // --engines: the pass's graph-API engines as rows, or one skipped row with the reason.
  const auto with_engines = [&](auto& conv) {
    if (!o.engines) return names;
    std::vector<std::string> all = names;
    const std::vector<std::string> engines = conv.engines();
    if (engines.empty()) all.emplace_back("engine:none");
    all.insert(all.end(), engines.begin(), engines.end());
    return all;
  };
  if (o.pass == ConvPass::kForward) {
    cudnn::ConvForward conv(p, span(in.src), span(in.wei));
    return bench_cudnn_rows(conv, p, with_engines(conv), r, o);
  }
  cudnn::ConvBackward conv(p, o.pass,
                           o.pass == ConvPass::kBackwardData ? span(in.wei) : span(in.src), dy);
  return bench_cudnn_rows(conv, p, with_engines(conv), r, o);
}

}  // namespace nnperf
