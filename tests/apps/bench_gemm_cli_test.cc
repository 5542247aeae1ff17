// `nnperf bench gemm` end to end: the CPU rows with their ratio to OpenBLAS and their difference
// from its result; the GPU rows (GEMM and cuDNN's conv) refused in one line where no CUDA device is
// usable; bad problems.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "nnperf/gpu/cuda.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;

TEST(BenchGemmCli, TimesEveryCpuRowAgainstOpenBlas) {
  const auto r =
      run_nnperf("bench gemm --problem m67n45k129_ta --measure 2 --warmup 1 --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("problem m67n45k129_ta (0.001 GFLOP) on the cpu, vendor blas"),
            std::string::npos)
      << r.out;
  for (const char* row : {"\nnaive ", "\nparallel ", "\nblocked ", "\nblas "}) {
    EXPECT_NE(r.out.find(row), std::string::npos) << row << r.out;
  }
  EXPECT_EQ(r.out.find("\ncublas"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.00x"), std::string::npos) << r.out;  // blas against itself
}

TEST(BenchGemmCli, RefusesGpuRowsOnTheCpuAndBadProblems) {
  auto r = run_nnperf("bench gemm --problem m8n8k8 --algorithms cublas");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(
      r.err,
      "nnperf: error: --algorithms: GEMM algorithm 'cublas' runs on the cuda device, this run "
      "on the cpu; expected one of: naive, parallel, blocked, blas\n");
  for (const char* bad : {"m0n8k8", "m8n8", "m8n8k8_tx", "8x8x8", "m-1n2k3"}) {
    r = run_nnperf(std::string("bench gemm --problem ") + bad);
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--problem '" + std::string(bad) + "': expected mMnNkK"),
              std::string::npos)
        << r.err;
  }
  // --peak-gflops feeds conv2d's %peak column on the CPU; the GEMM rows have none.
  r = run_nnperf("bench gemm --problem m8n8k8 --peak-gflops 100");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("nnperf: error: --peak-gflops: applies to bench conv2d on the CPU", 0), 0u)
      << r.err;
  r = run_nnperf("bench gemm --problem m1000000n1000000k1000000");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--problem m1000000n1000000k1000000 needs "), std::string::npos) << r.err;
}

TEST(BenchGemmCli, GpuRowsWithADeviceOrOneLineWhyNot) {
  const auto r = run_nnperf("bench gemm --problem m257n129k65 --device cuda --measure 2");
  if (cuda::available()) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("\ncuda "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("\ncublas "), std::string::npos) << r.out;
    return;
  }
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "nnperf: error: --device cuda: " + cuda::unavailable_reason() + "\n");
  EXPECT_EQ(r.out, "");
}

TEST(BenchGemmCli, Conv2dCudnnRowsWithADeviceOrOneLineWhyNot) {
  for (const char* pass : {"forward", "backward-data", "backward-weights"}) {
    SCOPED_TRACE(pass);
    const auto r = run_nnperf(fmt::format(
        "bench conv2d --problem mb2ic6ih9oc10kh3ph1 --device cuda --measure 3 --pass {}", pass));
    if (!cuda::available()) {
      EXPECT_EQ(r.exit_code, 2);
      EXPECT_EQ(r.err, "nnperf: error: --device cuda: " + cuda::unavailable_reason() + "\n");
      continue;
    }
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(fmt::format("), {}, ", pass)), std::string::npos) << r.out;
    // implicit_gemm (forward) and algo_1 (both backward passes) serve every problem.
    const char* row = std::string(pass) == "forward" ? "\nimplicit_gemm " : "\nalgo_1 ";
    EXPECT_NE(r.out.find(row), std::string::npos) << r.out;
  }
}

// --engines adds cuDNN's graph-API engine plans of the pass as rows (checked and timed like the
// legacy algorithms, as graphs with --launch graph); refused in one line on the CPU.
TEST(BenchGemmCli, Conv2dEnginesRowsOrOneLineWhyNot) {
  auto r = run_nnperf("bench conv2d --problem mb1ic4ih6oc4kh3 --engines");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "nnperf: error: --engines: applies to bench conv2d --device cuda only\n");
  r = run_nnperf("bench conv2d --problem mb1ic4ih6oc4kh3 --launch graph");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--launch: applies to bench conv2d --device cuda only"), std::string::npos)
      << r.err;
  // The CPU refusals above ran; the engine rows need a device.
  if (!cuda::available()) GTEST_SKIP() << cuda::unavailable_reason();
  for (const char* pass : {"forward", "backward-data", "backward-weights"}) {
    for (const char* launch : {"eager", "graph"}) {
      SCOPED_TRACE(fmt::format("{} {}", pass, launch));
      r = run_nnperf(
          fmt::format("bench conv2d --problem mb2ic6ih9oc10kh3ph1 --device cuda --engines "
                      "--pass {} --launch {} --measure 3",
                      pass, launch));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("\nengine:"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("engine:none"), std::string::npos) << r.out;
    }
  }
}

}  // namespace
}  // namespace nnperf
