// `nnperf complexity` end to end: the table, the JSON records and the CSV rendered from them,
// layer names equal to profile's layers CSV, training and optimizer fields, the roofline
// project's summary.json, and every refused flag value (exit 2, one line naming the flag).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "nnperf/io/csv.h"
#include "test_util.h"

namespace nnperf {
namespace {

using test::run_nnperf;
using test::TempDir;

int count_lines(const std::string& s) {
  return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

TEST(ComplexityCli, TableJsonAndCsvFromTheSameRecords) {
  TempDir dir;
  const auto r = run_nnperf(fmt::format("complexity --model resnet50 --json '{}' --csv '{}'",
                                        (dir / "c.json").string(), (dir / "c.csv").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The convention once, at the top; torchinfo's totals at the bottom.
  EXPECT_EQ(r.out.find("Counting convention"), 0u) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("FLOPs = 2 x MACs"), std::string::npos);
  EXPECT_NE(r.out.find("Total params: 25,557,032"), std::string::npos);
  EXPECT_NE(r.out.find("Total mult-adds (G): 4.09"), std::string::npos);
  EXPECT_NE(r.out.find("Forward/backward pass size (MB): 177.83"), std::string::npos);
  EXPECT_NE(r.out.find("Params size (MB): 102.23"), std::string::npos);

  const auto doc = nlohmann::json::parse(test::read_text(dir / "c.json"));
  const auto& ctx = doc.at("context");
  EXPECT_EQ(ctx.at("model"), "resnet50");
  EXPECT_EQ(ctx.at("input_shape"), nlohmann::json({1, 3, 224, 224}));
  EXPECT_TRUE(ctx.contains("machine"));  // the run context
  EXPECT_TRUE(ctx.contains("command"));
  EXPECT_EQ(ctx.at("totals").at("params"), 25557032);
  EXPECT_NEAR(ctx.at("totals").at("macs_per_sample_forward").get<double>(), 4.089e9,
              0.005 * 4.089e9);
  const auto& records = doc.at("records");
  const CsvTable csv = read_csv(dir / "c.csv");
  ASSERT_EQ(csv.rows.size(), records.size());
  for (const char* col : {"layer", "layer_type", "input_shape", "output_shape", "params", "macs",
                          "flops", "bytes", "intensity_flops_per_byte"}) {
    EXPECT_GE(csv.column(col), 0) << col;
  }
  double macs = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(csv.rows[i][static_cast<std::size_t>(csv.column("layer"))], records[i].at("layer"));
    macs += std::stod(csv.rows[i][static_cast<std::size_t>(csv.column("macs"))]);
    EXPECT_NE(r.out.find(records[i].at("layer").get<std::string>()), std::string::npos);
  }
  EXPECT_DOUBLE_EQ(macs, ctx.at("totals").at("macs_per_batch_forward").get<double>());
}

TEST(ComplexityCli, LayerNamesAreProfilesLayerNames) {
  TempDir dir;
  auto r =
      run_nnperf(fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --threads 1 "
                             "--progress quiet --sizes 32 "
                             "--output-dir '{}'",
                             dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format("complexity --model resnet18 --input-size 32 --csv '{}'",
                             (dir / "c.csv").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable profile = read_csv(dir / "resnet18_gemm_layers.csv");
  const CsvTable c = read_csv(dir / "c.csv");
  std::set<std::pair<std::string, std::string>> from_profile, from_complexity;
  for (const auto& row : profile.rows) {
    from_profile.insert({row[static_cast<std::size_t>(profile.column("layer"))],
                         row[static_cast<std::size_t>(profile.column("layer_type"))]});
  }
  for (const auto& row : c.rows) {
    from_complexity.insert({row[static_cast<std::size_t>(c.column("layer"))],
                            row[static_cast<std::size_t>(c.column("layer_type"))]});
  }
  EXPECT_EQ(from_complexity, from_profile);
  EXPECT_EQ(c.rows.size(), from_complexity.size());  // one row per layer
}

TEST(ComplexityCli, TrainingCountsBackwardAndTheOptimizer) {
  TempDir dir;
  const auto r =
      run_nnperf(fmt::format("complexity --model mlp --hidden 64,32 --activation GELU --training "
                             "--optimizer adam --batch-size 8 --json '{}'",
                             (dir / "t.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("bwd data FLOPs"), std::string::npos);
  const auto doc = nlohmann::json::parse(test::read_text(dir / "t.json"));
  EXPECT_EQ(doc["context"]["optimizer"], "adam");
  const auto& rec = doc["records"];
  ASSERT_EQ(rec.size(), 6u);  // flatten fc1 act1 fc2 act2 fc3
  EXPECT_EQ(rec[1]["layer"], "fc1");
  EXPECT_EQ(rec[1]["flops_backward_data"].get<double>(), 0.0);  // the first Linear
  EXPECT_EQ(rec[1]["flops_backward_weights"].get<double>(), 2.0 * 8 * 784 * 64 + 8 * 64);
  EXPECT_EQ(rec[3]["flops_backward_data"].get<double>(), 2.0 * 8 * 64 * 32);
  EXPECT_EQ(rec[2]["flops_backward_data"].get<double>(), 11.0 * 8 * 64);  // GELU backward
  EXPECT_EQ(rec[1]["optimizer_bytes"].get<double>(), 28.0 * (784 * 64 + 64));
  const int64_t params = doc["context"]["totals"]["params"].get<int64_t>();
  EXPECT_EQ(params, 784 * 64 + 64 + 64 * 32 + 32 + 32 * 10 + 10);
  EXPECT_EQ(doc["context"]["totals"]["optimizer_bytes"].get<double>(),
            28.0 * static_cast<double>(params));
}

// The roofline project's (JcxaL/cloudml-project1) summary.json layout and figures.
TEST(ComplexityCli, SummaryJsonForSeveralModelsAndBatchSizes) {
  TempDir dir;
  const auto r = run_nnperf(
      fmt::format("complexity --models resnet50,vgg16,mobilenet_v2 --batch-sizes 16,32,64,128 "
                  "--summary-json '{}'",
                  (dir / "summary.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("GMACs/sample"), std::string::npos);
  const auto s = nlohmann::json::parse(test::read_text(dir / "summary.json"));
  ASSERT_EQ(s.size(), 3u);
  for (const auto& [model, per_sample] : std::map<std::string, double>{
           {"resnet50", 4089238376.0}, {"vgg16", 15483821032.0}, {"mobilenet_v2", 300809384.0}}) {
    ASSERT_EQ(s[model].size(), 4u) << model;
    for (int b : {16, 32, 64, 128}) {
      const auto& e = s[model][std::to_string(b)];
      EXPECT_EQ(e["mult_adds_per_sample_forward"].get<double>(), per_sample) << model;
      EXPECT_EQ(e["mult_adds_per_batch_forward"].get<double>(), per_sample * b) << model;
      EXPECT_EQ(e["flops_per_batch_forward"].get<double>(), 2 * per_sample * b) << model;
      EXPECT_TRUE(e.contains("params"));
      EXPECT_TRUE(e.contains("flops_per_sample_forward"));
    }
  }
  EXPECT_EQ(s["vgg16"]["64"]["params"], 138357544);
}

TEST(ComplexityCli, RefusesBadFlagsInOneLineNamingTheFlag) {
  TempDir dir;
  struct Case {
    std::string args, flag, expected;
  };
  const std::vector<Case> cases = {
      {"--model resnet50 --input-size nan", "--input-size", "[1, 65536]"},
      {"--model resnet50 --input-size -3", "--input-size", "[1, 65536]"},
      {"--model resnet50 --input-size 0", "--input-size", "[1, 65536]"},
      {"--model resnet50 --input-size 65537", "--input-size", "[1, 65536]"},
      {"--model resnet50 --input-size 2.5", "--input-size", "[1, 65536]"},
      {"--model vgg16 --input-size 31", "--input-size", "at least 32"},
      {"--model densenet121 --input-size 28", "--input-size", "at least 29"},
      {"--model resnet50 --batch-size nan", "--batch-size", "[1, 16777216]"},
      {"--model resnet50 --batch-size -1", "--batch-size", "[1, 16777216]"},
      {"--model resnet50 --batch-size 16777217", "--batch-size", "[1, 16777216]"},
      {"--models resnet50 --batch-sizes 16,0", "--batch-sizes", "[1, 16777216]"},
      {"--model nosuchnet", "--model", "expected one of"},
      {"", "--model", "expected one of"},
      {"--model resnet50 --optimizer adam", "--optimizer", "--training"},
      {"--model resnet50 --training --optimizer lion", "--optimizer", "sgd or adam"},
      {"--model resnet50 --training --fold-bn", "--fold-bn", "inference"},
      {"--model resnet50 --hidden 64", "--hidden", "mlp"},
      {"--models resnet50,vgg16 --json x.json", "--json", "--summary-json"},
      {"--model resnet50 --csv /no/such/folder/c.csv", "--csv", "does not exist"},
  };
  for (const Case& c : cases) {
    const auto r = run_nnperf("complexity " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    EXPECT_EQ(count_lines(r.err), 1) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << ": nothing computed before validation";
  }
  // The mlp's weights grow with its input: refused (exit 2) before anything is allocated.
  const auto r = run_nnperf("complexity --model mlp --input-size 65536");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("mlp"), std::string::npos) << r.err;
}

TEST(ComplexityCli, HelpUsesUsersWords) {
  const auto r = run_nnperf("complexity --help");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--summary-json"), std::string::npos);
  EXPECT_NE(r.out.find("JcxaL/cloudml-project1"), std::string::npos);
  std::string lower = r.out;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char ch) { return std::tolower(ch); });
  EXPECT_EQ(lower.find("seed"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace nnperf
