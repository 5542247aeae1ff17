#include "nnperf/analysis/activation_analysis.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "nnperf/core/error.h"
#include "nnperf/profile/stats.h"

namespace nnperf {

namespace {

// Standard error of an accuracy measured on n samples.
double acc_se(double p, int64_t n) {
  return n > 0 ? std::sqrt(std::max(p * (1 - p), 1e-12) / static_cast<double>(n)) : 0.0;
}

}  // namespace

namespace {

// One run's row: epoch-time statistics, per-layer means, accuracy per millisecond and the share of
// a training step.
ActivationSummary summarize_run(const ActivationRun& r, int num_layers) {
  ActivationSummary s;
  s.activation = r.activation;
  s.test_acc = r.test_acc;
  const Summary t = summarize(r.total_ms_per_epoch);
  s.epochs = static_cast<int>(t.count);
  s.final_ms = r.total_ms_per_epoch.empty() ? 0.0 : r.total_ms_per_epoch.back();
  s.mean_ms = t.mean;
  s.std_ms = t.std;
  s.min_ms = t.min;
  s.max_ms = t.max;
  s.median_ms = t.median;
  s.layer_mean_ms.assign(static_cast<std::size_t>(num_layers), 0.0);
  for (const auto& epoch : r.layer_ms_per_epoch) {
    NNPERF_CHECK(static_cast<int>(epoch.size()) == num_layers,
                 "run {} has {} timed layers, expected {}", r.folder, epoch.size(), num_layers);
    for (int l = 0; l < num_layers; ++l)
      s.layer_mean_ms[static_cast<std::size_t>(l)] += epoch[static_cast<std::size_t>(l)];
  }
  for (double& v : s.layer_mean_ms)
    v = r.layer_ms_per_epoch.empty() ? 0.0 : v / static_cast<double>(r.layer_ms_per_epoch.size());
  s.acc_per_ms = s.mean_ms > 0 ? s.test_acc / s.mean_ms : 0.0;
  s.imgs_per_sec = r.imgs_per_sec;
  if (r.imgs_per_sec > 0 && r.batch_size > 0) {
    const double step_ms = 1e3 * static_cast<double>(r.batch_size) / r.imgs_per_sec;
    s.share_of_step = s.mean_ms / step_ms;
  }
  return s;
}

// A row is on the Pareto front when no other row is both at least as fast and at least as
// accurate, and strictly better in one.
void mark_pareto(std::vector<ActivationSummary>& rows) {
  for (auto& s : rows) {
    s.pareto = std::none_of(rows.begin(), rows.end(), [&](const ActivationSummary& o) {
      return &o != &s && o.mean_ms <= s.mean_ms && o.test_acc >= s.test_acc &&
             (o.mean_ms < s.mean_ms || o.test_acc > s.test_acc);
    });
  }
}

// Fastest, most accurate, most efficient and the Pareto front, each with its noise.
void compare_rows(const std::vector<ActivationSummary>& rows, int64_t n_test,
                  std::vector<std::string>& rec) {
  const auto by_time = std::min_element(rows.begin(), rows.end(),
                                        [](auto& x, auto& y) { return x.mean_ms < y.mean_ms; });
  const auto slowest = std::max_element(rows.begin(), rows.end(),
                                        [](auto& x, auto& y) { return x.mean_ms < y.mean_ms; });
  const auto by_acc = std::max_element(rows.begin(), rows.end(),
                                       [](auto& x, auto& y) { return x.test_acc < y.test_acc; });
  const auto by_eff = std::max_element(
      rows.begin(), rows.end(), [](auto& x, auto& y) { return x.acc_per_ms < y.acc_per_ms; });
  const double spread = std::hypot(by_time->std_ms, slowest->std_ms);
  const bool time_significant = slowest->mean_ms - by_time->mean_ms > 2 * spread;
  // A spread needs two timed epochs of each: with one, nothing can be said about the noise.
  const bool spread_known = by_time->epochs >= 2 && slowest->epochs >= 2;
  const char* verdict =
      !spread_known
          ? "; with one timed epoch there is no epoch-to-epoch spread to judge the gap by (time "
            "two or more epochs)"
      : time_significant ? "; the gap is larger than twice the epoch-to-epoch spread, so it is real"
                         : "; the gap is within twice the epoch-to-epoch spread, so treat them as "
                           "equally fast";
  rec.push_back(fmt::format(
      "Fastest: **{}** at {:.4f} ms of activation forward per training pass, {:.2f}x faster than "
      "the slowest, "
      "**{}** ({:.4f} ms){}.",
      by_time->activation, by_time->mean_ms,
      by_time->mean_ms > 0 ? slowest->mean_ms / by_time->mean_ms : 0.0, slowest->activation,
      slowest->mean_ms, verdict));
  // Accuracy: who is within 2 standard errors of the best.
  const double se = acc_se(by_acc->test_acc, n_test);
  std::vector<std::string> tied;
  for (const auto& s : rows) {
    if (&s != &*by_acc && by_acc->test_acc - s.test_acc <= 2 * std::sqrt(2.0) * se)
      tied.push_back(s.activation);
  }
  rec.push_back(fmt::format(
      "Most accurate: **{}** with {:.2f}% test accuracy (standard error {:.2f} points on {} test "
      "images){}.",
      by_acc->activation, 100 * by_acc->test_acc, 100 * se, n_test,
      tied.empty() ? "; every other activation is more than two standard errors behind"
                   : fmt::format("; statistically tied with {}", fmt::join(tied, ", "))));
  rec.push_back(
      fmt::format("Best accuracy per millisecond of activation time: **{}** ({:.1f} %/ms).",
                  by_eff->activation, 100 * by_eff->acc_per_ms));
  std::vector<std::string> front;
  for (const auto& s : rows) {
    if (s.pareto) front.push_back(s.activation);
  }
  rec.push_back(
      fmt::format("Pareto front (no other activation is both faster and more accurate): {}. "
                  "Choose among these; the others "
                  "cost time without buying accuracy.",
                  fmt::join(front, ", ")));
}

// How much of a training step the activations take, and what the timer itself costs.
void context_notes(const ActivationAnalysis& a, std::vector<std::string>& rec) {
  double max_share = 0;
  std::string max_share_name;
  for (const auto& s : a.rows) {
    if (s.share_of_step > max_share) {
      max_share = s.share_of_step;
      max_share_name = s.activation;
    }
  }
  if (max_share > 0) {
    rec.push_back(fmt::format(
        "Context: activation forwards take at most {:.1f}% of a whole training step ({}), so the "
        "choice of "
        "activation {} training throughput on this machine.",
        100 * max_share, max_share_name, max_share < 0.05 ? "barely changes" : "visibly changes"));
  }
  const auto by_time = std::min_element(a.rows.begin(), a.rows.end(),
                                        [](auto& x, auto& y) { return x.mean_ms < y.mean_ms; });
  if (a.timer_empty_interval_ns > 0 && by_time != a.rows.end() && a.num_layers > 0) {
    const double per_layer_ms = by_time->mean_ms / a.num_layers;
    rec.push_back(
        fmt::format("Measurement: an empty timed interval reads {:.0f} ns, {:.1f}% of the fastest "
                    "per-layer time ({:.4f} ms); "
                    "it is included in every figure above and not subtracted.",
                    a.timer_empty_interval_ns,
                    per_layer_ms > 0 ? 100 * a.timer_empty_interval_ns * 1e-6 / per_layer_ms : 0.0,
                    per_layer_ms));
  }
}

}  // namespace

ActivationAnalysis analyze_activations(const std::vector<ActivationRun>& runs) {
  ActivationAnalysis a;
  NNPERF_CHECK(!runs.empty(), "no activation runs to analyse");
  a.num_layers = runs.front().layer_ms_per_epoch.empty()
                     ? 0
                     : static_cast<int>(runs.front().layer_ms_per_epoch.front().size());
  for (const ActivationRun& r : runs) {
    a.rows.push_back(summarize_run(r, a.num_layers));
    a.timer_empty_interval_ns = std::max(a.timer_empty_interval_ns, r.timer_empty_interval_ns);
    a.device = &r == &runs.front() || a.device == r.device ? r.device : "mixed";
  }
  mark_pareto(a.rows);
  // Recommendations, each backed by the numbers and their noise.
  if (a.rows.size() > 1) compare_rows(a.rows, runs.front().test_samples, a.recommendations);
  context_notes(a, a.recommendations);
  return a;
}

}  // namespace nnperf
