// `nnperf devices` and `nnperf devices --check-cuda` end to end, on whatever this machine has:
// without a GPU --check-cuda prints what it found, then "no CUDA device: <reason>" and exits 1;
// with one it lists the devices and exits 0. (The probe's details are tested on a stand-in
// library in tests/gpu.)
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;

TEST(DevicesCli, ReportsTheCpuAndBlas) {
  const auto r = run_nnperf("devices --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("cpu: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("\nblas: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\ncuda: "), std::string::npos) << r.out;
  // The machine model guess ranks convolutions for, on one line.
  EXPECT_NE(r.out.find("\n  cost model: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" GFLOP/s per core ("), std::string::npos) << r.out;
}

TEST(DevicesCli, ShowsTheCostModelFromNnperfPeaksAndRefusesABrokenOne) {
  const std::string fixture = std::string(NNPERF_TEST_DATA_DIR) + "/bench_conv/peaks.json";
  auto r = test::run_command(
      fmt::format("NNPERF_PEAKS='{}' '{}' devices --threads 1", fixture, NNPERF_BINARY));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  cost model: peaks.json " + fixture + " env vm: "), std::string::npos)
      << r.out;
  test::TempDir dir("devices");
  const std::string broken = (dir / "peaks.json").string();
  std::ofstream(broken) << "{\"vm\": {\"peak_gbps\": 21";
  r = test::run_command(fmt::format("NNPERF_PEAKS='{}' '{}' devices", broken, NNPERF_BINARY));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("nnperf: error: $NNPERF_PEAKS: " + broken + ": not valid JSON", 0), 0u)
      << r.err;
}

TEST(DevicesCli, CheckCudaReportsEveryPartAndTellsScriptsWhetherThereIsAGpu) {
  const auto r = run_nnperf("devices --check-cuda");
  for (const char* part :
       {"driver: ", "\nCUDA runtime: ", "\ncuDNN: ", "\ncuBLAS: ", "\nNVML: ", "\ndevices: "}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << "missing " << part << " in:\n" << r.out;
  }
  if (r.exit_code == 0) {  // a machine with a GPU
    EXPECT_NE(r.out.find("  [0] "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" SMs, "), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
    return;
  }
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.out.find("\ndevices: none: "), std::string::npos) << r.out;
  // Exactly one line on stderr, with the reason (here: the driver library is not installed, or it
  // sees no device).
  EXPECT_EQ(r.err.rfind("nnperf: error: no CUDA device: ", 0), 0u) << r.err;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_GT(r.err.size(), std::string("nnperf: error: no CUDA device: \n").size()) << r.err;
}

TEST(DevicesCli, HelpDocumentsTheExitCode) {
  const auto r = run_nnperf("devices --help");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--check-cuda"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no CUDA"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nnperf
