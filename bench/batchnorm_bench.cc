// BatchNorm's training passes (kernels/batchnorm.h) on one thread, the two layouts of the work side
// by side on the SIMD path this CPU runs: per channel (one plane of each image at a time) and by
// blocks of whole channels (each image's row of the block at once), which batchnorm.cc picks for
// planes that fit a block (1024 values). Shapes: ResNet-18's at 64x64 and 32x32 (batch 32: planes
// of 32x32 down to 1x1) and ResNet-50's at 224x224 (batch 8: 7x7 to 56x56, where only the
// per-channel loops run). Reports GB/s at the two-pass minimum (forward 12, backward 20 bytes per
// element) and ns per element. The batchnorm_relu_* rows time BatchNorm followed by a ReLU, as
// training runs it (the layout batchnorm.cc picks): the two kernels one after the other
// (`separate`: BatchNorm's loops, then the activation table's ReLU over the tensor) against the
// ReLU fused into BatchNorm's loops (`fused`), which give the same bits.
//   batchnorm_bench    Google Benchmark run (usual --benchmark_* flags)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/rng.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/batchnorm.h"

namespace {

using nnperf::BatchNormShape;

const BatchNormShape kShapes[] = {{32, 64, 1024}, {32, 64, 256}, {32, 64, 64},  {32, 128, 16},
                                  {32, 256, 4},   {32, 512, 1},  {8, 2048, 49}, {8, 1024, 196},
                                  {8, 512, 784},  {8, 256, 3136}};

struct Buffers {
  std::vector<float> x, y, dy, dx, gamma, beta, running_mean, running_var, d_gamma, d_beta;
  std::vector<float> relu_y, relu_dx;  // the separate ReLU's output and input gradient
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
        relu_y(x.size()),
        relu_dx(x.size()),
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
    backward.y = y.data();
  }
};

// One pass over every channel in that layout (kernels/batchnorm.h, one thread).
void run(Buffers& b, bool backward, nnperf::BatchNormLayout layout) {
  if (backward) {
    nnperf::batchnorm_backward(b.backward, layout);
  } else {
    nnperf::batchnorm_train_forward(b.forward, layout);
  }
}

void bm_pass(benchmark::State& state, BatchNormShape s, bool backward,
             nnperf::BatchNormLayout layout) {
  Buffers b(s);
  run(b, false, layout);  // the saved statistics the backward reads
  nnperf::bench::timed_loop(
      state, [&] { run(b, backward, layout); }, backward ? b.dx.data() : b.y.data());
  const double elements = static_cast<double>(b.x.size());
  state.SetBytesProcessed(static_cast<int64_t>((backward ? 20.0 : 12.0) * elements *
                                               static_cast<double>(state.iterations())));
  state.counters["ns_per_element"] = benchmark::Counter(
      elements * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// The activation table's ReLU, looked up once (on first use: no static-initialisation order).
const nnperf::ActivationKernel& relu_kernel() {
  static const nnperf::ActivationKernel& k = nnperf::find_activation("ReLU");
  return k;
}

// BatchNorm then ReLU, one pass each way: the two kernels one after the other or the fused loops.
void run_with_relu(Buffers& b, bool backward, bool fused) {
  const nnperf::ActivationKernel& relu = relu_kernel();
  const auto n = static_cast<int64_t>(b.x.size());
  b.forward.relu = fused;
  b.backward.relu = fused;
  if (!backward) {
    nnperf::batchnorm_train_forward(b.forward);
    if (!fused) relu_kernel().forward(b.y.data(), b.relu_y.data(), n);
    return;
  }
  if (fused) {
    b.backward.dy = b.dy.data();
    nnperf::batchnorm_backward(b.backward);
    return;
  }
  relu.backward(b.y.data(), b.relu_y.data(), b.dy.data(), b.relu_dx.data(), n);
  b.backward.dy = b.relu_dx.data();
  nnperf::batchnorm_backward(b.backward);
}

void bm_with_relu(benchmark::State& state, BatchNormShape s, bool backward, bool fused) {
  Buffers b(s);
  b.forward.relu = false;
  nnperf::batchnorm_train_forward(b.forward);  // the saved statistics and the ReLU's input
  if (!fused) relu_kernel().forward(b.y.data(), b.relu_y.data(), static_cast<int64_t>(b.x.size()));
  nnperf::bench::timed_loop(
      state, [&] { run_with_relu(b, backward, fused); },
      backward ? b.dx.data() : (fused ? b.y.data() : b.relu_y.data()));
  state.counters["ns_per_element"] = benchmark::Counter(
      static_cast<double>(b.x.size()) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void register_benchmarks() {
  nnperf::bench::add_context(false);
  for (const BatchNormShape& s : kShapes) {
    for (const bool backward : {false, true}) {
      for (const auto layout :
           {nnperf::BatchNormLayout::kChannels, nnperf::BatchNormLayout::kBlocks}) {
        if (!nnperf::batchnorm_layout_why_not(layout, s).empty()) continue;
        benchmark::RegisterBenchmark(
            fmt::format("batchnorm_{}/{}/mb{}c{}p{}", backward ? "backward" : "forward",
                        nnperf::to_string(layout), s.mb, s.channels, s.plane)
                .c_str(),
            bm_pass, s, backward, layout)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
  for (const BatchNormShape& s : kShapes) {
    for (const bool backward : {false, true}) {
      for (const bool fused : {false, true}) {
        benchmark::RegisterBenchmark(
            fmt::format("batchnorm_relu_{}/{}/mb{}c{}p{}", backward ? "backward" : "forward",
                        fused ? "fused" : "separate", s.mb, s.channels, s.plane)
                .c_str(),
            bm_with_relu, s, backward, fused)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) { return nnperf::bench::run_main(argc, argv, register_benchmarks); }
