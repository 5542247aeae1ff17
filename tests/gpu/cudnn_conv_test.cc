// cuDNN's forward convolution rows (kernels/conv/cudnn_conv.h) against the float64 reference at
// odd shapes, strides, padding, dilation and groups: every algorithm cuDNN serves for a problem
// stays within c * k * eps * sum|x*w| + eps * |ref| with c = 4 for the GEMM-like algorithms and
// c = 64 for FFT and Winograd (their transforms round more; provisional until measured on a lent
// GPU), and the heuristic (guess) and the search (find) each name at least one served algorithm;
// cuDNN's graph-API engine plans against the same reference.
// The same for the backward-data and backward-weights algorithms, against the float64 backward
// reference with the pass's reduction length (ocg*kh*kw, mb*oh*ow). Without a usable CUDA device
// the cases report skipped with the reason, and the entries refuse.
#include "nnperf/kernels/conv/cudnn_conv.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "test_util.h"

namespace nnperf {
namespace {

// The find cache (plain C++, so tested on every machine with a stand-in find): one find per
// problem, pass and find options (workspace limit, launch, engines); a find that throws leaves
// nothing behind.
TEST(CudnnConv, FindRunsOncePerProblemPassAndOptions) {
  using cudnn::Launch;
  const ConvProblem a = parse_conv_problem("mb3ic5ih11oc7kh3ph1");
  const ConvProblem b = parse_conv_problem("mb3ic5ih11oc7kh3sh2ph1");
  int finds = 0;
  const auto find = [&] {
    ++finds;
    return std::vector<cudnn::AlgoResult>{{"fft", "CUDNN_STATUS_SUCCESS", 0.5, 64, true},
                                          {"implicit_gemm", "CUDNN_STATUS_SUCCESS", 0.7, 0, true}};
  };
  const auto opts = [](std::size_t limit, Launch launch, bool engines) {
    cudnn::FindOptions o;
    o.max_workspace_bytes = limit;
    o.launch = launch;
    o.engines = engines;
    return o;
  };
  const cudnn::FindOptions base = opts(1 << 20, Launch::kEager, false);
  const cudnn::FindCacheStats before = cudnn::find_cache_stats();
  const auto first = cudnn::cached_find(a, ConvPass::kForward, base, find);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].algorithm, "fft");
  EXPECT_EQ(cudnn::cached_find(a, ConvPass::kForward, base, find)[1].algorithm, "implicit_gemm");
  EXPECT_EQ(finds, 1);
  (void)cudnn::cached_find(a, ConvPass::kBackwardData, base, find);  // pass
  (void)cudnn::cached_find(a, ConvPass::kForward, opts(1 << 21, Launch::kEager, false), find);
  (void)cudnn::cached_find(b, ConvPass::kForward, base, find);  // problem
  (void)cudnn::cached_find(a, ConvPass::kForward, opts(1 << 20, Launch::kGraph, false), find);
  (void)cudnn::cached_find(a, ConvPass::kForward, opts(1 << 20, Launch::kEager, true), find);
  EXPECT_EQ(finds, 6);
  const auto failing = []() -> std::vector<cudnn::AlgoResult> { throw Error("no device"); };
  const ConvProblem c = parse_conv_problem("mb1ic2ih9oc2kh1");
  const cudnn::FindOptions tiny = opts(1, Launch::kEager, false);
  EXPECT_THROW((void)cudnn::cached_find(c, ConvPass::kForward, tiny, failing), Error);
  EXPECT_EQ(cudnn::cached_find(c, ConvPass::kForward, tiny, find).size(), 2u);  // found now
  EXPECT_EQ(finds, 7);
  const cudnn::FindCacheStats after = cudnn::find_cache_stats();
  EXPECT_EQ(after.entries - before.entries, 7u);
  EXPECT_EQ(after.hits - before.hits, 1u);
  EXPECT_STREQ(cudnn::to_string(Launch::kEager), "eager");
  EXPECT_STREQ(cudnn::to_string(Launch::kGraph), "graph");
  EXPECT_EQ(cudnn::to_string(base), "1048576/eager");
  EXPECT_EQ(cudnn::to_string(opts(1 << 30, Launch::kGraph, true)), "1073741824/graph/engines");
  const cudnn::FindOptions defaults;
  EXPECT_EQ(cudnn::to_string(defaults), "1073741824/eager");
}

TEST(CudnnConv, NamesTheEightAlgorithmsAndRefusesWithoutADevice) {
  ASSERT_EQ(cudnn::forward_algorithms().size(), 8u);
  EXPECT_EQ(std::string(cudnn::forward_algorithms()[0]), "implicit_gemm");
  EXPECT_EQ(std::string(cudnn::forward_algorithms()[7]), "winograd_nonfused");
  if (cudnn::available()) GTEST_SKIP() << "cuDNN is usable here";
  // Where libcudnn loads, every entry point resolved (a misspelt one would be the reason) and
  // the missing device is what stops it.
  const std::string& why = cudnn::unavailable_reason();
  if (!cudnn::version().empty()) {
    EXPECT_EQ(why, cuda::unavailable_reason()) << "cuDNN " << cudnn::version();
  } else {
    EXPECT_FALSE(why.empty());
  }
  const ConvProblem p = parse_conv_problem("mb1ic4ih6oc4kh3");
  std::vector<float> src(static_cast<std::size_t>(p.src_numel())),
      wei(static_cast<std::size_t>(p.wei_numel()));
  try {
    cudnn::ConvForward c(p, src, wei);
    FAIL() << "made a cuDNN convolution without cuDNN";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--device cuda: " + cudnn::unavailable_reason());
  }
  std::vector<float> dy(static_cast<std::size_t>(p.dst_numel()));
  EXPECT_THROW(cudnn::ConvBackward(p, ConvPass::kBackwardData, wei, dy), UsageError);
  EXPECT_EQ(cudnn::algorithms(ConvPass::kBackwardData).size(), 6u);
  EXPECT_EQ(std::string(cudnn::algorithms(ConvPass::kBackwardWeights)[3]), "algo_3");
}

// The error bound's multiple of eps * sum|terms| for an algorithm over a reduction of k terms:
// 4k for the direct and GEMM-based ones; 64 max(k, 64) for FFT and Winograd, whose transforms
// add rounding that does not shrink with a short reduction (measured on an H200: Winograd
// backward-weights over k = 16 terms, 512 channels 2x2, erred 1450 eps sum|terms|).
// A graph-API engine does not say which kind it is: it gets the FFT/Winograd bound.
double reduction_factor(std::string_view algorithm, double k) {
  const bool fast = algorithm.starts_with("fft") || algorithm.starts_with("winograd") ||
                    algorithm.starts_with("engine:");
  return fast ? 64.0 * std::max(k, 64.0) : 4.0 * k;
}

// The per-output bound above grows with k: at k = 4608 (512 channels, 3x3) the FFT/Winograd
// bound is of the order of the outputs themselves. Every output vector is also held to
// ||got - ref|| <= kNormwise ||ref||, which an answer a few percent off everywhere fails (the
// Winograd error above, 1450 eps sum|terms| over 16 terms, is ~3e-4 of a typical output).
constexpr double kNormwise = 1e-2;

class CudnnConvMatches : public ::testing::TestWithParam<std::string> {};

TEST_P(CudnnConvMatches, EveryServedAlgorithmWithinItsBound) {
  if (!cudnn::available()) GTEST_SKIP() << cudnn::unavailable_reason();
  const ConvProblem p = parse_conv_problem(GetParam());
  const std::vector<float> src = test::random_vector(p.src_numel(), 3, -1.0f, 1.0f);
  const std::vector<float> wei = test::random_vector(p.wei_numel(), 4, -1.0f, 1.0f);
  std::vector<double> ref(static_cast<std::size_t>(p.dst_numel())), abs_sum(ref.size());
  conv2d_reference(p, src.data(), wei.data(), nullptr, ref.data(), abs_sum.data());
  const double k = static_cast<double>(p.icg() * p.kh * p.kw);
  cudnn::ConvForward conv(p, src, wei);
  // Checks every output y of `name` against the reference within its bound.
  const auto expect_output_within_bound = [&](const std::string& name,
                                              const std::vector<float>& y) {
    const double c = reduction_factor(name, k);
    ASSERT_EQ(y.size(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double bound = c * test::kEps * abs_sum[i] + test::kEps * std::abs(ref[i]);
      ASSERT_LE(std::abs(static_cast<double>(y[i]) - ref[i]), bound) << name << " output " << i;
    }
    EXPECT_LE(test::relative_l2_error(y, ref), kNormwise) << name;
  };
  const auto expect_within_bound = [&](const std::string& name) {
    conv.run(name);
    expect_output_within_bound(name, conv.output());
  };
  int served = 0;
  for (const char* name : cudnn::forward_algorithms()) {
    if (!conv.why_not(name).empty()) continue;
    ++served;
    expect_within_bound(name);
  }
  EXPECT_GT(served, 0);
  // cuDNN's graph-API engines (FP32, no TF32): at least one plan for every problem here, each
  // within the bound, its workspace known, an unknown configuration refused by name.
  const std::vector<std::string> engines = conv.engines();
  EXPECT_FALSE(engines.empty()) << conv.engines_reason();
  for (const std::string& name : engines) {
    ASSERT_EQ(conv.why_not(name), "") << name;
    (void)conv.workspace_bytes(name);
    expect_within_bound(name);
  }
  EXPECT_NE(conv.why_not("engine:99999.0"), "");
  // A plan keeps the variant pack of its last run: run on other buffers, it follows them.
  if (!engines.empty()) {
    const cuda::Buffer x2 = cuda::to_device(src);
    cuda::Buffer y2(ref.size());
    conv.run_on(engines[0], x2.data(), y2.data());
    expect_output_within_bound(engines[0], cuda::to_host(y2));
    expect_within_bound(engines[0]);  // and back to its own
  }
  bool guessed = false, found = false;
  for (const auto& r : conv.guess()) guessed |= r.status == "CUDNN_STATUS_SUCCESS";
  // find: the served candidates timed again by nnperf as launched (each call, or as a CUDA
  // graph), fastest first, cuDNN's figure kept; the refused ones after them.
  // With engines, every engine configuration is among the candidates (timed, or refused with a
  // status), cuDNN's own figure 0 for them; the first served one runs within its bound.
  for (const bool with_engines : {false, true}) {
    for (const cudnn::Launch launch : {cudnn::Launch::kEager, cudnn::Launch::kGraph}) {
      SCOPED_TRACE(fmt::format("{}{}", cudnn::to_string(launch), with_engines ? ", engines" : ""));
      cudnn::FindOptions o;
      o.max_workspace_bytes = std::size_t{1} << 28;
      o.launch = launch;
      o.engines = with_engines;
      double last_ms = 0;
      bool refused_seen = false;
      std::string first;
      std::size_t engine_rows = 0;
      for (const auto& r : conv.find(o)) {
        const bool engine = r.algorithm.starts_with("engine:");
        engine_rows += engine ? 1 : 0;
        if (r.status == "CUDNN_STATUS_SUCCESS") {
          found = true;
          if (first.empty()) first = r.algorithm;
          EXPECT_FALSE(refused_seen) << r.algorithm << " ranked after a refused algorithm";
          EXPECT_GT(r.ms, 0.0) << r.algorithm;
          if (engine) {
            EXPECT_EQ(r.cudnn_ms, 0.0) << r.algorithm;
          } else {
            EXPECT_GT(r.cudnn_ms, 0.0) << r.algorithm;
          }
          EXPECT_GE(r.ms, last_ms) << r.algorithm;
          last_ms = r.ms;
        } else {
          refused_seen = true;
        }
      }
      EXPECT_EQ(engine_rows, with_engines ? engines.size() : 0u);
      ASSERT_FALSE(first.empty());
      expect_within_bound(first);
    }
  }
  EXPECT_TRUE(guessed);
  EXPECT_TRUE(found);
  // Released weights: run_with on the caller's still runs within the bound; what needs the
  // conv's own refuses by name.
  const cuda::Buffer x3 = cuda::to_device(src), w3 = cuda::to_device(wei);
  cuda::Buffer y3(ref.size());
  conv.release_weights();
  std::string served_one;
  for (const char* name : cudnn::forward_algorithms()) {
    if (served_one.empty() && conv.why_not(name).empty()) served_one = name;
  }
  conv.run_with(served_one, x3.data(), w3.data(), y3.data());
  expect_output_within_bound(served_one, cuda::to_host(y3));
  EXPECT_THROW(conv.run(served_one), Error);
  EXPECT_THROW((void)conv.find(), Error);
}

// Each backward pass's served algorithms against the float64 backward reference.
TEST_P(CudnnConvMatches, EveryServedBackwardAlgorithmWithinItsBound) {
  if (!cudnn::available()) GTEST_SKIP() << cudnn::unavailable_reason();
  const ConvProblem p = parse_conv_problem(GetParam());
  const std::vector<float> x = test::random_vector(p.src_numel(), 3, -1.0f, 1.0f);
  const std::vector<float> w = test::random_vector(p.wei_numel(), 4, -1.0f, 1.0f);
  const std::vector<float> dy = test::random_vector(p.dst_numel(), 5, -1.0f, 1.0f);
  std::vector<double> dx(x.size()), dw(w.size()), abs_dx(x.size()), abs_dw(w.size());
  conv2d_backward_reference(p, x.data(), w.data(), dy.data(), dx.data(), dw.data(), nullptr,
                            abs_dx.data(), abs_dw.data());
  for (const ConvPass pass : {ConvPass::kBackwardData, ConvPass::kBackwardWeights}) {
    const bool data = pass == ConvPass::kBackwardData;
    const std::vector<double>& ref = data ? dx : dw;
    const std::vector<double>& abs_sum = data ? abs_dx : abs_dw;
    const double k = static_cast<double>(data ? p.ocg() * p.kh * p.kw : p.mb * p.oh() * p.ow());
    cudnn::ConvBackward conv(p, pass, data ? w : x, dy);
    const auto expect_within_bound = [&](const std::string& name) {
      conv.run(name);
      const std::vector<float> got = conv.output();
      const double c = reduction_factor(name, k);
      ASSERT_EQ(got.size(), ref.size());
      for (std::size_t i = 0; i < ref.size(); ++i) {
        const double bound = c * test::kEps * abs_sum[i] + test::kEps * std::abs(ref[i]);
        ASSERT_LE(std::abs(static_cast<double>(got[i]) - ref[i]), bound)
            << to_string(pass) << " " << name << " element " << i;
      }
      EXPECT_LE(test::relative_l2_error(got, ref), kNormwise) << to_string(pass) << " " << name;
    };
    int served = 0;
    for (const char* name : cudnn::algorithms(pass)) {
      if (!conv.why_not(name).empty()) continue;
      ++served;
      expect_within_bound(name);
    }
    EXPECT_GT(served, 0) << to_string(pass);
    // The pass's graph-API engines: at least one plan, each within the bound.
    const std::vector<std::string> engines = conv.engines();
    EXPECT_FALSE(engines.empty()) << to_string(pass) << ": " << conv.engines_reason();
    for (const std::string& name : engines) {
      ASSERT_EQ(conv.why_not(name), "") << name;
      expect_within_bound(name);
    }
    bool guessed = false, found = false;
    for (const auto& r : conv.guess()) guessed |= r.status == "CUDNN_STATUS_SUCCESS";
    cudnn::FindOptions o;
    o.max_workspace_bytes = std::size_t{1} << 28;
    for (const auto& r : conv.find(o)) found |= r.status == "CUDNN_STATUS_SUCCESS";
    EXPECT_TRUE(guessed) << to_string(pass);
    EXPECT_TRUE(found) << to_string(pass);
    // find with the engines: each among the candidates; the first served one within its bound.
    o.engines = true;
    std::size_t engine_rows = 0;
    std::string first;
    for (const auto& r : conv.find(o)) {
      engine_rows += r.algorithm.starts_with("engine:") ? 1 : 0;
      if (first.empty() && r.status == "CUDNN_STATUS_SUCCESS") first = r.algorithm;
    }
    EXPECT_EQ(engine_rows, engines.size()) << to_string(pass);
    ASSERT_FALSE(first.empty()) << to_string(pass);
    expect_within_bound(first);
  }
}

INSTANTIATE_TEST_SUITE_P(Problems, CudnnConvMatches,
                         ::testing::Values("mb2ic6ih9oc10kh3ph1",
                                           "mb1ic3ih17iw13oc5kh5kw3sh2sw1ph2pw1",
                                           "mb3ic16ih14oc32kh1", "g4mb2ic8ih11oc12kh3ph1",
                                           "mb1ic5ih12oc7kh3dh2ph2", "mb4ic64ih28oc64kh3ph1",
                                           // ResNet-18's third and fourth stages at 64x64
                                           // inputs, batch 4 (the GPU trainer's test shape)
                                           "mb4ic128ih8oc256kh3sh2ph1", "mb4ic128ih8oc256kh1sh2",
                                           "mb4ic256ih4oc256kh3ph1", "mb4ic512ih2oc512kh3ph1"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

}  // namespace
}  // namespace nnperf
