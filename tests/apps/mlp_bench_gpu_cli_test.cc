// `nnperf mlp-bench --device cuda` end to end: with a usable CUDA device the GPU rows (cuda,
// cublas) are timed beside the CPU ones and pass the accuracy-consistency check against blas;
// without one, a one-line refusal before any output folder is claimed.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "nnperf/gpu/cuda.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;

TEST(MlpBenchGpuCli, GpuRowsWithADeviceOrOneLineWhyNot) {
  test::TempDir dir;
  const std::filesystem::path out = dir.path() / "mb";
  const auto r = run_nnperf(fmt::format(
      "mlp-bench --device cuda --impls blas,cuda,cublas --batch-sizes 64,1024 --measure 3 "
      "--warmup 1 --consistency-steps 30 --overhead-reps 0 --synthetic --threads 1 --out-dir '{}'",
      out.string()));
  if (!cuda::available()) {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, "nnperf: error: --device cuda: " + cuda::unavailable_reason() + "\n");
    EXPECT_FALSE(std::filesystem::exists(out));
    return;
  }
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(test::read_text(out / "mlp_bench.json"));
  EXPECT_EQ(j["context"]["device"], "cuda");
  int gpu_records = 0;
  for (const auto& rec : j["records"]) {
    if (rec["device"] == "cuda") {
      ++gpu_records;
      EXPECT_GT(rec["time_ms_median"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(gpu_records, 8);  // 2 rows x 2 batch sizes x (train, forward)
  ASSERT_EQ(j["consistency"].size(), 3u);
  for (const auto& c : j["consistency"]) {
    EXPECT_TRUE(c["pass"].get<bool>()) << c.dump();
  }
  EXPECT_NE(r.out.find("GPU rows (cuda, cublas) ran on"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nnperf
