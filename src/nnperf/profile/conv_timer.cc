// time_conv_ms: one warm-up run (page faults, caches, OpenMP pool), then a few timed runs and
// their median, the statistic cudnnFind-style selection needs (robust to one preempted run).
#include "nnperf/profile/conv_timer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/interrupt.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/workspace.h"
#include "nnperf/core/clock.h"

namespace nnperf {

namespace {
constexpr int kMaxRuns = 5;
constexpr int kMinRuns = 3;
constexpr double kBudgetMs = 300.0;    // stop after kMinRuns once this much was spent
constexpr double kSlowRunMs = 1000.0;  // one warm-up this slow: a single timed run is enough

float* floats(Workspace& w, int64_t n) {
  w.reserve(static_cast<std::size_t>(std::max<int64_t>(n, 1)) * sizeof(float));
  return static_cast<float*>(w.data());
}

float* random_floats(Workspace& w, int64_t n, Rng& rng) {
  float* f = floats(w, n);
  rng.fill_uniform(std::span<float>(f, static_cast<std::size_t>(std::max<int64_t>(n, 0))), -1.0f,
                   1.0f);
  return f;
}

// One untimed warm-up, then the median of up to kMaxRuns timed runs (see conv_timer.h).
template <class Run>
double median_ms(Run run, double loser_above_ms) {
  int64_t start = now_ns();
  run();
  const double warmup_ms = static_cast<double>(now_ns() - start) * 1e-6;
  check_interrupt();
  if (warmup_ms > loser_above_ms) return warmup_ms;
  std::vector<double> runs;
  double spent = 0.0;
  const int max_runs = warmup_ms > kSlowRunMs ? 1 : kMaxRuns;
  while (static_cast<int>(runs.size()) < max_runs) {
    check_interrupt();
    start = now_ns();
    run();
    const double ms = static_cast<double>(now_ns() - start) * 1e-6;
    runs.push_back(ms);
    spent += ms;
    if (static_cast<int>(runs.size()) >= kMinRuns && spent > kBudgetMs) break;
  }
  std::sort(runs.begin(), runs.end());
  const std::size_t n = runs.size();
  return n % 2 == 1 ? runs[n / 2] : 0.5 * (runs[n / 2 - 1] + runs[n / 2]);
}
}  // namespace

double time_conv_ms(const ConvAlgorithm& algo, const ConvProblem& p, int threads,
                    double loser_above_ms, bool with_weight_prep) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) throw Error(fmt::format("time_conv_ms: problem {}: {}", p.str(), invalid));
  const std::string why = algo.why_not(p);
  if (!why.empty()) {
    throw Error(fmt::format("time_conv_ms: '{}' cannot run {}: {}", algo.name, p.str(), why));
  }
  threads = std::max(1, threads);
  check_interrupt();  // find times many candidates: Ctrl-C is honoured between them
  Workspace src_buf, wei_buf, bias_buf, dst_buf, packed, ws;
  float* src = floats(src_buf, p.src_numel());
  float* wei = floats(wei_buf, p.wei_numel());
  float* bias = floats(bias_buf, p.oc);
  float* dst = floats(dst_buf, p.dst_numel());
  Rng rng(0xC0417);
  rng.fill_uniform(std::span<float>(src, static_cast<std::size_t>(p.src_numel())), -1.0f, 1.0f);
  rng.fill_uniform(std::span<float>(wei, static_cast<std::size_t>(p.wei_numel())), -1.0f, 1.0f);
  rng.fill_uniform(std::span<float>(bias, static_cast<std::size_t>(p.oc)), -1.0f, 1.0f);
  const ConvArgs args = conv_prepare(algo, p, src, wei, bias, dst, threads, ws, packed);
  float* packed_out = const_cast<float*>(args.packed);  // conv_prepare's buffer, owned here
  const bool prep = with_weight_prep && algo.pack_weights != nullptr && packed_out != nullptr;
  return median_ms(
      [&] {
        if (prep) algo.pack_weights(p, wei, packed_out, threads);
        algo.run(args);
      },
      loser_above_ms);
}

double time_conv_backward_ms(const ConvBackwardAlgorithm& algo, const ConvProblem& p, int threads,
                             double loser_above_ms) {
  const std::string invalid = p.invalid_reason();
  if (!invalid.empty()) {
    throw Error(fmt::format("time_conv_backward_ms: problem {}: {}", p.str(), invalid));
  }
  const std::string why = algo.why_not(p);
  if (!why.empty()) {
    throw Error(
        fmt::format("time_conv_backward_ms: '{}' cannot run {}: {}", algo.name, p.str(), why));
  }
  threads = std::max(1, threads);
  check_interrupt();
  Workspace src_buf, wei_buf, dy_buf, dx_buf, dw_buf, db_buf, ws;
  Rng rng(0xC0418);
  ConvBackwardArgs a;
  a.p = &p;
  a.src = random_floats(src_buf, p.src_numel(), rng);
  a.wei = random_floats(wei_buf, p.wei_numel(), rng);
  a.dst_grad = random_floats(dy_buf, p.dst_numel(), rng);
  a.src_grad = floats(dx_buf, p.src_numel());
  a.wei_grad = floats(dw_buf, p.wei_numel());
  a.bias_grad = floats(db_buf, p.oc);
  ws.reserve(std::max<std::size_t>(algo.workspace_bytes(p, threads), 1));
  a.workspace = ws.data();
  a.threads = threads;
  return median_ms([&] { algo.run(a); }, loser_above_ms);
}

}  // namespace nnperf
