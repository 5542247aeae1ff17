// Activation kernels, forward and backward, per SIMD path, at the activation-timing study's size
// (n = 64 x 512: one hidden layer of a batch of 64). Reports GB/s (bytes each call must move) and ns/element.
//   activations_bench                       Google Benchmark run (usual --benchmark_* flags)
//   activations_bench --accuracy [stride]   worst errors vs the float64 reference over every
//                                           stride-th float in [-100, 100] plus large values;
//                                           the numbers behind the table's stated tolerances.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/activations_internal.h"

namespace {

using nnperf::SimdLevel;
using nnperf::detail::ActivationPath;

constexpr int64_t kN = 64 * 512;
constexpr SimdLevel kLevels[] = {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512};

struct Buffers {
  std::vector<float> src, dst, d_dst, d_src;
  explicit Buffers(int64_t n) : src(n), dst(n), d_dst(n), d_src(n) {
    nnperf::Rng rng(42);
    rng.fill_uniform(src, -6.0f, 6.0f);  // the range pre-activations of a trained MLP live in
    rng.fill_uniform(d_dst, -1.0f, 1.0f);
  }
};

void bm_forward(benchmark::State& state, const ActivationPath* path) {
  Buffers b(kN);
  for (auto _ : state) {
    path->forward(b.src.data(), b.dst.data(), kN);
    benchmark::DoNotOptimize(b.dst.data());
    benchmark::ClobberMemory();
  }
  const double elements = static_cast<double>(state.iterations()) * kN;
  state.SetBytesProcessed(static_cast<int64_t>(elements * 8));  // read src, write dst
  state.counters["ns_per_elem"] = benchmark::Counter(
      elements * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void bm_backward(benchmark::State& state, const ActivationPath* path) {
  Buffers b(kN);
  path->forward(b.src.data(), b.dst.data(), kN);
  for (auto _ : state) {
    path->backward(b.src.data(), b.dst.data(), b.d_dst.data(), b.d_src.data(), kN);
    benchmark::DoNotOptimize(b.d_src.data());
    benchmark::ClobberMemory();
  }
  const double elements = static_cast<double>(state.iterations()) * kN;
  // The minimum traffic: src or dst (ELU reads both: 16 bytes), d_dst, d_src.
  state.SetBytesProcessed(static_cast<int64_t>(elements * 12));
  state.counters["ns_per_elem"] = benchmark::Counter(
      elements * 1e-9, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void register_benchmarks() {
  for (const nnperf::ActivationKernel& k : nnperf::activation_kernels()) {
    for (SimdLevel level : kLevels) {
      const ActivationPath* path = nnperf::detail::find_activation_path(level, k.name);
      if (path == nullptr) continue;
      const std::string tag = fmt::format("{}/{}/n{}", k.name, nnperf::to_string(level), kN);
      benchmark::RegisterBenchmark(("forward/" + tag).c_str(), bm_forward, path);
      benchmark::RegisterBenchmark(("backward/" + tag).c_str(), bm_backward, path);
    }
  }
}

// ---- accuracy scan ----------------------------------------------------------------------------

struct Worst {
  double rel = 0, rel_at = 0;  // max |err| / |ref| where |ref| >= floor
  double abs = 0, abs_at = 0;  // max |err| where |ref| < floor
  void add(double x, double y, double ref, double floor) {
    const double err = std::fabs(y - ref);
    if (!(err == err)) {  // NaN where the reference is not: report as infinite
      rel = INFINITY;
      rel_at = x;
      return;
    }
    if (std::fabs(ref) >= floor) {
      if (err / std::fabs(ref) > rel) rel = err / std::fabs(ref), rel_at = x;
    } else if (err > abs) {
      abs = err, abs_at = x;
    }
  }
};

std::vector<float> scan_points(uint32_t stride) {
  std::vector<float> xs;
  const uint32_t top = std::bit_cast<uint32_t>(100.0f);
  for (uint32_t bits = 0; bits <= top; bits += stride) {
    const float v = std::bit_cast<float>(bits);
    xs.push_back(v);
    xs.push_back(-v);
  }
  for (float v : {1e3f, 1e4f, 1e6f, 1e20f, 3e38f}) {
    xs.push_back(v);
    xs.push_back(-v);
  }
  return xs;
}

int run_accuracy(uint32_t stride) {
  const std::vector<float> xs = scan_points(stride);
  const int64_t n = static_cast<int64_t>(xs.size());
  std::vector<float> y(xs.size()), dy(xs.size(), 1.0f), dx(xs.size());
  constexpr double kEps = 0x1.0p-23;
  fmt::print("{} points (every {}th float in [-100, 100] plus +-1e3..3e38)\n", n, stride);
  fmt::print(
      "rel in eps = 2^-23 units (fwd where |ref| >= 1e-30, bwd where |ref'| >= 0.5); fwd_abs "
      "where |ref| < 1e-30; bwd_abs over all points (d_dst = 1)\n");
  fmt::print("{:<10} {:<7} {:>10} {:>12} {:>10} {:>12} | {:>10} {:>12} {:>10} {:>12}\n", "name",
             "path", "fwd_rel", "at", "fwd_abs", "at", "bwd_abs", "at", "bwd_rel", "at");
  for (const nnperf::ActivationKernel& k : nnperf::activation_kernels()) {
    for (SimdLevel level : kLevels) {
      const ActivationPath* path = nnperf::detail::find_activation_path(level, k.name);
      if (path == nullptr) continue;
      path->forward(xs.data(), y.data(), n);
      path->backward(xs.data(), y.data(), dy.data(), dx.data(), n);
      // Forward: relative above 1e-30, absolute below. Backward (|f'| <= 1.13 for all rows):
      // absolute everywhere (floor = inf), and relative where |f'| >= 0.5.
      Worst fwd, bwd_abs, bwd_rel;
      for (int64_t i = 0; i < n; ++i) {
        fwd.add(xs[i], y[i], k.reference(xs[i]), 1e-30);
        bwd_abs.add(xs[i], dx[i], k.reference_derivative(xs[i]), INFINITY);
        bwd_rel.add(xs[i], dx[i], k.reference_derivative(xs[i]), 0.5);
      }
      fmt::print(
          "{:<10} {:<7} {:>10.2f} {:>12.5g} {:>10.3g} {:>12.5g} | {:>10.3g} {:>12.5g} {:>10.2f} "
          "{:>12.5g}\n",
          k.name, nnperf::to_string(level), fwd.rel / kEps, fwd.rel_at, fwd.abs, fwd.abs_at,
          bwd_abs.abs, bwd_abs.abs_at, bwd_rel.rel / kEps, bwd_rel.rel_at);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--accuracy") == 0) {
      const uint32_t stride = i + 1 < argc ? static_cast<uint32_t>(std::stoul(argv[i + 1])) : 61;
      return run_accuracy(std::max(1u, stride));
    }
  }
  return nnperf::bench::run_main(argc, argv, register_benchmarks);
}
