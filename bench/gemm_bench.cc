// GEMM benchmark over the registry: every algorithm at square sizes (naive/parallel up to 512)
// and at the MLP's Linear-layer shapes in the three patterns of a training step (forward Y = X W,
// dW = X^T dY, dX = dY W^T), at 1 and 2 threads, with GFLOP/s as a counter (FLOPs = 2 m n k).
// Compare algorithms with --benchmark_enable_random_interleaving=true --benchmark_repetitions=N.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {
namespace {

void bm_gemm(benchmark::State& state, const GemmAlgorithm* algo, GemmShape shape, int threads) {
  set_threads(threads);  // OpenMP default and OpenBLAS's own pool
  const int64_t a_cols = shape.trans_a ? shape.m : shape.k;
  const int64_t b_cols = shape.trans_b ? shape.k : shape.n;
  std::vector<float> a(static_cast<std::size_t>(shape.m * shape.k));
  std::vector<float> b(static_cast<std::size_t>(shape.k * shape.n));
  std::vector<float> c(static_cast<std::size_t>(shape.m * shape.n));
  Rng rng(42);
  rng.fill_uniform(a, -1.0f, 1.0f);
  rng.fill_uniform(b, -1.0f, 1.0f);
  Workspace ws;
  ws.reserve(algo->workspace_bytes(shape, threads));
  GemmArgs args;
  args.shape = shape;
  args.a = a.data();
  args.lda = a_cols;
  args.b = b.data();
  args.ldb = b_cols;
  args.c = c.data();
  args.ldc = shape.n;
  args.workspace = ws.data();
  args.threads = threads;
  algo->run(args);  // warm caches, page in buffers, wake thread pools
  for (auto _ : state) {
    algo->run(args);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["gflops"] =
      benchmark::Counter(shape.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

void register_all() {
  benchmark::AddCustomContext("nnperf_simd", to_string(active_simd()));
  benchmark::AddCustomContext("nnperf_blas", blas_description());
  std::vector<GemmShape> square;
  for (int64_t s : {64, 256, 512, 1024}) square.push_back(GemmShape{false, false, s, s, s});
  // Linear(in, out) layers of the seeds' MLPs, batch mb: forward m=mb n=out k=in; dW = X^T dY
  // m=in n=out k=mb (trans_a); dX = dY W^T m=mb n=in k=out (trans_b).
  const std::vector<std::pair<int64_t, int64_t>> layers = {
      {784, 512}, {512, 256}, {256, 128}, {128, 64}, {64, 10}, {784, 128}, {128, 10}};
  std::vector<GemmShape> mlp;
  for (int64_t mb : {64, 256, 1024}) {
    for (const auto& [in, out] : layers) {
      mlp.push_back(GemmShape{false, false, mb, out, in});
      mlp.push_back(GemmShape{true, false, in, out, mb});
      mlp.push_back(GemmShape{false, true, mb, in, out});
    }
  }
  for (const GemmAlgorithm& algo : gemm_algorithms()) {
    const bool slow = std::string(algo.name) == "naive" || std::string(algo.name) == "parallel";
    for (int threads : {1, 2}) {
      for (const GemmShape& s : square) {
        if (slow && s.m > 512) continue;
        benchmark::RegisterBenchmark(
            fmt::format("gemm/{}/{}/t{}", algo.name, s.str(), threads).c_str(), bm_gemm, &algo, s,
            threads)
            ->UseRealTime();
      }
      for (const GemmShape& s : mlp) {
        if (slow && (s.trans_a ? s.k : s.m) > 64) continue;  // only batch 64 for the slow ones
        benchmark::RegisterBenchmark(
            fmt::format("gemm_mlp/{}/{}/t{}", algo.name, s.str(), threads).c_str(), bm_gemm, &algo,
            s, threads)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace
}  // namespace nnperf

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  nnperf::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
