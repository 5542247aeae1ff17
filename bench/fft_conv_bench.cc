// The FFT convolutions (fft, fft_tiling) beside the other registry rows on the layers where FFT
// is expected to matter: 3x3 at 64/256/512 channels, a 5x5 layer (where FFT starts to pay) and
// the 7x7 stride-2 stem (FFT declines it; the reason is shown as the skip message). GFLOP/s is
// the effective rate: direct-convolution FLOPs (2 per multiply-add) / time, so algorithms that
// do fewer multiplies can exceed the machine's peak. Weight transforms (pack_weights, plan time,
// which also creates the FFTW plans) are outside the timed loop.
// Compare with --benchmark_enable_random_interleaving=true --benchmark_repetitions=N.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/kernels/conv/conv.h"

namespace nnperf {
namespace {

void bm_conv(benchmark::State& state, const ConvAlgorithm* algo, ConvProblem p, int threads) {
  if (!bench::time_conv(state, *algo, p, threads)) return;
  const double packed_bytes =
      algo->pack_weights == nullptr
          ? 0.0
          : static_cast<double>(algo->packed_weights_floats(p)) * sizeof(float);
  state.counters["packed_mb"] = packed_bytes / (1 << 20);
  state.counters["workspace_mb"] =
      static_cast<double>(algo->workspace_bytes(p, threads)) / (1 << 20);
}

void register_all() {
  bench::add_context(false);
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
        bench::ms_with_min(benchmark::RegisterBenchmark(
            fmt::format("conv/{}/{}/t{}", algo->name, p.str(), threads).c_str(), bm_conv, algo, p,
            threads));
      }
    }
  }
}

}  // namespace
}  // namespace nnperf

int main(int argc, char** argv) {
  return nnperf::bench::run_main(argc, argv, nnperf::register_all);
}
