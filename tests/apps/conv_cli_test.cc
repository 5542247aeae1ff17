// `nnperf verify conv2d` and `nnperf bench conv2d` end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "nnperf/kernels/conv/conv.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;
namespace fs = std::filesystem;

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

// --pass backward-data / backward-weights time that pass's registry (conv_backward.h): every
// row of it appears, served or skipped with its reason, and `guess` names one of the served rows.
TEST(ConvCli, BenchBackwardPassesTimeTheirOwnRegistry) {
  test::TempDir dir;
  const std::map<std::string, std::set<std::string>> rows{
      {"backward-data", {"gemm", "gemm_batched", "transposed_forward"}},
      {"backward-weights", {"gemm", "gemm_batched"}}};
  for (const auto& [pass, names] : rows) {
    const fs::path json = dir / (pass + ".json");
    const auto r = run_nnperf(fmt::format(
        "bench conv2d --problem mb2ic8ih9oc8kh3sh2ph1 --pass {} --warmup 1 --measure 2 "
        "--peak-gflops 100 --json '{}'",
        pass, json.string()));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find(", " + pass + ", 1 thread(s)"), std::string::npos) << r.out;
    const auto j = nlohmann::json::parse(test::read_text(json));
    EXPECT_EQ(j["context"]["pass"], pass);
    std::set<std::string> seen, served;
    for (const auto& rec : j["records"]) {
      seen.insert(rec["algorithm"].get<std::string>());
      if (rec["status"] == "ok") {
        served.insert(rec["algorithm"].get<std::string>());
        EXPECT_GT(rec["time_ms_median"].get<double>(), 0.0);
      } else {
        // stride 2: dX is no stride-1 convolution of dY
        EXPECT_EQ(rec["algorithm"], "transposed_forward");
        EXPECT_NE(rec["reason"].get<std::string>().find("stride > 1"), std::string::npos);
      }
    }
    EXPECT_EQ(seen, names) << pass;
    EXPECT_EQ(served.count(j["context"]["guess"].get<std::string>()), 1u) << j["context"].dump();
  }
  const auto bad = run_nnperf("bench conv2d --problem mb1ic8ih8oc8kh3 --pass sideways");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--pass"), std::string::npos) << bad.err;
  const auto gemm = run_nnperf("bench gemm --problem m8n8k8 --pass backward-data");
  EXPECT_EQ(gemm.exit_code, 2);
  EXPECT_NE(gemm.err.find("--pass: applies to bench conv2d"), std::string::npos) << gemm.err;
}

}  // namespace
}  // namespace nnperf
