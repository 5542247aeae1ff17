// `nnperf lab`, the main job, end to end on synthetic data: a progress line per stage, every
// stage's outputs under one folder, a roofline with a point per profiled conv layer and one for
// the CNN training step, and a
// report.html that opens in headless Chromium; bad flags refused before anything is measured.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"

namespace nnperf {
namespace {

TEST(LabCli, AllStagesUnderOneFolderAndOneReport) {
  test::TempDir dir;
  const auto out = dir / "lab";
  const auto r = test::run_nnperf(
      fmt::format("lab --synthetic --progress lines --out-dir '{}'", out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  for (int i = 1; i <= 8; ++i)
    EXPECT_NE(r.out.find(fmt::format("[{}/8]", i)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(fmt::format("report: {}", (out / "report.html").string())),
            std::string::npos)
      << r.out;
  for (const char* f :
       {"run.json", "peaks/peaks.json", "mlp-bench/mlp_bench.json", "activations/summary.csv",
        "profile/resnet18_gemm/resnet18_gemm_layers.csv",
        "profile/resnet18_winograd/resnet18_winograd_layers.csv",
        "profile/resnet18_find/resnet18_find_layers.csv", "train/final_results.json",
        "train/training_metrics.csv", "complexity/resnet18_224.json", "roofline/roofline.json",
        "roofline/roofline_points.csv", "report.md", "report.html"}) {
    EXPECT_TRUE(std::filesystem::exists(out / f)) << f;
  }
  const auto roof = nlohmann::json::parse(test::read_text(out / "roofline" / "roofline.json"));
  int convs = 0, steps = 0;
  for (const auto& p : roof["records"]) {
    convs += p["layer_type"] == "Conv2d";
    steps += p["layer_type"] == "training step" && p["arch"] == "resnet18";
  }
  EXPECT_EQ(convs, 3 * 20);  // every conv layer of the three sweeps
  EXPECT_EQ(steps, 1);       // the CNN training stage's mean step
  const auto check =
      test::run_command(fmt::format("python3 '{}/scripts/check_report_html.py' '{}' --figures 5",
                                    NNPERF_SOURCE_DIR, (out / "report.html").string()));
  if (check.exit_code == 77) GTEST_SKIP() << check.out;
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(LabCli, RefusesBadFlagsBeforeMeasuring) {
  test::TempDir dir;
  for (const auto& [args, flag] : std::vector<std::pair<std::string, std::string>>{
           {"lab --model nosuch", "--model: unknown model 'nosuch'"},
           {"lab --model mlp", "--model mlp: the lab profiles a CNN"},
           {"lab --algorithms gemm,nosuch", "--algorithms nosuch: expected guess or find"}}) {
    const auto r = test::run_nnperf(fmt::format("{} --out-dir '{}'", args, (dir / "x").string()));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err.rfind("nnperf: error: " + flag, 0), 0u) << args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
    EXPECT_TRUE(r.err.ends_with('\n')) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "x")) << args << ": folder created before refusing";
  }
}

}  // namespace
}  // namespace nnperf
