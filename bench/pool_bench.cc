// Max pooling (kernels/pool.h) at ResNet's stem pool (3x3, stride 2, padding 1), per SIMD path:
// the forward without the argmax (inference), with it (training), and the backward. Inputs as a
// ReLU leaves them (half zeros: ties in most windows). Reports GB/s (bytes each call must move)
// and ns per output.
//   pool_bench    Google Benchmark run (usual --benchmark_* flags)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/cpu.h"
#include "nnperf/core/rng.h"
#include "nnperf/kernels/pool.h"
#include "nnperf/kernels/pool_impl.h"
#include "nnperf/kernels/pool_internal.h"

namespace {

using nnperf::PoolShape;

struct Case {
  const char* name;
  PoolShape shape;
};
// ResNet's stem pool: batch 8 of 64x64 images (64 planes of 32x32 each), batch 1 at 224x224.
const Case kCases[] = {{"b8_64x32x32", {8 * 64, 32, 32, 16, 16, 3, 2, 1}},
                       {"b1_64x112x112", {64, 112, 112, 56, 56, 3, 2, 1}}};

struct Path {
  const char* name;
  const nnperf::detail::MaxPoolPaths* paths;
  nnperf::SimdLevel needs;
};
const nnperf::detail::MaxPoolPaths kPortable{&nnperf::detail::maxpool_plane};
const Path kPaths[] = {{"portable", &kPortable, nnperf::SimdLevel::kScalar},
                       {"avx2", &nnperf::detail::kMaxPoolPathsAvx2, nnperf::SimdLevel::kAvx2}};

struct Buffers {
  std::vector<float> x, y, colmax, dy, dx;
  std::vector<int32_t> argmax, colidx;
  explicit Buffers(const PoolShape& s)
      : x(static_cast<std::size_t>(s.planes * s.ih * s.iw)),
        y(static_cast<std::size_t>(s.planes * s.oh * s.ow)),
        colmax(static_cast<std::size_t>(s.iw)),
        dy(y.size()),
        dx(x.size()),
        argmax(y.size()),
        colidx(colmax.size()) {
    nnperf::Rng rng(42);
    rng.fill_uniform(x, -1.0f, 1.0f);
    for (float& v : x) v = std::max(v, 0.0f);
    rng.fill_uniform(dy, -1.0f, 1.0f);
  }
};

void forward(const PoolShape& s, const Path& p, Buffers& b, bool training) {
  for (int64_t pl = 0; pl < s.planes; ++pl) {
    p.paths->plane(s, b.x.data() + pl * s.ih * s.iw, b.y.data() + pl * s.oh * s.ow,
                   training ? b.argmax.data() + pl * s.oh * s.ow : nullptr, b.colmax.data(),
                   b.colidx.data());
  }
}

void bm_forward(benchmark::State& state, const Case* c, const Path* p, bool training) {
  Buffers b(c->shape);
  for (auto _ : state) {
    forward(c->shape, *p, b, training);
    benchmark::DoNotOptimize(b.y.data());
    benchmark::ClobberMemory();
  }
  const double outputs = static_cast<double>(b.y.size());
  const double bytes = 4.0 * (static_cast<double>(b.x.size()) + outputs * (training ? 2 : 1));
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
  state.counters["ns_per_output"] = benchmark::Counter(
      outputs * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void bm_backward(benchmark::State& state, const Case* c) {
  Buffers b(c->shape);
  nnperf::maxpool2d_forward(c->shape, b.x.data(), b.y.data(), b.argmax.data(), b.colmax.data(),
                            b.colidx.data(), 1);
  for (auto _ : state) {
    nnperf::maxpool2d_backward(c->shape, b.dy.data(), b.argmax.data(), b.dx.data(), 1);
    benchmark::DoNotOptimize(b.dx.data());
    benchmark::ClobberMemory();
  }
  const double bytes = 4.0 * static_cast<double>(b.dx.size() + 2 * b.dy.size());
  state.SetBytesProcessed(static_cast<int64_t>(bytes * static_cast<double>(state.iterations())));
}

void register_benchmarks() {
  nnperf::bench::add_context(false);
  for (const Case& c : kCases) {
    for (const Path& p : kPaths) {
      if (nnperf::active_simd() < p.needs) continue;
      for (const bool training : {false, true}) {
        benchmark::RegisterBenchmark(
            fmt::format("maxpool_forward/{}/{}/{}", training ? "training" : "inference", p.name,
                        c.name)
                .c_str(),
            bm_forward, &c, &p, training);
      }
    }
    benchmark::RegisterBenchmark(fmt::format("maxpool_backward/{}", c.name).c_str(), bm_backward,
                                 &c);
  }
}

}  // namespace

int main(int argc, char** argv) { return nnperf::bench::run_main(argc, argv, register_benchmarks); }
