// What the Google Benchmark binaries (bench/*_bench.cc) share: main(), the machine facts in the
// JSON context, seeded random operands for convolution and GEMM runs, the warmed-up timed loop
// and the counters. Header-only: each benchmark is its own executable.
#pragma once
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf::bench {

// main() of every benchmark binary: Google Benchmark's flags, then register_all(), then the run.
inline int run_main(int argc, char** argv, void (*register_all)()) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

// The SIMD level the kernels run (and, with blas, the BLAS library) into the JSON context.
inline void add_context(bool blas) {
  benchmark::AddCustomContext("nnperf_simd", to_string(active_simd()));
  if (blas) benchmark::AddCustomContext("nnperf_blas", blas_description());
}

// FLOPs (2 per multiply-add) done per iteration, reported as GFLOP/s.
inline benchmark::Counter gflops(double flops) {
  return benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// The least-disturbed repetition (with --benchmark_repetitions=N on a shared machine).
inline double min_of(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

// A registered benchmark in milliseconds of real time, with the least-disturbed repetition as
// an extra statistic.
inline benchmark::internal::Benchmark* ms_with_min(benchmark::internal::Benchmark* b) {
  return b->Unit(benchmark::kMillisecond)->UseRealTime()->ComputeStatistics("min", min_of);
}

// run() once untimed (warms caches, pages in buffers, wakes thread pools), then once per
// iteration; `out` (what run writes) is kept alive.
template <class Run>
void timed_loop(benchmark::State& state, const Run& run, const float* out) {
  run();
  for (auto _ : state) {
    run();
    benchmark::DoNotOptimize(out);
    benchmark::ClobberMemory();
  }
}

// A convolution's operands: src, wei, bias uniform in [-1, 1] from one stream of seed 42 (in
// that order), and dst.
struct ConvBuffers {
  std::vector<float> src, wei, bias, dst;
  explicit ConvBuffers(const ConvProblem& p)
      : src(static_cast<std::size_t>(p.src_numel())),
        wei(static_cast<std::size_t>(p.wei_numel())),
        bias(static_cast<std::size_t>(p.oc)),
        dst(static_cast<std::size_t>(p.dst_numel())) {
    Rng rng(42);
    rng.fill_uniform(src, -1.0f, 1.0f);
    rng.fill_uniform(wei, -1.0f, 1.0f);
    rng.fill_uniform(bias, -1.0f, 1.0f);
  }
};

inline ConvArgs conv_args(const ConvProblem& p, ConvBuffers& b, const float* packed,
                          void* workspace, int threads) {
  ConvArgs a;
  a.p = &p;
  a.src = b.src.data();
  a.wei = b.wei.data();
  a.packed = packed;
  a.bias = b.bias.data();
  a.dst = b.dst.data();
  a.workspace = workspace;
  a.threads = threads;
  return a;
}

// Times a registry row as layers run it: its weights packed and its workspace reserved at plan
// time, outside the timed loop; GFLOP/s as the counter. A problem it cannot serve is reported
// with its reason (returns false).
inline bool time_conv(benchmark::State& state, const ConvAlgorithm& algo, const ConvProblem& p,
                      int threads) {
  const std::string reason = algo.why_not(p);
  if (!reason.empty()) {
    state.SkipWithError(reason.c_str());
    for (auto _ : state) {
    }
    return false;
  }
  set_threads(threads);  // OpenMP default and OpenBLAS's own pool (gemm, winograd_nonfused)
  ConvBuffers buf(p);
  Workspace ws, packed;
  ws.reserve(algo.workspace_bytes(p, threads));
  if (algo.pack_weights != nullptr) {
    packed.reserve(algo.packed_weights_floats(p) * sizeof(float));
    algo.pack_weights(p, buf.wei.data(), static_cast<float*>(packed.data()), 1);
  }
  const ConvArgs args =
      conv_args(p, buf, static_cast<const float*>(packed.data()), ws.data(), threads);
  timed_loop(
      state, [&] { algo.run(args); }, buf.dst.data());
  state.counters["gflops"] = gflops(p.flops());
  return true;
}

// A GEMM's operands (row-major, each as wide as its leading dimension; A and B uniform in
// [-1, 1] from one stream of `seed`), the algorithm's workspace and the args over them.
struct GemmOperands {
  std::vector<float> a, b, c;
  Workspace ws;
  GemmArgs args;
  GemmOperands(const GemmAlgorithm& algo, GemmShape s, int threads, uint64_t seed)
      : a(static_cast<std::size_t>(s.m * s.k)),
        b(static_cast<std::size_t>(s.k * s.n)),
        c(static_cast<std::size_t>(s.m * s.n)) {
    Rng rng(seed);
    rng.fill_uniform(a, -1.0f, 1.0f);
    rng.fill_uniform(b, -1.0f, 1.0f);
    ws.reserve(algo.workspace_bytes(s, threads));
    args.shape = s;
    args.a = a.data();
    args.lda = s.trans_a ? s.m : s.k;
    args.b = b.data();
    args.ldb = s.trans_b ? s.k : s.n;
    args.c = c.data();
    args.ldc = s.n;
    args.workspace = ws.data();
    args.threads = threads;
  }
  GemmOperands(const GemmOperands&) = delete;
  GemmOperands& operator=(const GemmOperands&) = delete;
};

}  // namespace nnperf::bench
