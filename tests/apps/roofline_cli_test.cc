// `nnperf roofline` end to end: a profile folder and peaks given as numbers become
// roofline.json, roofline_points.csv (the roofline project's columns first), the plot and the
// summary; refused inputs (no ceilings, half the ceilings, no folder, no results, an occupied
// --out-dir) exit non-zero with one line naming the flag or the file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "nnperf/io/csv.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;
using test::TempDir;
namespace fs = std::filesystem;

bool one_line(const std::string& s) { return std::count(s.begin(), s.end(), '\n') == 1; }

TEST(RooflineCli, ProfileFolderToPointsCsvPlotAndSummary) {
  TempDir dir;
  auto r =
      run_nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 "
                             "--threads 1 --output-dir '{}'",
                             (dir / "sweep").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(
      fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 20 --out-dir '{}' --summary '{}'",
                  dir.path().string(), (dir / "roof").string(), (dir / "sum.csv").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("of the time in memory-bound points"), std::string::npos) << r.out;
  const CsvTable t = read_csv(dir / "roof" / "roofline_points.csv");
  EXPECT_EQ(t.header[0], "label");
  EXPECT_EQ(t.header[11], "peak_gbps");
  EXPECT_EQ(t.header[12], "layer");
  EXPECT_GE(t.rows.size(), 20u);  // 20 conv layers and more
  const auto doc = nlohmann::json::parse(test::read_text(dir / "roof" / "roofline.json"));
  EXPECT_EQ(doc["context"]["peak_gflops"]["fp32"], 100.0);
  EXPECT_EQ(doc["records"].size(), t.rows.size());
  EXPECT_EQ(read_csv(dir / "sum.csv").rows.size(), t.rows.size());
  EXPECT_TRUE(std::filesystem::exists(dir / "roof" / "roofline.gp"));
  // The same --out-dir again is refused: it holds a roofline.
  r = run_nnperf(fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 20 --out-dir '{}'",
                             dir.path().string(), (dir / "roof").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--out-dir"), std::string::npos) << r.err;
}

// A --pass train sweep: each layer's point counts its forward and backward (a convolution whose
// input needs a gradient does 3x its forward FLOPs: forward, data and weight gradients; the first
// one, on the image, 2x), the SGD update is a point of its own and the loss is not one.
TEST(RooflineCli, ATrainingPassSweepCountsForwardAndBackwardAndTheUpdate) {
  TempDir dir;
  std::map<std::string, std::map<std::string, double>> flops;  // pass -> layer -> FLOPs
  std::map<std::string, std::string> pass_of;
  for (const char* pass : {"train", "inference"}) {
    const fs::path sweep = dir / pass;
    auto r = run_nnperf(
        fmt::format("profile --model resnet18 --algorithm gemm --pass {} --stage sanity --sizes 32 "
                    "--batch-size 2 --threads 1 --progress quiet --output-dir '{}'",
                    pass, sweep.string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = run_nnperf(fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 20 --out-dir '{}'",
                               sweep.string(), (sweep / "roof").string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const CsvTable t = read_csv(sweep / "roof" / "roofline_points.csv");
    for (std::size_t i = 0; i < t.rows.size(); ++i) {
      flops[pass][t.cell(i, t.require("layer"))] = t.number(i, t.require("flops"));
      pass_of[pass] = t.cell(i, t.require("pass"));
    }
  }
  EXPECT_EQ(pass_of["train"], "training");
  EXPECT_EQ(pass_of["inference"], "inference");
  // Within 0.1%: the CSV keeps 7 digits, and a node's backward also counts the sum of the
  // gradients of its output's consumers (analysis/complexity.cc count_fan_out).
  const auto near = [&](const char* layer, double times) {
    EXPECT_NEAR(flops["train"][layer] / (times * flops["inference"][layer]), 1.0, 1e-3) << layer;
  };
  near("conv1", 2);
  near("layer1.0.conv1", 3);
  near("layer4.1.conv2", 3);
  EXPECT_GT(flops["train"]["optimizer"], 0.0);
  EXPECT_EQ(flops["train"].count("loss"), 0u);
  EXPECT_EQ(flops["inference"].count("optimizer"), 0u);
}

TEST(RooflineCli, RefusedInputs) {
  TempDir dir;
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases{
      {fmt::format("roofline '{}'", dir.path().string()), "no ceilings"},
      {fmt::format("roofline '{}' --peak-compute 1", dir.path().string()), "--peak-bw"},
      {fmt::format("roofline '{}' --peak-compute nan --peak-bw 3", dir.path().string()),
       "--peak-compute"},
      {fmt::format("roofline '{}' --peak-compute 1 --peak-bw 3", (dir / "missing").string()),
       "no such results folder"},
      {fmt::format("roofline '{}' --peak-compute 1 --peak-bw 3", dir.path().string()),
       "no profile, mlp-bench or train results"},
      {fmt::format("roofline '{}' --peaks '{}'", dir.path().string(), (dir / "nope.json").string()),
       "nope.json"},
      {fmt::format("roofline '{}' --peak-compute 1 --peak-bw 3 --color-by size",
                   dir.path().string()),
       "--color-by"},
  };
  for (const auto& c : cases) {
    const auto r = run_nnperf(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(one_line(r.err)) << c.args << "\n" << r.err;
  }
  // A profile without per-layer rows: the refusal says why it has no points, and --peaks given a
  // folder says it is one.
  const fs::path prof = dir / "p";
  ASSERT_EQ(
      run_nnperf(fmt::format("profile --model resnet18 --algorithm gemm --sizes 32 --warmup 0 "
                             "--measure 1 --no-layers --threads 1 --output-dir '{}'",
                             prof.string()))
          .exit_code,
      0);
  auto r = run_nnperf(fmt::format("roofline '{}' --peak-compute 1 --peak-bw 3", prof.string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("resnet18_gemm_layers.csv: no layer rows to place (the profile ran with "
                       "--no-layers)"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  r = run_nnperf(fmt::format("roofline '{}' --peaks '{}'", prof.string(), dir.path().string()));
  EXPECT_NE(r.err.find(dir.path().string() + ": is a folder; expected a file"), std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace nnperf

namespace nnperf {
namespace {

std::string ncu_fixture(const std::string& name) {
  return fmt::format("{}/ncu/{}", NNPERF_TEST_DATA_DIR, name);
}

TEST(RooflineNcuCli, LaunchesBecomePointsAndTheReportEscapesKernelNames) {
  TempDir dir;
  auto r = run_nnperf(
      fmt::format("roofline --ncu '{}' --peak-compute 60 --peak-bw 3350 --out-dir '{}' --json '{}'",
                  ncu_fixture("xss_name.csv"), (dir / "roof").string(), (dir / "k.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto k = nlohmann::json::parse(test::read_text(dir / "k.json"));
  ASSERT_FALSE(k["records"].empty());
  EXPECT_EQ(k["records"][0]["name"], "<img src=x onerror=alert(1)>");
  const CsvTable t = read_csv(dir / "roof" / "roofline_points.csv");
  EXPECT_EQ(t.rows.size(), k["records"].size());
  EXPECT_EQ(t.cell(0, t.require("backend")), "cuda");
  r = run_nnperf(fmt::format("report '{}'", (dir / "roof").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = test::read_text(dir / "roof" / "report.html");
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("Nsight Compute kernels"), std::string::npos);
  const auto check =
      test::run_command(fmt::format("python3 '{}/scripts/check_report_html.py' '{}' --figures 1 "
                                    "--text '&lt;img src=x onerror=alert(1)&gt;' "
                                    "--absent '<img src=\"x\"'",
                                    NNPERF_SOURCE_DIR, (dir / "roof" / "report.html").string()));
  if (check.exit_code == 77) GTEST_SKIP() << check.out;
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
}

TEST(RooflineNcuCli, BrokenOrUtilisationOnlyExports) {
  TempDir dir;
  // A broken export: exit 1, one line naming the file and line, no folder written.
  auto r =
      run_nnperf(fmt::format("roofline --ncu '{}' --peak-compute 60 --peak-bw 3350 --out-dir '{}'",
                             ncu_fixture("broken_no_dram.csv"), (dir / "a").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_NE(r.err.find("broken_no_dram.csv"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "a"));
  // Utilisation metrics only: the summary, and no roofline.
  r = run_nnperf(fmt::format("roofline --ncu '{}' --out-dir '{}'",
                             ncu_fixture("utilisation_only.csv"), (dir / "b").string()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("no counter roofline can be drawn"), std::string::npos) << r.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "b" / "roofline_points.csv"));
  // Counters but no ceilings; folders and --ncu together.
  r = run_nnperf(fmt::format("roofline --ncu '{}' --out-dir '{}'",
                             ncu_fixture("same_name_two_ids.csv"), (dir / "c").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--peak-compute"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format("roofline '{}' --ncu '{}' --peak-compute 1 --peak-bw 2",
                             dir.path().string(), ncu_fixture("same_name_two_ids.csv")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("exclude each other"), std::string::npos) << r.err;
  // A launch has no algorithm to colour by: refused, not ignored.
  r = run_nnperf(fmt::format(
      "roofline --ncu '{}' --peak-compute 60 --peak-bw 3350 --color-by algorithm --out-dir '{}'",
      ncu_fixture("same_name_two_ids.csv"), (dir / "d").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("nnperf: error: --color-by algorithm: ", 0), 0u) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "d"));
}

}  // namespace
}  // namespace nnperf
