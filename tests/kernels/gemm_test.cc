// GEMM algorithms against the float64 reference: every registry row (so a new row is tested with
// no edit here) x 4 transpose cases x shapes around every micro-kernel tile and cache block, odd
// primes, zero sizes, padded leading dimensions, alpha/beta != (1, 0), 1 and 2 threads; then each
// SIMD path of the blocked kernel that this CPU supports. Bound per element (STYLE.md section 2):
// |y - ref| <= c_algo * k * eps * sum|a*b| + eps * |ref|, eps = 2^-23.
#include "nnperf/gpu/cuda.h"
#include "nnperf/kernels/gemm/gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "nnperf/core/cpu.h"
#include "nnperf/core/error.h"
#include "nnperf/core/threads.h"
#include "nnperf/core/workspace.h"
#include "nnperf/kernels/gemm/blocked_internal.h"
#include "nnperf/kernels/gemm/gemm_internal.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::kEps;

struct Size {
  int64_t m, n, k;
};

// alpha/beta/padding variants, rotated over the runs of each shape so that every shape meets
// each of them with different transposes and thread counts.
struct Variant {
  float alpha, beta;
  int64_t pad;  // extra elements per row of A, B and C beyond the minimal leading dimension
};
// alpha = 0 leaves C = beta * C (blocked and BLAS skip the product altogether).
constexpr Variant kVariants[] = {
    {1.0f, 0.0f, 0}, {-0.75f, 1.25f, 3}, {0.5f, 1.0f, 1}, {0.0f, 0.5f, 2}};

// Worst |y - ref| / bound seen per algorithm label, printed once at the end: the evidence for
// the tolerance factors stated in gemm_registry.cc.
std::map<std::string, double>& worst_ratios() {
  static std::map<std::string, double> worst;
  return worst;
}

class ReportWorst : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string line;
    for (const auto& [label, ratio] : worst_ratios())
      line += " " + label + "=" + std::to_string(ratio);
    if (!line.empty()) std::printf("[gemm] worst |y-ref|/bound:%s\n", line.c_str());
  }
};
const auto* const kReportWorst = ::testing::AddGlobalTestEnvironment(new ReportWorst);

// One GEMM run checked element by element. `run` gets args with a workspace of `ws_bytes`
// (followed by a canary that must survive). A/B padding holds NaN (must never be read); C holds
// NaN when beta == 0 (must not be read) and its padding a sentinel (must not be written).
void check_gemm(const std::string& label, const std::function<void(const GemmArgs&)>& run,
                std::size_t ws_bytes, double c_algo, const GemmShape& shape, int threads,
                const Variant& var, uint64_t seed) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t a_rows = shape.trans_a ? shape.k : shape.m;
  const int64_t a_cols = shape.trans_a ? shape.m : shape.k;
  const int64_t b_rows = shape.trans_b ? shape.n : shape.k;
  const int64_t b_cols = shape.trans_b ? shape.k : shape.n;
  const int64_t lda = std::max<int64_t>(1, a_cols + var.pad);
  const int64_t ldb = std::max<int64_t>(1, b_cols + var.pad);
  const int64_t ldc = std::max<int64_t>(1, shape.n + var.pad);
  auto padded = [&](int64_t rows, int64_t cols, int64_t ld, uint64_t s, float pad_value) {
    std::vector<float> dense = test::random_vector(rows * cols, s);
    std::vector<float> out(static_cast<std::size_t>(std::max<int64_t>(1, rows * ld)), pad_value);
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(dense.begin() + r * cols, cols, out.begin() + r * ld);
    }
    return out;
  };
  const std::vector<float> a = padded(a_rows, a_cols, lda, seed, nan);
  const std::vector<float> b = padded(b_rows, b_cols, ldb, seed + 1, nan);
  constexpr float kSentinel = 12345.0f;
  std::vector<float> c = padded(shape.m, shape.n, ldc, seed + 2, kSentinel);
  if (var.beta == 0.0f) {
    for (int64_t i = 0; i < shape.m; ++i) std::fill_n(c.begin() + i * ldc, shape.n, nan);
  }

  GemmArgs args;
  args.shape = shape;
  args.alpha = var.alpha;
  args.beta = var.beta;
  args.a = a.data();
  args.lda = lda;
  args.b = b.data();
  args.ldb = ldb;
  args.c = c.data();
  args.ldc = ldc;
  args.threads = threads;
  std::vector<double> ref(static_cast<std::size_t>(shape.m * shape.n));
  std::vector<double> abs_sum(ref.size());
  gemm_reference(args, ref.data(), abs_sum.data());

  constexpr std::size_t kCanary = 256;
  Workspace ws;
  ws.reserve(ws_bytes + kCanary);
  auto* bytes = static_cast<unsigned char*>(ws.data());
  std::memset(bytes + ws_bytes, 0xA5, kCanary);
  args.workspace = ws_bytes > 0 ? ws.data() : nullptr;
  run(args);

  const std::string where = fmt::format("{} {} threads={} alpha={} beta={} pad={} seed={}", label,
                                        shape.str(), threads, var.alpha, var.beta, var.pad, seed);
  for (std::size_t i = 0; i < kCanary; ++i) {
    ASSERT_EQ(bytes[ws_bytes + i], 0xA5) << where << ": wrote past workspace_bytes";
  }
  if (shape.k > 0 || var.beta != 0.0f) {
    const auto nonzero = std::count_if(ref.begin(), ref.end(), [](double v) { return v != 0.0; });
    ASSERT_GE(static_cast<double>(nonzero), 0.9 * static_cast<double>(ref.size()))
        << where << ": reference is mostly zeros, the test would prove nothing";
  }
  double& worst = worst_ratios()[label];
  for (int64_t i = 0; i < shape.m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      const float y = c[i * ldc + j];
      if (j >= shape.n) {
        ASSERT_EQ(y, kSentinel) << where << ": wrote C padding at (" << i << ", " << j << ")";
        continue;
      }
      const double r = ref[i * shape.n + j];
      const double bound = c_algo * static_cast<double>(shape.k) * kEps * abs_sum[i * shape.n + j] +
                           kEps * std::fabs(r);
      const double err = std::fabs(static_cast<double>(y) - r);
      ASSERT_TRUE(err <= bound) << where << ": C(" << i << ", " << j << ") = " << y
                                << ", reference " << r << ", |error| " << err << " > bound "
                                << bound;
      if (bound > 0) worst = std::max(worst, err / bound);
    }
  }
}

// Runs all 4 transposes x threads {1, 2}, rotating the alpha/beta/padding variant.
void check_all_cases(const std::string& label, const std::function<void(const GemmArgs&)>& run,
                     const std::function<std::size_t(const GemmShape&, int)>& ws_bytes,
                     double c_algo, const Size& size, uint64_t seed) {
  int index = 0;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (int threads : {1, 2}) {
        const GemmShape shape{ta, tb, size.m, size.n, size.k};
        const Variant& var = kVariants[index % std::size(kVariants)];
        ASSERT_NO_FATAL_FAILURE(check_gemm(label, run, ws_bytes(shape, threads), c_algo, shape,
                                           threads, var, seed + 1000 * index));
        ++index;
      }
    }
  }
}

// Shapes around every micro-kernel tile (all SIMD levels, so each level's edges are covered
// whichever one the registry row dispatches to) and the k block, plus odd and real-layer shapes.
std::vector<Size> registry_sizes() {
  std::vector<Size> sizes = {
      {1, 1, 1},       {7, 13, 17},  {97, 89, 101}, {2, 3, 5}, {1, 37, 41},
      {37, 1, 41},     {31, 29, 1},  {0, 5, 7},     {5, 0, 7}, {5, 7, 0},
      {257, 263, 301}, {64, 10, 64}, {64, 128, 96}};  // MLP-like layers (last, hidden)
  std::set<int64_t> ms, ns, ks;
  for (const SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    const blocked_gemm::BlockSizes bs = blocked_gemm::block_sizes(level);
    for (int64_t t : {bs.mr - 1, bs.mr, bs.mr + 1, 2 * bs.mr}) ms.insert(t);
    for (int64_t t : {bs.nr - 1, bs.nr, bs.nr + 1, 2 * bs.nr}) ns.insert(t);
    for (int64_t t : {bs.kc - 1, bs.kc, bs.kc + 1}) ks.insert(t);
  }
  for (int64_t m : ms) sizes.push_back({m, 19, 23});
  for (int64_t n : ns) sizes.push_back({11, n, 23});
  for (int64_t k : ks) sizes.push_back({13, 21, k});
  return sizes;
}

std::string size_name(const Size& s) { return fmt::format("m{}n{}k{}", s.m, s.n, s.k); }

std::string registry_test_name(
    const ::testing::TestParamInfo<std::tuple<std::string, Size>>& param_info) {
  return std::get<0>(param_info.param) + "_" + size_name(std::get<1>(param_info.param));
}

std::string simd_test_name(const ::testing::TestParamInfo<SimdLevel>& param_info) {
  return to_string(param_info.param);
}

class GemmAlgorithmTest : public ::testing::TestWithParam<std::tuple<std::string, Size>> {};

TEST_P(GemmAlgorithmTest, MatchesFloat64Reference) {
  const auto& [name, size] = GetParam();
  const GemmAlgorithm& algo = find_gemm(name);
  ASSERT_EQ(algo.why_not(GemmShape{false, false, size.m, size.n, size.k}), "");
  check_all_cases(name, algo.run, algo.workspace_bytes, algo.tolerance_factor, size,
                  static_cast<uint64_t>(size.m * 1000003 + size.n * 1009 + size.k));
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const GemmAlgorithm& algo : gemm_algorithms()) {
    if (algo.device == Device::kCpu) names.emplace_back(algo.name);  // GPU rows: tests/gpu
  }
  return names;
}

INSTANTIATE_TEST_SUITE_P(Registry, GemmAlgorithmTest,
                         ::testing::Combine(::testing::ValuesIn(algorithm_names()),
                                            ::testing::ValuesIn(registry_sizes())),
                         registry_test_name);

// With OpenBLAS's own pool at one thread (CNN runs), "blas" splits the product over the
// caller's OpenMP threads: columns when n >= m, rows otherwise, in slices of 16 with an uneven
// last one. Each shape is over 2 x 2 MFLOP, so 2 threads split it.
TEST(GemmBlas, SlicesOverOpenMpThreadsWhenOpenBlasRunsOnTheCaller) {
  const int before = blas_threads();
  set_blas_threads(1);
  ASSERT_EQ(blas_threads(), 1);
  const GemmAlgorithm& algo = find_gemm("blas");
  for (const Size& size : {Size{97, 389, 101}, Size{389, 45, 211}, Size{33, 33, 2000}}) {
    ASSERT_GT(2.0 * size.m * size.n * size.k, 4e6) << size_name(size);
    check_all_cases("blas sliced", algo.run, algo.workspace_bytes, algo.tolerance_factor, size,
                    static_cast<uint64_t>(size.m * 7 + size.n));
  }
  set_blas_threads(before);
}

// OpenBLAS's thread count is set apart from OpenMP's team (its OpenMP build sets both), and the
// build CMake linked is the one loaded (OpenBLAS's pthread and OpenMP builds share a soname, so
// the run path decides): a GCC build where libopenblas-openmp-dev is installed runs BLAS in
// OpenMP's pool.
TEST(GemmBlas, ItsThreadCountLeavesOpenMpsTeamAndTheLinkedBuildIsLoaded) {
  const int team = omp_get_max_threads(), before = blas_threads();
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  EXPECT_EQ(omp_get_max_threads(), team);
  set_blas_threads(before);
  EXPECT_EQ(blas_threads(), before);
  EXPECT_EQ(omp_get_max_threads(), team);
  EXPECT_EQ(blas_uses_openmp(), NNPERF_OPENBLAS_OPENMP == 1) << blas_description();
}

// Each SIMD path of the blocked GEMM in one process (active_simd() is fixed at first use, so
// the internal entry point takes the level): tile edges, k blocks and several m/n blocks.
class GemmBlockedSimdTest : public ::testing::TestWithParam<SimdLevel> {};

TEST_P(GemmBlockedSimdTest, MatchesFloat64Reference) {
  const SimdLevel level = GetParam();
  if (level > cpu_info().simd) {
    GTEST_SKIP() << "this CPU does not support " << to_string(level) << " (it has "
                 << to_string(cpu_info().simd) << ")";
  }
  const blocked_gemm::BlockSizes bs = blocked_gemm::block_sizes(level);
  const double c_algo = find_gemm("blocked").tolerance_factor;
  // n up to kUnpackedAMaxPanels * nr reads A in place, wider n packs it: both at every edge.
  const int64_t wide = (blocked_gemm::kUnpackedAMaxPanels + 1) * bs.nr;
  std::vector<Size> sizes = {{1, 1, 1}, {7, 13, 17}, {97, 89, 101}};
  for (int64_t m : {bs.mr - 1, bs.mr, bs.mr + 1, 2 * bs.mr, 3 * bs.mr + 1}) {
    for (int64_t n : {bs.nr - 1, bs.nr, bs.nr + 1, 2 * bs.nr, wide - 1, wide, wide + 1}) {
      sizes.push_back({m, n, 9});
    }
  }
  for (int64_t k : {bs.kc - 1, bs.kc, bs.kc + 1, 2 * bs.kc + 5}) {
    sizes.push_back({bs.mr + 1, bs.nr + 1, k});
    sizes.push_back({bs.mr + 1, wide + 1, k});
  }
  // Shapes that reach the other parts of the loop nest; the plan is asserted so that a retuned
  // threshold cannot silently drop the coverage.
  const Size several_mc{2 * bs.mc + bs.mr + 1, wide + 3, 37};  // > 1 mc block per thread
  const Size several_nc{bs.mr - 1, bs.nc + bs.nr + 1, 401};    // > 1 jc block, threads split n
  const Size unpacked_2t{600, 2 * bs.nr - 1, 500};             // A in place, 2 threads
  const auto plan = [&](const Size& s) {
    return blocked_gemm::plan_shape(level, GemmShape{false, false, s.m, s.n, s.k}, 2);
  };
  EXPECT_GT(several_mc.m, plan(several_mc).mc * plan(several_mc).threads_m);
  EXPECT_GT(several_nc.n, plan(several_nc).nc);
  EXPECT_EQ(plan(several_nc).threads_n, 2);
  EXPECT_EQ(plan(unpacked_2t).threads, 2);
  EXPECT_FALSE(plan(unpacked_2t).pack_a);
  EXPECT_TRUE(plan(several_mc).pack_a);
  sizes.insert(sizes.end(), {several_mc, several_nc, unpacked_2t});
  const std::string label = std::string("blocked/") + to_string(level);
  for (const Size& size : sizes) {
    SCOPED_TRACE(size_name(size));
    check_all_cases(
        label, [level](const GemmArgs& args) { gemm_blocked_with(level, args); },
        gemm_blocked_workspace_bytes, c_algo, size, static_cast<uint64_t>(size.m + 7 * size.k));
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, GemmBlockedSimdTest,
                         ::testing::Values(SimdLevel::kScalar, SimdLevel::kAvx2,
                                           SimdLevel::kAvx512),
                         simd_test_name);

// The blocked GEMM asked for 2 threads inside an OpenMP region gets a team of 1 (no nested
// parallelism): its virtual threads must still cover all of C.
TEST(GemmBlocked, CorrectWhenOpenMpGivesFewerThreads) {
  const GemmAlgorithm& algo = find_gemm("blocked");
  const int saved = omp_get_max_active_levels();
  omp_set_max_active_levels(1);
  bool ok = true;
#pragma omp parallel num_threads(2)
  {
#pragma omp single
    {
      check_gemm("blocked/nested", algo.run,
                 algo.workspace_bytes(GemmShape{false, false, 200, 150, 300}, 2),
                 algo.tolerance_factor, GemmShape{false, false, 200, 150, 300}, 2, kVariants[1],
                 77);
      ok = !::testing::Test::HasFailure();
    }
  }
  omp_set_max_active_levels(saved);
  EXPECT_TRUE(ok);
}

TEST(GemmRegistry, NamesInOrderAndUnknownNameListsThem) {
  EXPECT_EQ(gemm_algorithm_names(), "naive, parallel, blocked, blas, cuda, cublas");
  EXPECT_EQ(gemm_algorithm_names(Device::kCpu), "naive, parallel, blocked, blas");
  EXPECT_EQ(gemm_algorithm_names(Device::kCuda), "cuda, cublas");
  EXPECT_EQ(find_gemm("cublas").device, Device::kCuda);
  try {
    find_gemm("cublas", Device::kCpu);
    FAIL() << "a GPU row was given to a CPU caller";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "GEMM algorithm 'cublas' runs on the cuda device, this run on the cpu; expected "
                 "one of: naive, parallel, blocked, blas");
  }
  EXPECT_STREQ(find_gemm("blocked").name, "blocked");
  try {
    find_gemm("strassen");
    FAIL() << "find_gemm accepted an unknown name";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown GEMM algorithm 'strassen'; expected one of: naive, parallel, blocked, blas, "
              "cuda, cublas");
  }
}

TEST(GemmRegistry, WhyNotServesEveryNonNegativeShapeOnly) {
  for (const GemmAlgorithm& algo : gemm_algorithms()) {
    if (algo.device != Device::kCpu) {
      // A GPU row serves shapes only where a device is usable, and always says why not.
      EXPECT_NE(algo.why_not(GemmShape{false, false, 4, -1, 4}), "") << algo.name;
      EXPECT_EQ(algo.why_not(GemmShape{false, true, 1024, 10, 784}).empty(), cuda::available())
          << algo.name;
      continue;
    }
    EXPECT_EQ(algo.why_not(GemmShape{true, false, 0, 0, 0}), "") << algo.name;
    EXPECT_EQ(algo.why_not(GemmShape{false, true, 1024, 10, 784}), "") << algo.name;
    EXPECT_NE(algo.why_not(GemmShape{false, false, 4, -1, 4}), "") << algo.name;
    EXPECT_GE(algo.tolerance_factor, 1.0) << algo.name;
  }
}

TEST(GemmShape, DescriptorIsBenchdnnLike) {
  EXPECT_EQ((GemmShape{false, false, 64, 128, 784}.str()), "m64n128k784");
  EXPECT_EQ((GemmShape{true, false, 784, 512, 64}.str()), "m784n512k64_ta");
  EXPECT_EQ((GemmShape{false, true, 64, 784, 512}.str()), "m64n784k512_tb");
  EXPECT_EQ((GemmShape{true, true, 1, 2, 3}.str()), "m1n2k3_ta_tb");
  EXPECT_DOUBLE_EQ((GemmShape{false, false, 64, 128, 784}.flops()), 2.0 * 64 * 128 * 784);
}

TEST(GemmRun, SizesItsOwnWorkspaceAndRejectsNegativeSizes) {
  const std::vector<float> a = test::random_vector(3 * 5, 1), b = test::random_vector(5 * 4, 2);
  for (const GemmAlgorithm& algo : gemm_algorithms()) {
    if (algo.device != Device::kCpu) continue;  // host operands here; tests/gpu for the GPU rows
    std::vector<float> c(12, 0.0f);
    GemmArgs args{GemmShape{false, false, 3, 4, 5},
                  1.0f,
                  0.0f,
                  a.data(),
                  5,
                  b.data(),
                  4,
                  c.data(),
                  4,
                  nullptr,
                  2};
    gemm_run(algo, args);
    std::vector<double> ref(12);
    gemm_reference(args, ref.data(), nullptr);
    for (int i = 0; i < 12; ++i) EXPECT_NEAR(c[i], ref[i], 1e-5) << algo.name;
    args.shape.k = -1;
    EXPECT_THROW(gemm_run(algo, args), Error) << algo.name;
  }
}

}  // namespace
}  // namespace nnperf
