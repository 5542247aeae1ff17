// BatchNorm's training loops (kernels/batchnorm.h) on one thread, the two layouts of the work side
// by side on the SIMD path this CPU runs: per channel (one plane of each image at a time) and by
// blocks of whole channels (each image's row of the block at once), which batchnorm.cc picks for
// planes that fit a block (1024 values). Shapes: ResNet-18's at 64x64 and 32x32 (batch 32: planes
// of 32x32 down to 1x1) and ResNet-50's at 224x224 (batch 8: 7x7 to 56x56, where only the
// per-channel loops run). Reports GB/s at the two-pass minimum (forward 12, backward 20 bytes per
// element) and ns per element.
//   batchnorm_bench    Google Benchmark run (usual --benchmark_* flags)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/kernels/batchnorm.h"
#include "nnperf/kernels/batchnorm_impl.h"
#include "nnperf/kernels/batchnorm_internal.h"

namespace {

using nnperf::BatchNormShape;

const BatchNormShape kShapes[] = {{32, 64, 1024}, {32, 64, 256}, {32, 64, 64},  {32, 128, 16},
                                  {32, 256, 4},   {32, 512, 1},  {8, 2048, 49}, {8, 1024, 196},
                                  {8, 512, 784},  {8, 256, 3136}};

const nnperf::detail::BatchNormPaths& simd_paths() {
  static const nnperf::detail::BatchNormPaths portable{&nnperf::detail::train_forward_channel,
                                                       &nnperf::detail::backward_channel,
                                                       &nnperf::detail::apply_rows,
                                                       &nnperf::detail::train_forward_block,
                                                       &nnperf::detail::backward_block,
                                                       &nnperf::detail::apply_images};
  switch (nnperf::active_simd()) {
    case nnperf::SimdLevel::kAvx512:
      return nnperf::detail::kBatchNormPathsAvx512;
    case nnperf::SimdLevel::kAvx2:
      return nnperf::detail::kBatchNormPathsAvx2;
    default:
      return portable;
  }
}

struct Buffers {
  std::vector<float> x, y, dy, dx, gamma, beta, running_mean, running_var, d_gamma, d_beta;
  std::vector<double> mean, inv;
  nnperf::BatchNormTrainArgs forward;
  nnperf::BatchNormBackwardArgs backward;
  explicit Buffers(const BatchNormShape& s)
      : x(static_cast<std::size_t>(s.mb * s.channels * s.plane)),
        y(x.size()),
        dy(x.size()),
        dx(x.size()),
        gamma(static_cast<std::size_t>(s.channels), 1.0f),
        beta(gamma.size(), 0.0f),
        running_mean(gamma.size(), 0.0f),
        running_var(gamma.size(), 1.0f),
        d_gamma(gamma.size()),
        d_beta(gamma.size()),
        mean(gamma.size()),
        inv(gamma.size()) {
    nnperf::Rng rng(42);
    rng.fill_uniform(x, -1.0f, 1.0f);
    rng.fill_uniform(dy, -1.0f, 1.0f);
    forward = {s,
               x.data(),
               y.data(),
               gamma.data(),
               beta.data(),
               1e-5,
               0.1,
               running_mean.data(),
               running_var.data(),
               mean.data(),
               inv.data(),
               1};
    backward = {s,           x.data(),   dy.data(),      dx.data(),     gamma.data(),
                mean.data(), inv.data(), d_gamma.data(), d_beta.data(), 1};
  }
};

// One pass over every channel: channel by channel, or by blocks of as many whole channels as a
// block holds.
void run(const BatchNormShape& s, Buffers& b, bool backward, bool blocks) {
  const auto& p = simd_paths();
  if (!blocks) {
    for (int64_t c = 0; c < s.channels; ++c) {
      if (backward) {
        p.backward_channel(b.backward, c);
      } else {
        p.train_forward_channel(b.forward, c);
      }
    }
    return;
  }
  const int64_t per = std::max<int64_t>(1, nnperf::detail::kBatchNormBlockValues / s.plane);
  for (int64_t c0 = 0; c0 < s.channels; c0 += per) {
    const int64_t c1 = std::min(s.channels, c0 + per);
    if (backward) {
      p.backward_block(b.backward, c0, c1);
    } else {
      p.train_forward_block(b.forward, c0, c1);
    }
  }
}

void bm_pass(benchmark::State& state, BatchNormShape s, bool backward, bool blocks) {
  Buffers b(s);
  run(s, b, false, blocks);  // the saved statistics the backward reads
  nnperf::bench::timed_loop(
      state, [&] { run(s, b, backward, blocks); }, backward ? b.dx.data() : b.y.data());
  const double elements = static_cast<double>(b.x.size());
  state.SetBytesProcessed(static_cast<int64_t>((backward ? 20.0 : 12.0) * elements *
                                               static_cast<double>(state.iterations())));
  state.counters["ns_per_element"] = benchmark::Counter(
      elements * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void register_benchmarks() {
  nnperf::bench::add_context(false);
  for (const BatchNormShape& s : kShapes) {
    for (const bool backward : {false, true}) {
      for (const bool blocks : {false, true}) {
        if (blocks && s.plane > nnperf::detail::kBatchNormBlockValues) continue;
        benchmark::RegisterBenchmark(
            fmt::format("batchnorm_{}/{}/mb{}c{}p{}", backward ? "backward" : "forward",
                        blocks ? "blocks" : "channels", s.mb, s.channels, s.plane)
                .c_str(),
            bm_pass, s, backward, blocks)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return nnperf::bench::run_main(argc, argv, register_benchmarks); }
