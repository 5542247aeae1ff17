// GEMM benchmark over the registry: every algorithm at square sizes (naive/parallel up to 512)
// and at the MLP's Linear-layer shapes in the three patterns of a training step (forward Y = X W,
// dW = X^T dY, dX = dY W^T), at 1 and 2 threads, with GFLOP/s as a counter (FLOPs = 2 m n k).
// Compare algorithms with --benchmark_enable_random_interleaving=true --benchmark_repetitions=N.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/threads.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {
namespace {

void bm_gemm(benchmark::State& state, const GemmAlgorithm* algo, GemmShape shape, int threads) {
  set_threads(threads);  // OpenMP default and OpenBLAS's own pool
  const bench::GemmOperands g(*algo, shape, threads, 42);
  bench::timed_loop(
      state, [&] { algo->run(g.args); }, g.c.data());
  state.counters["gflops"] = bench::gflops(shape.flops());
}

void register_all() {
  bench::add_context(true);
  std::vector<GemmShape> square;
  for (int64_t s : {64, 256, 512, 1024}) square.push_back(GemmShape{false, false, s, s, s});
  // Linear(in, out) layers of the studies' MLPs, batch mb: forward m=mb n=out k=in; dW = X^T dY
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
    if (algo.device != Device::kCpu) continue;  // `nnperf bench gemm --device cuda` times those
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
  return nnperf::bench::run_main(argc, argv, nnperf::register_all);
}
