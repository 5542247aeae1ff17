// `nnperf verify conv2d` and `nnperf bench conv2d` end to end.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

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
  EXPECT_EQ(r.err, "nnperf: error: verify 'matmul': expected conv2d\n");
}

TEST(ConvCli, BenchWritesRecordsForSupportedAlgorithms) {
  test::TempDir dir;
  const auto r =
      run_nnperf(fmt::format("bench conv2d --problem mb1ic8ih12oc8kh3ph1 --warmup 1 --measure 3 "
                             "--peak-gflops 100 --json '{}'",
                             (dir / "b.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = nlohmann::json::parse(test::read_text(dir / "b.json"));
  ASSERT_TRUE(j.contains("context"));
  int ok = 0;
  for (const auto& rec : j["records"]) {
    EXPECT_EQ(rec["problem"], "mb1ic8ih12oc8kh3ph1");
    if (rec["status"] == "ok") {
      ++ok;
      for (const char* k :
           {"algorithm", "time_ms_median", "time_ms_min", "time_ms_max", "gflops_per_s"}) {
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
      {"backward-data",
       {"gemm", "gemm_batched", "transposed_forward", "gemm_tiled", "gemm_live_taps"}},
      {"backward-weights",
       {"gemm", "gemm_batched", "winograd_nonfused", "gemm_tiled", "gemm_live_taps"}}};
  for (const auto& [pass, names] : rows) {
    const fs::path json = dir / (pass + ".json");
    const auto r = run_nnperf(
        fmt::format("bench conv2d --problem mb2ic8ih9oc8kh3sh2ph1 --pass {} --warmup 1 --measure 2 "
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
        // stride 2: dX is no stride-1 convolution of dY, and F(3x3, 2x2) tiles stride 1 only
        EXPECT_EQ(rec["algorithm"],
                  pass == "backward-data" ? "transposed_forward" : "winograd_nonfused");
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

// Each row carries the cost guess ranks it by; the context names the fastest row and how much
// slower guess's ran; --training times forward rows with their weight transform and makes guess
// count it; a problem whose dead taps guess crops names the problem its layers run.
TEST(ConvCli, BenchSetsGuessBesideTheFastestRowAndTheModelledCosts) {
  test::TempDir dir;
  const auto run = [&](const std::string& args, const std::string& name) {
    const fs::path json = dir / name;
    const auto r =
        run_nnperf(fmt::format("bench conv2d {} --warmup 1 --measure 2 "
                               "--peak-gflops 100 --json '{}'",
                               args, json.string()));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return std::make_pair(r, nlohmann::json::parse(test::read_text(json)));
  };
  for (const char* training : {"", " --training"}) {
    const auto [r, j] = run(std::string("--problem mb2ic16ih8oc16kh3ph1") + training, "f.json");
    const auto& ctx = j["context"];
    EXPECT_EQ(ctx["training"], *training != 0);
    EXPECT_EQ(r.out.find("with the weight transform of a training step") != std::string::npos,
              *training != 0)
        << r.out;
    double fastest = 1e30, guessed = -1;
    std::string fastest_name;
    for (const auto& rec : j["records"]) {
      if (rec["status"] != "ok") continue;
      EXPECT_GT(rec["modelled_ms"].get<double>(), 0.0) << rec.dump();
      const double ms = rec["time_ms_median"].get<double>();
      if (ms < fastest) fastest = ms, fastest_name = rec["algorithm"].get<std::string>();
      if (rec["algorithm"] == ctx["guess"]) guessed = ms;
    }
    ASSERT_GT(guessed, 0.0) << ctx.dump();
    EXPECT_EQ(ctx["fastest"], fastest_name);
    EXPECT_DOUBLE_EQ(ctx["guess_over_fastest"].get<double>(), guessed / fastest);
    EXPECT_NE(r.out.find("fastest: " + fastest_name + "; guess took "), std::string::npos) << r.out;
    EXPECT_FALSE(ctx.contains("layers_run_as"));
  }
  const auto [r, j] = run("--problem mb2ic16ih1oc16kh3ph1 --pass backward-weights", "c.json");
  EXPECT_EQ(j["context"]["layers_run_as"], "mb2ic16ih1oc16kh1");
  EXPECT_NE(r.out.find("runs mb2ic16ih1oc16kh1 under guess or find"), std::string::npos) << r.out;
  for (const char* bad :
       {"gemm --problem m8n8k8", "conv2d --problem mb1ic8ih8oc8kh3 --pass backward-data",
        "batchnorm --problem mb2c3h5"}) {
    const auto b = run_nnperf(fmt::format("bench {} --training", bad));
    EXPECT_EQ(b.exit_code, 2) << bad;
    EXPECT_EQ(b.err,
              "nnperf: error: --training: applies to bench conv2d --pass forward on the CPU only\n")
        << bad;
  }
}

}  // namespace
}  // namespace nnperf
