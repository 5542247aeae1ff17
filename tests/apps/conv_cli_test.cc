// `nnperf verify conv2d` and `nnperf bench conv2d` end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "nnperf/kernels/conv/conv.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;

TEST(ConvCli, VerifyChecksEveryAlgorithmAndSkipsWithReasons) {
  auto r = run_nnperf("verify conv2d --problem mb2ic5ih11oc7kh3ph1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (const auto& a : conv_algorithms()) {
    EXPECT_NE(r.out.find(std::string(a.name) + " "), std::string::npos) << a.name << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("PASS"), std::string::npos);
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
  // Stride 2: the Winograd rows are skipped with their reason, the others pass.
  r = run_nnperf("verify conv2d --problem mb1ic4ih9oc6kh3sh2ph1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("winograd"), std::string::npos);
  EXPECT_NE(r.out.find("SKIP"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stride"), std::string::npos) << r.out;
}

TEST(ConvCli, VerifyOneAlgorithmAndBadInput) {
  auto r = run_nnperf("verify conv2d --algorithm 'implicit gemm' --problem g2mb1ic4ih7oc6kh3ph1");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("implicit_gemm"), std::string::npos);
  EXPECT_NE(r.out.find("PASS"), std::string::npos);
  r = run_nnperf("verify conv2d --problem mb1ic4ihXoc6");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("mb1ic4ihXoc6"), std::string::npos) << r.err;
  r = run_nnperf("verify conv2d --algorithm magic --problem mb1ic4ih7oc6kh3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("winograd"), std::string::npos) << r.err;
  r = run_nnperf("verify matmul --problem mb1ic4ih7oc6kh3");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(ConvCli, BenchWritesRecordsForSupportedAlgorithms) {
  test::TempDir dir;
  const auto r = run_nnperf(fmt::format(
      "bench conv2d --problem mb1ic8ih12oc8kh3ph1 --warmup 1 --measure 3 --peak-gflops 100 --json '{}'",
      (dir / "b.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(test::read_text(dir / "b.json"));
  ASSERT_TRUE(j.contains("context"));
  int ok = 0;
  for (const auto& rec : j["records"]) {
    EXPECT_EQ(rec["problem"], "mb1ic8ih12oc8kh3ph1");
    if (rec["status"] == "ok") {
      ++ok;
      for (const char* k : {"algorithm", "time_ms_median", "time_ms_min", "time_ms_max", "gflops_per_s"}) {
        EXPECT_TRUE(rec.contains(k)) << k;
      }
      EXPECT_GT(rec["gflops_per_s"].get<double>(), 0.0);
    }
  }
  EXPECT_GE(ok, 4);
}

}  // namespace
}  // namespace nnperf
