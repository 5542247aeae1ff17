// `nnperf bench batchnorm` end to end: the CPU row of both passes, checked against the float64
// reference (within float32 rounding of float64 sums), its bandwidth and share of --peak-bw in
// the table and the JSON; the CPU's three rows (own with the layout it ran, channels, and blocks,
// skipped with the reason on a plane larger than a block); the GPU rows (own and cudnn, each
// checked the same way) with a device, else one line; bad problems, flags of other ops, and sizes
// beyond memory refused in one line before anything is allocated or written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "nnperf/gpu/cuda.h"
#include "nnperf/io/json_read.h"
#include "nnperf/runs/batchnorm_bench.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;

TEST(BenchBatchNormCli, TimesTheCpuRowOfBothPassesAndChecksIt) {
  test::TempDir dir;
  for (const char* pass : {"forward", "backward"}) {
    SCOPED_TRACE(pass);
    const std::string json = (dir.path() / fmt::format("{}.json", pass)).string();
    const auto r = run_nnperf(fmt::format(
        "bench batchnorm --problem mb3c5h7w9 --pass {} --measure 3 --warmup 1 --threads 2 "
        "--peak-bw 20 --algorithms OWN --json '{}'",
        pass, json));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(fmt::format("problem mb3c5h7w9 (3 x 5 x 63), {}, on the cpu", pass)),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("\nown "), std::string::npos) << r.out;  // the table's spelling
    const nlohmann::json j = read_json(json);
    ASSERT_EQ(j["records"].size(), 1u);
    const nlohmann::json& rec = j["records"][0];
    EXPECT_EQ(rec["status"], "ok");
    EXPECT_EQ(rec["pass"], pass);
    EXPECT_EQ(rec["reps"], 3);
    EXPECT_EQ(rec["bytes"].get<double>(), 3 * 5 * 63 * (std::string(pass) == "forward" ? 12 : 20));
    EXPECT_GT(rec["gb_per_s"].get<double>(), 0);
    EXPECT_NEAR(rec["percent_of_peak_bw"].get<double>(), 5 * rec["gb_per_s"].get<double>(),
                1e-9 * rec["gb_per_s"].get<double>());
    EXPECT_LT(rec["max_rel_err"].get<double>(), 1e-6);  // float64 sums, one float32 rounding
    EXPECT_EQ(rec["layout"], "blocks");                 // a plane of 63 values fits a block
    EXPECT_EQ(j["context"]["threads"], 2);
  }
}

// Without --algorithms the CPU times own, channels and blocks, each checked; own names the layout
// it ran. A plane of more than 1024 values: own runs channels, blocks is skipped with the reason.
TEST(BenchBatchNormCli, TheCpuRowsAreOwnAndEachLayout) {
  test::TempDir dir;
  for (const auto& [problem, own_layout] : std::vector<std::pair<std::string, std::string>>{
           {"mb3c5h4", "blocks"}, {"mb2c3h33w33", "channels"}}) {
    SCOPED_TRACE(problem);
    const std::string json = (dir.path() / (problem + ".json")).string();
    const auto r = run_nnperf(fmt::format(
        "bench batchnorm --problem {} --pass backward --measure 2 --warmup 1 --json '{}'", problem,
        json));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json j = read_json(json);
    std::vector<std::string> ran;
    for (const nlohmann::json& rec : j["records"]) {
      const std::string name = rec["algorithm"];
      if (rec["status"] != "ok") {
        EXPECT_EQ(name, "blocks");
        EXPECT_EQ(own_layout, "channels");
        EXPECT_EQ(rec["reason"],
                  "a plane of 1089 values: more than a block of channels holds (1024)");
        EXPECT_NE(r.out.find("blocks     skipped: a plane of 1089 values"), std::string::npos)
            << r.out;
        continue;
      }
      ran.push_back(name);
      EXPECT_LT(rec["max_rel_err"].get<double>(), 1e-6) << name;
      EXPECT_EQ(rec["layout"], name == "own" ? own_layout : name);
    }
    if (own_layout == "blocks") {
      EXPECT_EQ(ran, (std::vector<std::string>{"own", "channels", "blocks"}));
    } else {
      EXPECT_EQ(ran, (std::vector<std::string>{"own", "channels"}));
    }
    EXPECT_NE(r.out.find("\nown "), std::string::npos) << r.out;
  }
}

TEST(BenchBatchNormCli, GpuRowsWithADeviceOrOneLineWhyNot) {
  for (const char* pass : {"forward", "backward"}) {
    SCOPED_TRACE(pass);
    const auto r = run_nnperf(fmt::format(
        "bench batchnorm --problem mb4c3h41w7 --device cuda --measure 3 --pass {}", pass));
    if (!cuda::available()) {
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.err, "nnperf: error: --device cuda: " + cuda::unavailable_reason() + "\n");
      EXPECT_EQ(r.out, "");
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\nown "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\ncudnn "), std::string::npos) << r.out;
  }
}

TEST(BenchBatchNormCli, RefusesBadProblemsOtherOpsFlagsAndSizesBeyondMemory) {
  for (const char* bad : {"mb0c3h4", "mb2c3", "c3h4w4", "mb2c3h4w", "mb2c3h4w4x", "mb2c-3h4"}) {
    const auto r = run_nnperf(fmt::format("bench batchnorm --problem {}", bad));
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_EQ(r.err, fmt::format("nnperf: error: --problem '{}': expected mbNcNhN with an "
                                 "optional wN (NCHW), e.g. mb32c64h56w56\n",
                                 bad));
  }
  for (const auto& [flags, want] : std::vector<std::pair<std::string, std::string>>{
           {"batchnorm --problem mb2c3h4 --pass backward-data",
            "--pass backward-data: bench batchnorm takes forward or backward"},
           {"batchnorm --problem mb2c3h4 --algorithms cudnn",
            "--algorithms: no BatchNorm algorithm 'cudnn' on the cpu; one of own, channels, "
            "blocks"},
           {"batchnorm --problem mb2c3h4 --engines",
            "--engines: applies to bench conv2d --device cuda only"},
           {"batchnorm --problem mb2c3h4 --peak-gflops 100",
            "--peak-gflops: bench batchnorm is bound by memory; give --peak-bw"},
           {"conv2d --problem mb1ic4ih6oc4kh3 --peak-bw 10",
            "--peak-bw: applies to bench batchnorm (conv2d on the CPU takes --peak-gflops)"},
           {"conv2d --problem mb1ic4ih6oc4kh3 --pass backward",
            "--pass backward: conv2d takes forward, backward-data or backward-weights"}}) {
    const auto r = run_nnperf("bench " + flags);
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_EQ(r.err, "nnperf: error: " + want + "\n") << flags;
  }
  test::TempDir dir;
  const std::string json = (dir.path() / "big.json").string();
  const auto r = run_nnperf(
      fmt::format("bench batchnorm --problem mb100000c1000h1000w1000 --json '{}'", json));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(r.err.rfind("nnperf: error: --problem mb100000c1000h1000w1000", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(json));
}

TEST(BenchBatchNorm, ProblemsParseToTheirShape) {
  const BatchNormShape s = parse_batchnorm_problem("mb32c64h56w56");
  EXPECT_EQ(s.mb, 32);
  EXPECT_EQ(s.channels, 64);
  EXPECT_EQ(s.plane, 3136);
  EXPECT_EQ(parse_batchnorm_problem("mb1c7h9").plane, 81);  // square
  EXPECT_EQ(parse_batchnorm_problem("mb2c3h5w1").plane, 5);
  EXPECT_EQ(batchnorm_bench_algorithms(Device::kCpu),
            (std::vector<std::string>{"own", "channels", "blocks"}));
  EXPECT_EQ(batchnorm_bench_algorithms(Device::kCuda), (std::vector<std::string>{"own", "cudnn"}));
}

}  // namespace
}  // namespace nnperf
