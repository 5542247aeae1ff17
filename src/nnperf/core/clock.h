// Clocks: the one place nnperf reads time. CPU work is timed with the steady clock (vDSO
// clock_gettime, ~20 ns a read here); device work is timed with events recorded in the stream and
// resolved after the pass (IntervalTimer; the CUDA implementation is gpu/cuda.h's
// make_event_timer), so no per-layer synchronisation is needed.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <numeric>
#include <utility>
#include <vector>

#include "nnperf/core/rng.h"

namespace nnperf {

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double seconds_since(int64_t start_ns) {
  return static_cast<double>(now_ns() - start_ns) * 1e-9;
}

// Records begin/end marks of numbered intervals and resolves their durations later. The CPU
// implementation reads the clock at once; the CUDA implementation records events into the stream
// and resolves with cudaEventElapsedTime after one synchronisation per pass.
class IntervalTimer {
 public:
  virtual ~IntervalTimer() = default;
  virtual const char* name() const = 0;
  virtual void begin(int slot) = 0;
  virtual void end(int slot) = 0;
  // Adds each slot's elapsed milliseconds since the last resolve() to ms[slot] and counts[slot].
  virtual void resolve(std::vector<double>& ms, std::vector<int64_t>& counts) = 0;
};

class CpuIntervalTimer final : public IntervalTimer {
 public:
  explicit CpuIntervalTimer(int slots)
      : start_(static_cast<std::size_t>(slots), 0),
        acc_ns_(static_cast<std::size_t>(slots), 0),
        n_(static_cast<std::size_t>(slots), 0) {}
  const char* name() const override { return "cpu-steady-clock"; }
  void begin(int slot) override { start_[static_cast<std::size_t>(slot)] = now_ns(); }
  void end(int slot) override {
    const auto s = static_cast<std::size_t>(slot);
    acc_ns_[s] += now_ns() - start_[s];
    ++n_[s];
  }
  void resolve(std::vector<double>& ms, std::vector<int64_t>& counts) override {
    ms.resize(acc_ns_.size(), 0.0);
    counts.resize(acc_ns_.size(), 0);
    for (std::size_t i = 0; i < acc_ns_.size(); ++i) {
      ms[i] += static_cast<double>(acc_ns_[i]) * 1e-6;
      counts[i] += n_[i];
      acc_ns_[i] = 0;
      n_[i] = 0;
    }
  }

 private:
  std::vector<int64_t> start_, acc_ns_, n_;
};

// The order n pieces run in during round `round` of an alternating timing: round 0 in index
// order, every later round a permutation of its own (Fisher-Yates on an Rng seeded by the round),
// so that no piece always runs after the same one (the piece before can leave the caches, the
// clocks or the GPU's queue in a state of its own, and a fixed order hands that to the same
// successor every round). The same orders on every run.
inline std::vector<int> round_order(int n, int round) {
  std::vector<int> order(static_cast<std::size_t>(std::max(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  if (round == 0) return order;
  Rng rng(0x0A17E27A7E000000ull ^ static_cast<uint64_t>(round));
  for (std::size_t i = order.size(); i > 1; --i) {
    std::swap(order[i - 1], order[static_cast<std::size_t>(rng.below(i))]);
  }
  return order;
}

// Times n pieces of host work alternately (the CPU's twin of gpu/cuda.h's time_alternately):
// `warmup` untimed rounds, then `rounds` timed ones, each calling run(i) once for every piece in
// round_order's order under the steady clock, `before_round` (when given: a Ctrl-C poll) first.
// Returns ms[piece][timed round].
inline std::vector<std::vector<double>> time_alternately_on_host(
    int n, const std::function<void(int)>& run, int warmup, int rounds,
    const std::function<void()>& before_round = {}) {
  std::vector<std::vector<double>> ms(static_cast<std::size_t>(n));
  for (int r = 0; r < warmup + rounds; ++r) {
    if (before_round) before_round();
    for (const int i : round_order(n, r)) {
      const int64_t t0 = now_ns();
      run(i);
      if (r >= warmup)
        ms[static_cast<std::size_t>(i)].push_back(static_cast<double>(now_ns() - t0) * 1e-6);
    }
  }
  return ms;
}

// Points on a clock's timeline, read together: mark() notes "now" and returns the mark's index
// (0, 1, ...); read() returns every mark's time in ns from an origin of that clock and starts
// over. The CPU one reads the steady clock at mark(); the CUDA one (gpu/cuda.h's
// make_event_timeline) records an event into the stream, and read() synchronises once.
class Timeline {
 public:
  virtual ~Timeline() = default;
  virtual const char* name() const = 0;
  virtual int mark() = 0;
  virtual std::vector<int64_t> read() = 0;
  // Readies `marks` marks before anything is timed, so that none is prepared between two of them
  // (the CUDA timeline creates its events here rather than at their first mark()).
  virtual void reserve(int marks) = 0;
};

class CpuTimeline final : public Timeline {
 public:
  const char* name() const override { return "cpu-steady-clock"; }
  int mark() override {
    marks_.push_back(now_ns());
    return static_cast<int>(marks_.size()) - 1;
  }
  std::vector<int64_t> read() override {
    std::vector<int64_t> out = std::move(marks_);
    marks_.clear();
    marks_.reserve(out.capacity());  // the next round marks as many without reallocating
    return out;
  }
  void reserve(int marks) override { marks_.reserve(static_cast<std::size_t>(marks)); }

 private:
  std::vector<int64_t> marks_;
};

}  // namespace nnperf
