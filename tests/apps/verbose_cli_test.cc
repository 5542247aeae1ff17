// NNPERF_VERBOSE=exec end to end: `nnperf profile`, `nnperf train` and the activation study
// print one stderr line per layer per pass, with the template's column count, the layers CSV's
// values and a time.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "nnperf/io/csv.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::TempDir;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  if (!s.empty() && s.back() == sep) out.emplace_back();
  return out;
}

// The exec lines of a run's stderr, split into fields; also checks the template line.
std::vector<std::vector<std::string>> exec_lines(const std::string& err) {
  std::vector<std::vector<std::string>> lines;
  int templates = 0;
  std::size_t columns = 0;
  for (const std::string& line : split(err, '\n')) {
    if (line.rfind("nnperf_verbose,info,template:", 0) == 0) {
      ++templates;
      columns = split(line, ',').size();
      EXPECT_NE(line.find(",layer,layer_type,in_channels,out_channels,kernel_size,stride,padding,"
                          "algorithm_used,problem,time_ms"),
                std::string::npos)
          << line;
    }
    if (line.rfind("nnperf_verbose,exec,", 0) == 0) lines.push_back(split(line, ','));
  }
  EXPECT_EQ(templates, 1) << "one template line per process";
  EXPECT_EQ(columns, 16u);
  for (const auto& f : lines) {
    EXPECT_EQ(f.size(), columns) << fmt::format("{}", fmt::join(f, ","));
    if (f.size() != columns) continue;
    EXPECT_GE(std::stod(f[15]), 0.0);
  }
  return lines;
}

// Fields: 0 nnperf_verbose, 1 exec, 2 model, 3 algorithm, 4 input_size, 5 phase, 6 layer,
// 7 layer_type, 8 in_channels, 9 out_channels, 10 kernel_size, 11 stride, 12 padding,
// 13 algorithm_used, 14 problem, 15 time_ms.
TEST(VerboseCli, ExecLogsEveryLayerOfEveryProfilePassWithTheCsvColumns) {
  TempDir dir;
  const auto r = test::run_command(
      fmt::format("NNPERF_VERBOSE=exec '{}' profile --model resnet18 --algorithm gemm --stage "
                  "sanity --sizes 32 "
                  "--threads 1 --warmup 1 --measure 2 --progress quiet --output-dir '{}'",
                  NNPERF_BINARY, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable csv = read_csv(dir / "resnet18_gemm_layers.csv");
  const std::size_t layers = csv.rows.size();
  ASSERT_GT(layers, 20u);
  const auto lines = exec_lines(r.err);
  // Passes: 1 warm-up + 2 whole-model + 2 per-layer (--measure each), every one logged.
  constexpr std::size_t kPasses = 1 + 2 + 2;
  ASSERT_EQ(lines.size(), kPasses * layers);
  auto col = [&](const char* name) { return static_cast<std::size_t>(csv.column(name)); };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& f = lines[i];
    const auto& row = csv.rows[i % layers];  // pass after pass, in graph order
    ASSERT_EQ(f.size(), 16u);
    EXPECT_EQ(f[2], "resnet18");
    EXPECT_EQ(f[3], "gemm");
    EXPECT_EQ(f[4], "32");
    EXPECT_EQ(f[5], "forward");
    EXPECT_EQ(f[6], row[col("layer")]) << "line " << i;
    EXPECT_EQ(f[7], row[col("layer_type")]);
    EXPECT_EQ(f[8], row[col("in_channels")]);
    EXPECT_EQ(f[9], row[col("out_channels")]);
    EXPECT_EQ(f[10], row[col("kernel_size")]);
    EXPECT_EQ(f[11], row[col("stride")]);
    EXPECT_EQ(f[12], row[col("padding")]);
    if (row[col("is_conv")] == "yes") {
      EXPECT_EQ(f[13], "gemm");
      EXPECT_EQ(f[13], row[col("algorithm_used")]);
      EXPECT_EQ(f[14], row[col("problem")]);
    } else if (f[7] == "Linear") {  // the exec log adds the GEMM the CSV leaves out: "m1n1000k512"
      EXPECT_NE(f[13], "");
      EXPECT_EQ(f[14], fmt::format("m1n{}k{}", row[col("out_channels")], row[col("in_channels")]));
    } else {
      EXPECT_EQ(f[13], "");
      EXPECT_NE(f[14].find("->"), std::string::npos) << f[14];  // shapes "1x64x8x8->1x64x8x8"
    }
  }
}

TEST(VerboseCli, ExecLogsTrainingStepsBackwardPassesAndEvaluations) {
  TempDir dir;
  const auto r = test::run_command(fmt::format(
      "NNPERF_VERBOSE=exec '{}' train --synthetic --hidden 32,16 --batch-size 32 --threads 1 "
      "--progress quiet --val-split 500 --limit-test 300 --limit-train 320 --epochs 1 "
      "--impl blocked --out-dir '{}'",
      NNPERF_BINARY, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = exec_lines(r.err);
  // The MLP: fc1, act1, fc2, act2, fc3 (the batches arrive flattened: no Flatten node).
  constexpr std::size_t kLayers = 5;
  ASSERT_EQ(lines.size() % kLayers, 0u) << lines.size();
  int train_forward = 0, backward = 0;
  int64_t eval_samples = 0;
  for (std::size_t pass = 0; pass < lines.size() / kLayers; ++pass) {
    const auto& first = lines[pass * kLayers];
    ASSERT_EQ(first.size(), 16u);
    const bool fwd = first[5] == "forward";
    for (std::size_t j = 0; j < kLayers; ++j) {
      const auto& f = lines[pass * kLayers + j];
      ASSERT_EQ(f.size(), 16u);
      EXPECT_EQ(f[2], "mlp");
      EXPECT_EQ(f[3], "blocked");
      EXPECT_EQ(f[5], first[5]) << "a pass mixes phases";
      // Forward in graph order, backward in reverse: fc1 is first / last.
      const std::size_t node = fwd ? j : kLayers - 1 - j;
      EXPECT_EQ(f[6], node % 2 == 0 ? fmt::format("fc{}", node / 2 + 1)
                                    : fmt::format("act{}", node / 2 + 1))
          << "pass " << pass;
      if (f[7] == "Linear") {
        EXPECT_EQ(f[13], "blocked");
      }
    }
    if (!fwd) {
      ++backward;
      continue;
    }
    // The batch is the GEMM's m: "m32n32k784".
    const std::string& gemm = first[14];
    ASSERT_EQ(gemm[0], 'm') << gemm;
    const int64_t mb = std::stoll(gemm.substr(1, gemm.find('n') - 1));
    if (mb == 32 && pass + 1 < lines.size() / kLayers &&
        lines[(pass + 1) * kLayers][5] == "backward") {
      ++train_forward;
    } else {
      eval_samples += mb;
    }
  }
  EXPECT_EQ(train_forward, 10);  // 320 samples / 32 per step
  EXPECT_EQ(backward, 10);
  EXPECT_EQ(eval_samples, 500 + 300);  // validation, then test
}

TEST(VerboseCli, ExecLogsTheActivationStudy) {
  TempDir dir;
  const auto r = test::run_command(fmt::format(
      "NNPERF_VERBOSE=exec '{}' activations --quick --synthetic --hidden 32,16 --batch-size 32 "
      "--threads 1 --progress quiet --val-split 500 --limit-test 300 --limit-train 320 "
      "--activations relu,tanh --epochs 1 --warmup-epochs 0 --out-dir '{}'",
      NNPERF_BINARY, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = exec_lines(r.err);
  int backward = 0, activations = 0;
  for (const auto& f : lines) {
    ASSERT_EQ(f.size(), 16u);
    EXPECT_EQ(f[2], "mlp");
    backward += f[5] == "backward";
    activations += f[7] == "Activation";
  }
  // Two runs (ReLU, Tanh) of 10 steps each (320 samples / 32), 5 layers per backward pass;
  // the activation layers run forward and backward in every step and evaluation.
  EXPECT_EQ(backward, 2 * 10 * 5);
  EXPECT_EQ(lines.size() % 5, 0u);
  EXPECT_EQ(activations * 5, static_cast<int>(lines.size()) * 2);  // act1, act2 of 5 layers
}

}  // namespace
}  // namespace nnperf
