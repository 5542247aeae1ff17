// The convolution rows' layout copies, one thread: the patch rows of im2col and their adjoint
// col2im (kernels/conv/conv_internal.h), each by the band loops and by the tap table, on
// stride-2 maps of 4 to 112 outputs a row (conv_tap_table_bytes picks the table up to 8 at
// stride 2, up to 16 at stride 1); and the crop and un-crop of dead kernel taps
// (kernels/conv/conv_crop.h) on ResNet-18's layer4 at 32x32 input. Reports ns per float moved
// (patch-matrix entries; for the crop, every float of the full weights).
//   conv_layout_bench    Google Benchmark run (usual --benchmark_* flags)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/rng.h"
#include "nnperf/kernels/conv/conv_crop.h"
#include "nnperf/kernels/conv/conv_internal.h"

namespace {

using nnperf::ConvProblem;

// One image each: the stem at 32x32 and at 224x224 (ow 16 and 112), a 3x3 stride-2 layer into
// 12x12 and into 4x4 maps.
const char* const kPatchProblems[] = {"mb1ic3ih32oc64kh7sh2ph3", "mb1ic3ih224oc64kh7sh2ph3",
                                      "mb1ic64ih24oc128kh3sh2ph1", "mb1ic64ih8oc128kh3sh2ph1"};
// layer4's 3x3 convolutions of 1x1 maps (one live tap) and its stride-2 one of 2x2 maps (2x2).
const char* const kCropProblems[] = {"mb32ic512ih1oc512kh3ph1", "mb32ic256ih2oc512kh3sh2ph1"};

void per_float(benchmark::State& state, double floats) {
  state.counters["ns_per_float"] = benchmark::Counter(
      floats * 1e-9, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

struct Patches {
  ConvProblem p;
  int64_t k, n;
  std::vector<float> x, col;
  std::vector<int32_t> table;
  explicit Patches(const char* desc)
      : p(nnperf::parse_conv_problem(desc)),
        k(p.ic * p.kh * p.kw),
        n(p.oh() * p.ow()),
        x(static_cast<std::size_t>(p.ic * p.ih * p.iw)),
        col(static_cast<std::size_t>(k * n)),
        table(static_cast<std::size_t>(p.kh * p.kw * n)) {
    nnperf::Rng rng(7);
    rng.fill_uniform(x, -1.0f, 1.0f);
    rng.fill_uniform(col, -1.0f, 1.0f);
    nnperf::conv_fill_tap_table(p, table.data());
  }
};

void bm_im2col(benchmark::State& state, const char* desc, bool by_table) {
  Patches b(desc);
  for (auto _ : state) {
    for (int64_t r = 0; r < b.k; ++r) {
      float* row = b.col.data() + r * b.n;
      if (by_table) {
        nnperf::conv_im2col_row_table(b.p, b.table.data(), b.x.data(), r, row);
      } else {
        nnperf::conv_im2col_row_band(b.p, b.x.data(), r, 0, b.p.oh(), row);
      }
    }
    benchmark::DoNotOptimize(b.col.data());
    benchmark::ClobberMemory();
  }
  per_float(state, static_cast<double>(b.col.size()));
}

void bm_col2im(benchmark::State& state, const char* desc, bool by_table) {
  Patches b(desc);
  const int64_t plane = b.p.ih * b.p.iw, taps = b.p.kh * b.p.kw;
  for (auto _ : state) {
    std::fill(b.x.begin(), b.x.end(), 0.0f);
    for (int64_t c = 0; c < b.p.ic; ++c) {
      const float* rows = b.col.data() + c * taps * b.n;
      float* out = b.x.data() + c * plane;
      if (by_table) {
        nnperf::conv_col2im_plane_table(b.p, b.table.data(), rows, b.n, 0, b.n, out);
      } else {
        nnperf::conv_col2im_band(b.p, rows, b.n, 0, b.p.oh(), out);
      }
    }
    benchmark::DoNotOptimize(b.x.data());
    benchmark::ClobberMemory();
  }
  per_float(state, static_cast<double>(b.col.size()));
}

void bm_crop(benchmark::State& state, const char* desc, bool uncrop) {
  const ConvProblem p = nnperf::parse_conv_problem(desc);
  const nnperf::ConvCrop c = nnperf::conv_live_taps(p);
  if (!c.active) {
    state.SkipWithError("no dead taps to crop");
    return;
  }
  std::vector<float> w(static_cast<std::size_t>(p.wei_numel()));
  std::vector<float> wc(static_cast<std::size_t>(c.cropped.wei_numel()));
  nnperf::Rng rng(3);
  rng.fill_uniform(w, -1.0f, 1.0f);
  rng.fill_uniform(wc, -1.0f, 1.0f);
  for (auto _ : state) {
    if (uncrop) {
      nnperf::conv_uncrop_weight_grad(p, c, wc.data(), w.data(), 1);
      benchmark::DoNotOptimize(w.data());
    } else {
      nnperf::conv_crop_weights(p, c, w.data(), wc.data(), 1);
      benchmark::DoNotOptimize(wc.data());
    }
    benchmark::ClobberMemory();
  }
  per_float(state, static_cast<double>(w.size()));
}

void register_benchmarks() {
  nnperf::bench::add_context(false);
  for (const char* desc : kPatchProblems) {
    for (const bool by_table : {false, true}) {
      const char* how = by_table ? "table" : "band";
      benchmark::RegisterBenchmark(fmt::format("im2col/{}/{}", how, desc).c_str(), bm_im2col, desc,
                                   by_table);
      benchmark::RegisterBenchmark(fmt::format("col2im/{}/{}", how, desc).c_str(), bm_col2im, desc,
                                   by_table);
    }
  }
  for (const char* desc : kCropProblems) {
    benchmark::RegisterBenchmark(fmt::format("crop/{}", desc).c_str(), bm_crop, desc, false);
    benchmark::RegisterBenchmark(fmt::format("uncrop/{}", desc).c_str(), bm_crop, desc, true);
  }
}

}  // namespace

int main(int argc, char** argv) { return nnperf::bench::run_main(argc, argv, register_benchmarks); }
