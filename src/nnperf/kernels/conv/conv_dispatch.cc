#include "nnperf/kernels/conv/conv_dispatch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <tuple>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/core/verbose.h"
#include "nnperf/kernels/conv/conv_internal.h"

namespace nnperf {

namespace {

constexpr const char* kConvChoices[] = {"guess", "find"};
constexpr Registry<const char*> kConvChoiceTable{kConvChoices};

// A candidate modelled at over kFindPruneFactor x the best measured time is not timed (unless
// exhaustive); one whose warm-up run exceeds kFindLoserFactor x the best median is stopped after
// that run (warm-ups include first-touch costs, hence the margin).
constexpr double kFindPruneFactor = 8.0;
constexpr double kFindLoserFactor = 3.0;

struct FindWinner {
  std::string algo;
  double ms;
  std::string report;  // every candidate's time or why it was not timed
};

// pass, problem (+ " exhaustive", + " training"), threads
using CacheKey = std::tuple<int, std::string, int>;

std::mutex& find_mutex() {
  static std::mutex m;
  return m;
}

std::map<CacheKey, FindWinner>& find_cache() {
  static std::map<CacheKey, FindWinner> cache;
  return cache;
}

// The supported row with the lowest cost; null when none serves p. Ties keep registry order.
template <class Row, class Cost>
const Row* cheapest(std::span<const Row> rows, const ConvProblem& p, int threads,
                    const Cost& cost) {
  const Row* best = nullptr;
  double best_cost = 0;
  for (const Row& a : rows) {
    if (!a.why_not(p).empty()) continue;
    const double c = cost(a, p, threads);
    if (best == nullptr || c < best_cost) {
      best = &a;
      best_cost = c;
    }
  }
  return best;
}

// "find": the supported rows in order of modelled cost, each timed by `time`.
template <class Row>
using CostFn = std::function<double(const Row&, const ConvProblem&, int)>;
template <class Row>
using TimeFn = std::function<double(const Row&, const ConvProblem&, int, double)>;

template <class Row>
FindWinner run_find(std::span<const Row> rows, const ConvProblem& p, int threads, bool exhaustive,
                    const CostFn<Row>& cost, const TimeFn<Row>& time, const std::string& who) {
  std::vector<std::pair<double, const Row*>> candidates;
  for (const Row& a : rows) {
    if (a.why_not(p).empty()) candidates.emplace_back(cost(a, p, threads) * 1e3, &a);
  }
  // Not std::stable_sort: GCC 12's temporary buffer trips AddressSanitizer's new/free check.
  std::sort(candidates.begin(), candidates.end());
  FindWinner w{"", std::numeric_limits<double>::infinity(), ""};
  for (const auto& [model_ms, a] : candidates) {
    if (!w.report.empty()) w.report += ' ';
    if (!exhaustive && std::isfinite(w.ms) && model_ms > kFindPruneFactor * w.ms) {
      w.report += fmt::format("{}=skipped(model {:.3g} ms > {:g}x best)", a->name, model_ms,
                              kFindPruneFactor);
      continue;
    }
    const double loser =
        std::isfinite(w.ms) ? kFindLoserFactor * w.ms : std::numeric_limits<double>::infinity();
    const double ms = time(*a, p, threads, loser);
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

// `time` empty: no timer (find refused).
template <class Row, class Find>
const Row& choose(std::span<const Row> rows, ConvPass pass, const ConvProblem& p, int threads,
                  const ConvSelection& s, const CostFn<Row>& cost, const TimeFn<Row>& time,
                  Find find_row, const std::string& who, ConvChoice& out) {
  out = ConvChoice{};
  const char* choice = s.wanted.empty() ? kConvChoices[0] : find_conv_choice(s.wanted);
  const Row* best = cheapest(rows, p, threads, cost);
  if (best == nullptr) {
    throw Error(
        fmt::format("{}: no {} convolution algorithm serves {}", who, to_string(pass), p.str()));
  }
  if (choice == kConvChoices[0]) {
    out.requested = "guess";
    return *best;
  }
  if (choice == kConvChoices[1]) {
    out.requested = "find";
    if (!time) {
      throw Error(
          fmt::format("{}: conv algorithm 'find' needs a timer for the {} pass: set "
                      "PlanContext::time_conv / time_conv_backward (profile/conv_timer.h)",
                      who, to_string(pass)));
    }
    const CacheKey key{
        static_cast<int>(pass),
        p.str() + (s.exhaustive ? " exhaustive" : "") + (s.training ? " training" : ""), threads};
    std::lock_guard<std::mutex> lock(find_mutex());  // held while timing: runs must not overlap
    auto it = find_cache().find(key);
    if (it == find_cache().end()) {
      it = find_cache()
               .emplace(key, run_find(rows, p, threads, s.exhaustive, cost, time, who))
               .first;
      if (verbose_enabled("dispatch")) {
        std::fprintf(stderr, "nnperf_verbose,find,%s,%s,%s\n", to_string(pass), p.str().c_str(),
                     it->second.report.c_str());
      }
    }
    out.find_ms = it->second.ms;
    return find_row(it->second.algo);
  }
  return *best;  // named: resolved by the callers below
}

}  // namespace

double conv_forward_cost(const ConvAlgorithm& a, const ConvProblem& p, int threads,
                         const ConvSelection& s) {
  return a.cost(p, threads) + (s.training ? conv_pack_cost(a, p, threads) : 0.0);
}

namespace {

double backward_cost(const ConvBackwardAlgorithm& a, const ConvProblem& p, int threads) {
  return a.cost(p, threads);
}

}  // namespace

const ConvAlgorithm& choose_conv_forward(const ConvProblem& p, int threads, const ConvSelection& s,
                                         const std::string& who, ConvChoice& out) {
  const auto find_row = [](const std::string& n) -> const ConvAlgorithm& { return find_conv(n); };
  const CostFn<ConvAlgorithm> cost = [&s](const ConvAlgorithm& a, const ConvProblem& q, int t) {
    return conv_forward_cost(a, q, t, s);
  };
  TimeFn<ConvAlgorithm> time;
  if (s.time_forward != nullptr) {
    time = [&s](const ConvAlgorithm& a, const ConvProblem& q, int t, double loser) {
      return s.time_forward(a, q, t, loser, s.training);
    };
  }
  const ConvAlgorithm& best =
      choose(conv_algorithms(), ConvPass::kForward, p, threads, s, cost, time, find_row, who, out);
  if (s.wanted.empty() || find_conv_choice(s.wanted) != nullptr) return best;
  const ConvAlgorithm* named = nullptr;
  try {
    named = &find_conv(s.wanted);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {} (or guess, find)", who, e.what()));
  }
  out.requested = named->name;
  const std::string why = named->why_not(p);
  if (why.empty()) return *named;
  if (s.strict) {
    throw Error(fmt::format("layer {}: {} cannot serve {}: {}", who, named->name, p.str(), why));
  }
  out.fallback_reason = why;
  return best;
}

const ConvBackwardAlgorithm& choose_conv_backward(ConvPass pass, const ConvProblem& p, int threads,
                                                  const ConvSelection& s, const std::string& who,
                                                  ConvChoice& out) {
  const auto rows = conv_backward_algorithms(pass);
  const auto find_row = [pass](const std::string& n) -> const ConvBackwardAlgorithm& {
    return find_conv_backward(pass, n);
  };
  TimeFn<ConvBackwardAlgorithm> time;
  if (s.time_backward != nullptr) time = s.time_backward;
  const ConvBackwardAlgorithm& best =
      choose(rows, pass, p, threads, s, CostFn<ConvBackwardAlgorithm>(backward_cost), time,
             find_row, who, out);
  if (s.wanted.empty() || find_conv_choice(s.wanted) != nullptr) return best;
  const ConvBackwardAlgorithm* named = Registry<ConvBackwardAlgorithm>(rows).find(s.wanted);
  if (named == nullptr) {  // a forward name: this pass takes its best guess
    out.requested = "guess";
    return best;
  }
  out.requested = named->name;
  const std::string why = named->why_not(p);
  if (why.empty()) return *named;
  if (s.strict) {
    throw Error(fmt::format("layer {}: {} ({}) cannot serve {}: {}", who, named->name,
                            to_string(pass), p.str(), why));
  }
  out.fallback_reason = why;
  return best;
}

std::span<const char* const> conv_choices() { return kConvChoices; }

const char* find_conv_choice(std::string_view name) {
  const char* const* row = kConvChoiceTable.find(name);
  return row != nullptr ? *row : nullptr;
}

bool is_conv_find(std::string_view name) { return find_conv_choice(name) == kConvChoices[1]; }

std::string canonical_conv_algorithm(std::string_view flag, std::string_view name) {
  if (const char* choice = find_conv_choice(name)) return choice;
  try {
    return find_conv(name).name;
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{} {}: expected {}, or one of: {}", flag, name,
                                 kConvChoiceTable.alternatives(), conv_algorithm_names()));
  }
}

void clear_conv_find_cache() {
  std::lock_guard<std::mutex> lock(find_mutex());
  find_cache().clear();
}

int conv_find_cache_size() {
  std::lock_guard<std::mutex> lock(find_mutex());
  return static_cast<int>(find_cache().size());
}

}  // namespace nnperf
