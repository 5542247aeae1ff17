// Convolution benchmark over the registry: every algorithm on the distinct conv layers of VGG16
// (13 layers, 9 shapes) and ResNet-50 (23 shapes) at 224x224, plus a few MobileNetV2 depthwise
// and pointwise layers, batch 1 (NNPERF_BENCH_MB=8 for
// batch 8), 1 and 2 threads, GFLOP/s as a counter (FLOPs = 2 per multiply-add). Unsupported
// pairs are reported with the algorithm's reason. `conv_gemm_equiv/{blas,blocked}/...` time
// OpenBLAS SGEMM and our blocked GEMM on each layer's equivalent GEMM (m = ocg, n = oh*ow,
// k = icg*kh*kw, per group and image): the rates im2col+GEMM and implicit GEMM are measured
// against (and how `gemm` chose its GEMM).
// Filter, e.g.: conv_bench --benchmark_filter='conv/.*/vgg16_conv3_2/t1'
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "nnperf/core/threads.h"
#include "nnperf/kernels/conv/conv.h"
#include "nnperf/kernels/gemm/gemm.h"

namespace nnperf {
namespace {

struct Layer {
  const char* name;
  const char* shape;  // batch 1; mb replaced at registration
};

// VGG16 (conv3_3, conv4_3, conv5_2, conv5_3 repeat earlier shapes and are left out).
constexpr Layer kVgg16[] = {
    {"vgg16_conv1_1", "ic3ih224oc64kh3ph1"},   {"vgg16_conv1_2", "ic64ih224oc64kh3ph1"},
    {"vgg16_conv2_1", "ic64ih112oc128kh3ph1"}, {"vgg16_conv2_2", "ic128ih112oc128kh3ph1"},
    {"vgg16_conv3_1", "ic128ih56oc256kh3ph1"}, {"vgg16_conv3_2", "ic256ih56oc256kh3ph1"},
    {"vgg16_conv4_1", "ic256ih28oc512kh3ph1"}, {"vgg16_conv4_2", "ic512ih28oc512kh3ph1"},
    {"vgg16_conv5_1", "ic512ih14oc512kh3ph1"},
};

// ResNet-50 (torchvision, stride on the 3x3 of each stage's first block): the distinct shapes.
constexpr Layer kResnet50[] = {
    {"resnet50_conv1", "ic3ih224oc64kh7sh2ph3"},
    {"resnet50_l1_1x1a", "ic64ih56oc64kh1"},
    {"resnet50_l1_3x3", "ic64ih56oc64kh3ph1"},
    {"resnet50_l1_1x1b", "ic64ih56oc256kh1"},  // also the downsample
    {"resnet50_l1_1x1c", "ic256ih56oc64kh1"},
    {"resnet50_l2_1x1a0", "ic256ih56oc128kh1"},
    {"resnet50_l2_3x3s2", "ic128ih56oc128kh3sh2ph1"},
    {"resnet50_l2_1x1b", "ic128ih28oc512kh1"},
    {"resnet50_l2_down", "ic256ih56oc512kh1sh2"},
    {"resnet50_l2_1x1a", "ic512ih28oc128kh1"},
    {"resnet50_l2_3x3", "ic128ih28oc128kh3ph1"},
    {"resnet50_l3_1x1a0", "ic512ih28oc256kh1"},
    {"resnet50_l3_3x3s2", "ic256ih28oc256kh3sh2ph1"},
    {"resnet50_l3_1x1b", "ic256ih14oc1024kh1"},
    {"resnet50_l3_down", "ic512ih28oc1024kh1sh2"},
    {"resnet50_l3_1x1a", "ic1024ih14oc256kh1"},
    {"resnet50_l3_3x3", "ic256ih14oc256kh3ph1"},
    {"resnet50_l4_1x1a0", "ic1024ih14oc512kh1"},
    {"resnet50_l4_3x3s2", "ic512ih14oc512kh3sh2ph1"},
    {"resnet50_l4_1x1b", "ic512ih7oc2048kh1"},
    {"resnet50_l4_down", "ic1024ih14oc2048kh1sh2"},
    {"resnet50_l4_1x1a", "ic2048ih7oc512kh1"},
    {"resnet50_l4_3x3", "ic512ih7oc512kh3ph1"},
};

// MobileNetV2 depthwise layers (g == ic == oc) and two pointwise ones: the depthwise fast path.
constexpr Layer kMobilenetV2[] = {
    {"mobilenetv2_dw32", "g32ic32ih112oc32kh3ph1"},
    {"mobilenetv2_dw96s2", "g96ic96ih112oc96kh3sh2ph1"},
    {"mobilenetv2_dw144", "g144ic144ih56oc144kh3ph1"},
    {"mobilenetv2_dw960", "g960ic960ih7oc960kh3ph1"},
    {"mobilenetv2_pw32_16", "ic32ih112oc16kh1"},
    {"mobilenetv2_pw144_24", "ic144ih56oc24kh1"},
};

void bm_conv(benchmark::State& state, const ConvAlgorithm* algo, ConvProblem p, int threads) {
  if (!bench::time_conv(state, *algo, p, threads)) return;
  state.counters["ws_mib"] = static_cast<double>(algo->workspace_bytes(p, threads)) / (1 << 20);
}

// A GEMM algorithm on the layer's GEMM (as many calls as images x groups), operands in place.
void bm_gemm_equiv(benchmark::State& state, const GemmAlgorithm* gemm, ConvProblem p, int threads) {
  set_threads(threads);
  const GemmShape s{false, false, p.ocg(), p.oh() * p.ow(), p.icg() * p.kh * p.kw};
  const bench::GemmOperands g(*gemm, s, threads, 7);
  gemm->run(g.args);
  for (auto _ : state) {
    for (int64_t i = 0; i < p.mb * p.g; ++i) gemm->run(g.args);
    benchmark::DoNotOptimize(g.c.data());
    benchmark::ClobberMemory();
  }
  state.counters["gflops"] = bench::gflops(p.flops());
}

void register_all() {
  bench::add_context(true);
  int64_t mb = 1;
  if (const char* env = std::getenv("NNPERF_BENCH_MB"); env != nullptr && *env != '\0') {
    mb = std::max<int64_t>(1, std::atoll(env));
  }
  benchmark::AddCustomContext("nnperf_mb", std::to_string(mb));
  std::vector<Layer> layers(std::begin(kVgg16), std::end(kVgg16));
  layers.insert(layers.end(), std::begin(kResnet50), std::end(kResnet50));
  layers.insert(layers.end(), std::begin(kMobilenetV2), std::end(kMobilenetV2));
  for (int threads : {1, 2}) {
    for (const Layer& layer : layers) {
      const ConvProblem p = parse_conv_problem(fmt::format("mb{}{}", mb, layer.shape));
      for (const ConvAlgorithm& algo : conv_algorithms()) {
        benchmark::RegisterBenchmark(
            fmt::format("conv/{}/{}/t{}", algo.name, layer.name, threads).c_str(), bm_conv, &algo,
            p, threads)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
      for (const char* gemm : {"blas", "blocked"}) {
        benchmark::RegisterBenchmark(
            fmt::format("conv_gemm_equiv/{}/{}/t{}", gemm, layer.name, threads).c_str(),
            bm_gemm_equiv, &find_gemm(gemm), p, threads)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
      }
    }
  }
}

}  // namespace
}  // namespace nnperf

int main(int argc, char** argv) {
  return nnperf::bench::run_main(argc, argv, nnperf::register_all);
}
