// The FFT convolutions (fft, fft_tiling) beside the other registry rows on the layers where FFT
// is expected to matter: 3x3 at 64/256/512 channels, a 5x5 layer (where FFT starts to pay) and
// the 7x7 stride-2 stem (FFT declines it; the reason is shown as the skip message). GFLOP/s is
// the effective rate: direct-convolution FLOPs (2 per multiply-add) / time, so algorithms that
// do fewer multiplies can exceed the machine's peak. Weight transforms (pack_weights, plan time,
// which also creates the FFTW plans) are outside the timed loop.
// Compare with --benchmark_enable_random_interleaving=true --benchmark_repetitions=N.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/conv/conv.h"

namespace nnperf {
namespace {

void bm_conv(benchmark::State& state, const ConvAlgorithm* algo, ConvProblem p, int threads) {
  const std::string reason = algo->why_not(p);
  if (!reason.empty()) {
    state.SkipWithError(reason.c_str());
    return;
  }
  set_threads(threads);  // OpenMP default and OpenBLAS's own pool (gemm, winograd_nonfused)
  std::vector<float> src(static_cast<std::size_t>(p.src_numel()));
  std::vector<float> wei(static_cast<std::size_t>(p.wei_numel()));
  std::vector<float> bias(static_cast<std::size_t>(p.oc));
  std::vector<float> dst(static_cast<std::size_t>(p.dst_numel()));
  Rng rng(42);
  rng.fill_uniform(src, -1.0f, 1.0f);
  rng.fill_uniform(wei, -1.0f, 1.0f);
  rng.fill_uniform(bias, -1.0f, 1.0f);
  Workspace ws, packed;
  ws.reserve(algo->workspace_bytes(p, threads));
  ConvArgs args;
  args.p = &p;
  args.src = src.data();
  args.wei = wei.data();
  args.bias = bias.data();
  args.dst = dst.data();
  args.workspace = ws.data();
  args.threads = threads;
  double packed_bytes = 0.0;
  if (algo->pack_weights != nullptr) {
    packed_bytes = static_cast<double>(algo->packed_weights_floats(p)) * sizeof(float);
    packed.reserve(static_cast<std::size_t>(packed_bytes));
    algo->pack_weights(p, wei.data(), static_cast<float*>(packed.data()));
    args.packed = static_cast<const float*>(packed.data());
  }
  algo->run(args);  // warm caches, page in buffers, wake thread pools
  for (auto _ : state) {
    algo->run(args);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["gflops"] =
      benchmark::Counter(p.flops() * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["packed_mb"] = packed_bytes / (1 << 20);
  state.counters["workspace_mb"] =
      static_cast<double>(algo->workspace_bytes(p, threads)) / (1 << 20);
}

void register_all() {
  benchmark::AddCustomContext("nnperf_simd", to_string(active_simd()));
  const char* const layers[] = {
      "mb1ic64ih56oc64kh3ph1",     // ResNet-50 conv2_x 3x3
      "mb1ic256ih56oc256kh3ph1",   // VGG16 conv3_x
      "mb1ic512ih28oc512kh3ph1",   // VGG16 conv4_x
      "mb1ic3ih224oc64kh7sh2ph3",  // ResNet-50 stem: stride 2, FFT declines
      "mb1ic64ih56oc64kh5ph2",     // 5x5: where FFT starts to pay
  };
  // The FFT rows, and the rows they compete with for `guess` on these layers.
  const char* const algos[] = {"fft", "fft_tiling", "gemm", "winograd"};
  for (const char* layer : layers) {
    const ConvProblem p = parse_conv_problem(layer);
    for (const char* name : algos) {
      const ConvAlgorithm* algo = nullptr;
      for (const ConvAlgorithm& a : conv_algorithms()) {
        if (name == std::string(a.name)) algo = &a;
      }
      if (algo == nullptr) continue;  // a row not (yet) in the registry
      for (int threads : {1, 2}) {
        benchmark::RegisterBenchmark(
            fmt::format("conv/{}/{}/t{}", algo->name, p.str(), threads).c_str(), bm_conv, algo, p,
            threads)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            // The least-disturbed repetition, for a machine shared with other jobs.
            ->ComputeStatistics("min", [](const std::vector<double>& v) {
              return *std::min_element(v.begin(), v.end());
            });
      }
    }
  }
}

}  // namespace
}  // namespace nnperf

int main(int argc, char** argv) {
  nnperf::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
