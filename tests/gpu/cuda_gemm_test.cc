// The CUDA backend: the GEMM rows `cuda` (our kernel) and `cublas` against the float64 reference
// with the CPU rows' bound, at odd shapes, both transposes, alpha/beta and k = 0; the event timer;
// work captured into a CUDA graph.
// On a machine without a usable CUDA device (every CI machine) each device case is reported as
// skipped with the reason, and what must hold without a device is checked instead.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/cuda_kernels.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/kernels/gemm/gemm_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason()

TEST(CudaBackend, WithoutADeviceEverythingSaysWhyInOneLine) {
  if (cuda::available()) {
    EXPECT_NE(cuda::device_summary(), "");
    EXPECT_NO_THROW(cuda::require("--device cuda"));
    return;
  }
  const std::string& why = cuda::unavailable_reason();
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  EXPECT_EQ(cuda::device_summary(), "");
  try {
    cuda::require("--device cuda");
    FAIL() << "require() passed without a device";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--device cuda: " + why);
  }
  EXPECT_THROW(cuda::Buffer(16), Error);
  EXPECT_THROW(cuda::make_event_timer(1), Error);
  cuda::CapturedWork work;
  EXPECT_THROW(work.capture([] {}), Error);
  EXPECT_FALSE(work.captured());
  EXPECT_THROW(work.launch(), Error);
  EXPECT_THROW(cuda::time_alternately(
                   1, [](int) {}, false, 0, 1),
               Error);
  for (const char* name : {"cuda", "cublas"}) {
    const GemmAlgorithm& g = find_gemm(name);
    EXPECT_EQ(g.device, Device::kCuda);
    EXPECT_EQ(g.why_not(GemmShape{false, false, 8, 8, 8}), why) << name;
  }
}

// The cublas row opens libcublas of the header's major version on first use (not linked): with a
// device it must load; without one the reason is one line (a CUDA build on a machine with the
// toolkit, as CI's, loads it all the same).
TEST(CudaBackend, CublasIsOpenedAtRunTimeOrSaysWhyInOneLine) {
  const std::string why = cublas_unusable_reason();
  if (!cuda::compiled()) {
    EXPECT_EQ(why, cuda::unavailable_reason());
    return;
  }
  if (cuda::available()) {
    EXPECT_EQ(why, "");
  }
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
  if (!why.empty()) {
    const bool named = why.starts_with("no cuBLAS (") || why.starts_with("cuBLAS ") ||
                       why.starts_with("libcublas has no ") || why == "cublasGetProperty failed";
    EXPECT_TRUE(named) << why;
  }
}

struct Case {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
};

std::string case_name(const Case& c) {
  return fmt::format("{}{}", GemmShape{c.ta, c.tb, c.m, c.n, c.k}.str(),
                     c.beta != 0.0f ? "_beta" : "");
}

// Shapes: below one tile, odd edges in every dimension, several k slices with a ragged last one,
// many tiles, k = 0 (C = beta C), and a vector shape.
const Case kCases[] = {
    {false, false, 1, 1, 1, 1.0f, 0.0f},      {false, false, 7, 5, 3, 1.0f, 0.0f},
    {false, false, 129, 131, 17, 1.0f, 0.0f}, {true, false, 130, 127, 33, 1.0f, 0.0f},
    {false, true, 257, 65, 100, 1.0f, 0.0f},  {true, true, 64, 300, 9, 1.0f, 0.0f},
    {false, false, 33, 47, 1000, 0.5f, 2.0f}, {true, false, 784, 128, 64, 1.0f, 1.0f},
    {false, false, 1, 1024, 784, 1.0f, 0.0f}, {false, false, 5, 6, 0, 1.0f, 3.0f},
    {false, false, 512, 512, 512, 1.0f, 0.0f},
};

class CudaGemm : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaGemm, MatchesTheFloat64ReferenceWithinTheBound) {
  SKIP_WITHOUT_DEVICE();
  const GemmAlgorithm& algo = find_gemm(GetParam());
  ASSERT_EQ(algo.device, Device::kCuda);
  for (const Case& c : kCases) {
    SCOPED_TRACE(case_name(c));
    const GemmShape s{c.ta, c.tb, c.m, c.n, c.k};
    ASSERT_EQ(algo.why_not(s), "");
    const int64_t lda = c.ta ? c.m : c.k, ldb = c.tb ? c.k : c.n;
    const auto seed = static_cast<uint64_t>(c.m * 7919 + c.n * 31 + c.k);
    const std::vector<float> a = test::random_vector(c.m * c.k, seed);
    const std::vector<float> b = test::random_vector(c.k * c.n, seed + 1);
    std::vector<float> c0 = test::random_vector(c.m * c.n, seed + 2);
    if (c.beta == 0.0f) std::fill(c0.begin(), c0.end(), NAN);  // C is not read when beta == 0

    cuda::Buffer da(a.size()), db(b.size()), dc(c0.size());
    da.upload(a);
    db.upload(b);
    dc.upload(c0);
    GemmArgs g = gemm_args(s, da.data(), lda, db.data(), ldb, dc.data(), c.n, nullptr, 1, c.beta);
    g.alpha = c.alpha;
    algo.run(g);
    cuda::synchronize();
    std::vector<float> got(c0.size());
    dc.download(got);

    GemmArgs host = gemm_args(s, a.data(), lda, b.data(), ldb, c0.data(), c.n, nullptr, 1, c.beta);
    host.alpha = c.alpha;
    std::vector<double> ref(got.size()), abs_sum(got.size());
    gemm_reference(host, ref.data(), abs_sum.data());
    double worst = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const double err = std::fabs(got[i] - ref[i]);
      const double bound = algo.tolerance_factor *
                               (static_cast<double>(std::max<int64_t>(c.k, 1)) * test::kEps *
                                    abs_sum[i] +
                                test::kEps * std::fabs(ref[i])) +
                           1e-30;
      ASSERT_TRUE(std::isfinite(got[i])) << "element " << i;
      worst = std::max(worst, err / bound);
      ASSERT_LE(err, bound) << "element " << i << ": got " << got[i] << ", reference " << ref[i];
    }
    RecordProperty(case_name(c) + "_worst_error_over_bound", fmt::format("{:.3f}", worst));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, CudaGemm, ::testing::Values("cuda", "cublas"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(CudaEventTimer, OneSynchronisationReadsEveryInterval) {
  SKIP_WITHOUT_DEVICE();
  const int64_t n = 1024;
  cuda::Buffer a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size());
  const std::vector<float> host = test::random_vector(n * n, 5);
  a.upload(host);
  b.upload(host);
  const GemmArgs g = gemm_args(GemmShape{false, false, n, n, n}, a.data(), n, b.data(), n,
                               c.data(), n, nullptr, 1);
  auto timer = cuda::make_event_timer(2);
  for (int r = 0; r < 3; ++r) {
    timer->begin(0);
    find_gemm("cublas").run(g);
    timer->end(0);
    timer->begin(1);  // an empty interval
    timer->end(1);
  }
  std::vector<double> ms;
  std::vector<int64_t> counts;
  timer->resolve(ms, counts);
  ASSERT_EQ(counts, (std::vector<int64_t>{3, 3}));
  EXPECT_GT(ms[0], 0.0);
  EXPECT_LT(ms[1], ms[0]);  // three empty pairs take less than three 2-GFLOP products
  // resolve() starts over.
  timer->resolve(ms, counts);
  EXPECT_EQ(counts, (std::vector<int64_t>{3, 3}));
  const cuda::EventTimerOverhead o = cuda::measure_event_timer_overhead(100);
  EXPECT_GT(o.host_us_per_pair, 0.0);
  EXPECT_GE(o.device_ms_empty_pair, 0.0);
  RecordProperty("host_us_per_event_pair", fmt::format("{:.2f}", o.host_us_per_pair));
  RecordProperty("device_ms_empty_pair", fmt::format("{:.4f}", o.device_ms_empty_pair));
}

// Work captured once runs at every launch (our kernel and cuBLAS, on the thread's stream), and
// nothing runs at the capture; a capture that throws, or that meets a call which cannot be
// captured (a synchronous copy), ends the capture, keeps nothing and leaves the stream usable.
TEST(CudaGraph, CapturedWorkRunsAtEachLaunchAndAFailedCaptureLeavesTheStreamUsable) {
  SKIP_WITHOUT_DEVICE();
  const int64_t n = 64;
  const std::vector<float> host = test::random_vector(n * n, 9);
  cuda::Buffer a(host.size()), acc(host.size()), prod(host.size());
  a.upload(host);
  acc.upload(std::vector<float>(host.size(), 0.0f));
  const GemmArgs g = gemm_args(GemmShape{false, false, n, n, n}, a.data(), n, a.data(), n,
                               prod.data(), n, nullptr, 1);
  cuda::CapturedWork work;
  EXPECT_FALSE(work.captured());
  EXPECT_THROW(work.launch(), Error);
  work.capture([&] {
    cuda_kernels::add(acc.data(), a.data(), acc.data(), n * n);  // acc += a
    find_gemm("cublas").run(g);                                  // prod = a a
  });
  ASSERT_TRUE(work.captured());
  EXPECT_GE(work.nodes(), 2u);
  EXPECT_EQ(cuda::to_host(acc), std::vector<float>(host.size(), 0.0f));  // nothing ran yet
  for (int i = 0; i < 3; ++i) work.launch();
  const std::vector<float> sum = cuda::to_host(acc);
  for (std::size_t i = 0; i < host.size(); ++i) ASSERT_FLOAT_EQ(sum[i], 3 * host[i]) << i;
  const std::vector<float> p = cuda::to_host(prod);
  for (int64_t j : {int64_t{0}, n + 3, n * n - 1}) {
    double want = 0;
    for (int64_t k = 0; k < n; ++k)
      want += double{host[static_cast<std::size_t>(j / n * n + k)]} *
              host[static_cast<std::size_t>(k * n + j % n)];
    EXPECT_NEAR(p[static_cast<std::size_t>(j)], want, 1e-4 * n) << j;
  }
  EXPECT_THROW(work.capture([&] {
    cuda_kernels::add(acc.data(), a.data(), acc.data(), n * n);
    throw Error("stop");
  }),
               Error);
  EXPECT_FALSE(work.captured());
  EXPECT_THROW(work.capture([&] { acc.upload(host); }), Error);  // synchronous: not capturable
  EXPECT_FALSE(work.captured());
  cuda_kernels::add(acc.data(), a.data(), acc.data(), n * n);  // eager again: 3a + a
  const std::vector<float> after = cuda::to_host(acc);
  for (std::size_t i = 0; i < host.size(); ++i) ASSERT_FLOAT_EQ(after[i], 4 * host[i]) << i;
}

// Pieces timed alternately, called each time or launched as graphs: one figure per piece and
// timed round, all positive, the larger piece slower; after_round runs after every round.
TEST(CudaGraph, TimeAlternatelyGivesEveryPieceEveryTimedRound) {
  SKIP_WITHOUT_DEVICE();
  const int64_t small = 256, large = 1 << 24;
  cuda::Buffer a(static_cast<std::size_t>(large)), y(a.size());
  a.upload(std::vector<float>(a.size(), 1.0f));
  for (const bool as_graph : {false, true}) {
    SCOPED_TRACE(as_graph);
    int rounds_seen = 0;
    const std::vector<std::vector<double>> ms = cuda::time_alternately(
        2, [&](int i) { cuda_kernels::add(a.data(), a.data(), y.data(), i == 0 ? small : large); },
        as_graph, 2, 5, [&] { ++rounds_seen; });
    EXPECT_EQ(rounds_seen, 7);
    ASSERT_EQ(ms.size(), 2u);
    for (const auto& piece : ms) {
      ASSERT_EQ(piece.size(), 5u);
      for (double t : piece) EXPECT_GT(t, 0.0);
    }
    std::vector<double> s0 = ms[0], s1 = ms[1];
    std::sort(s0.begin(), s0.end());
    std::sort(s1.begin(), s1.end());
    EXPECT_LT(s0[2], s1[2]);  // 256 values against 16M (192 MB moved)
  }
}

TEST(CudaBuffer, CopiesExactSizesOnlyAndRefusesAbsurdAllocations) {
  SKIP_WITHOUT_DEVICE();
  cuda::Buffer b(3);
  const std::vector<float> v{1.0f, 2.0f, 3.0f};
  b.upload(v);
  std::vector<float> back(3);
  b.download(back);
  EXPECT_EQ(back, v);
  std::vector<float> wrong(4);
  EXPECT_THROW(b.upload(wrong), Error);
  EXPECT_THROW(b.download(wrong), Error);
  // 2^40 floats (4 TiB) is more than any device has: a clean Error, not a crash.
  EXPECT_THROW(cuda::Buffer(std::size_t{1} << 40), Error);
}

}  // namespace
}  // namespace nnperf
