// `nnperf profile` and `nnperf status` end to end on small inputs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "nnperf/gpu/cuda.h"
#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/runs/profile_outputs.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::run_nnperf;
using test::TempDir;

const char* kFast = "--stage sanity --threads 1 --progress lines";

// --pass train: training steps timed whole and per layer (forward + backward), the loss and the
// SGD update as rows of their own, each convolution's backward rows named; a sweep of the other
// pass cannot resume it; BN folding is refused for training.
TEST(ProfileCli, TrainPassTimesLayersLossAndUpdate) {
  TempDir dir;
  auto r =
      run_nnperf(fmt::format("profile --model resnet18 --pass train {} --sizes 16 --batch-size 4 "
                             "--output-dir '{}'",
                             kFast, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const CsvTable l = read_csv(dir / "resnet18_guess_layers.csv");
  std::map<std::string, std::size_t> row;
  for (std::size_t i = 0; i < l.rows.size(); ++i) row[l.cell(i, l.require("layer"))] = i;
  ASSERT_TRUE(row.count("loss") && row.count("optimizer") && row.count("conv1"));
  EXPECT_EQ(l.cell(row["optimizer"], l.require("layer_type")), "SGD");
  EXPECT_GT(l.number(row["optimizer"], l.require("mean_ms")), 0.0);
  EXPECT_NE(l.cell(row["conv1"], l.require("backward_data_algorithm")), "");
  EXPECT_NE(l.cell(row["conv1"], l.require("backward_weights_algorithm")), "");
  const std::string trace = test::read_text(dir / "resnet18_guess_trace_16.json");
  EXPECT_NE(trace.find("conv1.backward"), std::string::npos);
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 16,20 --batch-size 4 --resume --output-dir '{}'", kFast,
      dir.path().string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("pass"), std::string::npos) << r.err;
  r = run_nnperf(
      fmt::format("profile --model resnet18 --pass train --fold-bn {} --sizes 16 --output-dir '{}'",
                  kFast, (dir / "x").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--fold-bn"), std::string::npos) << r.err;
}

TEST(ProfileCli, SweepWritesSeedColumnsLayersAndTrace) {
  TempDir dir;
  const auto r = run_nnperf(
      fmt::format("profile --model resnet18 --algorithm gemm {} --sizes 32,40 --output-dir '{}'",
                  kFast, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const CsvTable o = read_csv(dir / "resnet18_gemm_overall.csv");
  const std::vector<std::string> seed_cols{
      "model",        "algorithm",   "batch_size",  "input_size",     "mean",
      "std",          "min",         "max",         "median",         "power_mean_w",
      "power_std_w",  "power_min_w", "power_max_w", "energy_total_j", "energy_per_inference_j",
      "power_samples"};
  ASSERT_GE(o.header.size(), seed_cols.size());
  EXPECT_TRUE(std::equal(seed_cols.begin(), seed_cols.end(), o.header.begin()));
  ASSERT_EQ(o.rows.size(), 2u);
  EXPECT_EQ(o.rows[0][3], "32");
  EXPECT_EQ(o.rows[1][3], "40");
  EXPECT_GT(std::stod(o.rows[0][8]), 0.0);
  const auto run = nlohmann::json::parse(test::read_text(dir / "run.json"));
  if (!run["power"]["available"].get<bool>()) {
    EXPECT_EQ(o.rows[0][9], "");   // no made-up power
    EXPECT_EQ(o.rows[0][13], "");  // nor energy
    EXPECT_TRUE(run["power"].contains("note"));
  }
  const CsvTable l = read_csv(dir / "resnet18_gemm_layers.csv");
  EXPECT_EQ(l.header[3], "layer");
  std::map<std::string, double> pct;
  int convs = 0;
  for (const auto& row : l.rows) {
    pct[row[2]] += std::stod(row[static_cast<std::size_t>(l.column("percentage"))]);
    if (row[static_cast<std::size_t>(l.column("is_conv"))] == "yes") {
      ++convs;
      EXPECT_EQ(row[static_cast<std::size_t>(l.column("algorithm_used"))], "gemm");
      EXPECT_FALSE(row[static_cast<std::size_t>(l.column("problem"))].empty());
    }
  }
  EXPECT_EQ(convs, 2 * 20);  // resnet18: 20 convolutions (17 3x3/7x7 + 3 downsample 1x1), two sizes
  EXPECT_NEAR(pct["32"], 100.0, 0.01);
  EXPECT_NEAR(pct["40"], 100.0, 0.01);
  const auto trace = nlohmann::json::parse(test::read_text(dir / "resnet18_gemm_trace_32.json"));
  EXPECT_GT(trace["traceEvents"].size(), 20u);
}

TEST(ProfileCli, ResumeNeverDuplicatesAndRefusesToClobber) {
  TempDir dir;
  auto r =
      run_nnperf(fmt::format("profile --model resnet18 {} --sizes 32 --no-layers --output-dir '{}'",
                             kFast, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(
      fmt::format("profile --model resnet18 {} --sizes 32,40 --no-layers --output-dir '{}'", kFast,
                  dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32,40 --no-layers --resume --output-dir '{}'", kFast,
      dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 already done"), std::string::npos) << r.out;
  const CsvTable o = read_csv(dir / "resnet18_guess_overall.csv");
  ASSERT_EQ(o.rows.size(), 2u);
  EXPECT_EQ(o.rows[0][3], "32");
  EXPECT_EQ(o.rows[1][3], "40");
  // The records hold both sizes too, and render the same overall CSV.
  const auto records = profile_sweep::read_profile_records(dir / "profile_records.jsonl");
  ASSERT_EQ(records["records"].size(), 2u);
  EXPECT_EQ(records["records"][0]["size"], 32);
  EXPECT_EQ(records["records"][1]["size"], 40);
  const std::string overall = test::read_text(dir / "resnet18_guess_overall.csv");
  fs::remove(dir / "resnet18_guess_overall.csv");
  ASSERT_EQ(run_nnperf(fmt::format("report '{}'", dir.path().string())).exit_code, 0);
  EXPECT_EQ(test::read_text(dir / "resnet18_guess_overall.csv"), overall);
  const auto st = run_nnperf(fmt::format("status '{}'", dir.path().string()));
  ASSERT_EQ(st.exit_code, 0);
  EXPECT_NE(st.out.find("complete"), std::string::npos) << st.out;
  // A corrupt state file is refused with its name.
  std::ofstream(dir / "resnet18_guess_overall.csv") << "not,a,sweep\n1,2,3\n";
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32,40 --no-layers --resume --output-dir '{}'", kFast,
      dir.path().string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot resume"), std::string::npos) << r.err;
}

// A sweep resumed without the records of its first sizes (begun by an nnperf from before the
// records were kept): its records list those sizes, and nnperf report never renders the CSVs
// from records that lack them.
TEST(ProfileCli, RecordsThatLackResumedSizesAreNotRenderedFrom) {
  TempDir dir;
  auto r =
      run_nnperf(fmt::format("profile --model resnet18 {} --sizes 32 --no-layers --output-dir '{}'",
                             kFast, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::remove(dir / "profile_records.jsonl");
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32,40 --no-layers --resume --output-dir '{}'", kFast,
      dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto records = profile_sweep::read_profile_records(dir / "profile_records.jsonl");
  ASSERT_EQ(records["records"].size(), 1u);
  EXPECT_EQ(records["records"][0]["size"], 40);
  EXPECT_EQ(records["sizes_without_records"], nlohmann::json::array({32}));
  fs::remove(dir / "resnet18_guess_layers.csv");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("it lacks the records of sizes [32]"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "resnet18_guess_layers.csv"));
  EXPECT_EQ(read_csv(dir / "resnet18_guess_overall.csv").rows.size(), 2u);
  // Unreadable records do not stop a resume (the CSVs are its state): replaced, sizes listed.
  write_file_atomic(dir / "profile_records.jsonl", "{\n");
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32,40,48 --no-layers --resume --output-dir '{}'", kFast,
      dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("profile_records.jsonl: unreadable"), std::string::npos) << r.err;
  const auto again = profile_sweep::read_profile_records(dir / "profile_records.jsonl");
  ASSERT_EQ(again["records"].size(), 1u);
  EXPECT_EQ(again["records"][0]["size"], 48);
  EXPECT_EQ(again["sizes_without_records"], nlohmann::json::array({32, 40}));
}

// The records grow a line per size. A last line cut by a crash is left out by a resume (its size
// listed as without a record, as its CSV rows were written first) and refused by nnperf report;
// an earlier nnperf's profile_records.json is read by both and carried over by a resume.
TEST(ProfileCli, RecordsAreALinePerSizeCutLinesAndEarlierFilesAreRead) {
  TempDir dir;
  auto r = run_nnperf(
      fmt::format("profile --model resnet18 {} --sizes 32,40 --no-layers --output-dir '{}'", kFast,
                  dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const fs::path lines = dir / "profile_records.jsonl";
  std::string text = test::read_text(lines);
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;  // context, 32, 40
  const nlohmann::json doc = profile_sweep::read_profile_records(lines);
  // As an earlier nnperf wrote it: one document; nnperf report renders from it as well.
  fs::remove(lines);
  write_file_atomic(dir / "profile_records.json", doc.dump(4) + "\n");
  const std::string overall = test::read_text(dir / "resnet18_guess_overall.csv");
  fs::remove(dir / "resnet18_guess_overall.csv");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("from " + (dir / "profile_records.json").string()), std::string::npos)
      << r.out;
  EXPECT_EQ(test::read_text(dir / "resnet18_guess_overall.csv"), overall);
  // A resume carries it over into the lines file, and leaves one record file.
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32,40,48 --no-layers --resume --output-dir '{}'", kFast,
      dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(fs::exists(dir / "profile_records.json"));
  const nlohmann::json three = profile_sweep::read_profile_records(lines);
  ASSERT_EQ(three["records"].size(), 3u);
  EXPECT_EQ(three["records"][0], doc["records"][0]);
  EXPECT_EQ(three["records"][2]["size"], 48);
  EXPECT_FALSE(three.contains("sizes_without_records"));
  // Killed while appending 48's record: the line is cut. A complete folder is left alone.
  text = test::read_text(lines);
  write_file_atomic(lines, text.substr(0, text.size() - 20));
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("not rebuilt"), std::string::npos) << r.out;
  fs::remove(dir / "resnet18_guess_layers.csv");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("its last line is cut"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "resnet18_guess_layers.csv"));
  bool cut = false;
  EXPECT_EQ(profile_sweep::read_profile_records(lines, &cut)["records"].size(), 2u);
  EXPECT_TRUE(cut);
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32,40,48,56 --no-layers --resume --output-dir '{}'",
      kFast, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("its last line was cut"), std::string::npos) << r.err;
  const nlohmann::json four = profile_sweep::read_profile_records(lines, &cut);
  EXPECT_FALSE(cut);
  ASSERT_EQ(four["records"].size(), 3u);
  EXPECT_EQ(four["records"][2]["size"], 56);
  EXPECT_EQ(four["sizes_without_records"], nlohmann::json::array({48}));
  // An earlier file left beside the lines file is not read: the lines file replaced it.
  write_file_atomic(dir / "profile_records.json", doc.dump(4) + "\n");
  fs::remove(dir / "resnet18_guess_layers.csv");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string legacy = (dir / "profile_records.json").string();
  EXPECT_EQ(r.out.find(legacy + ":"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(legacy + "\n"), std::string::npos) << r.out;
  EXPECT_NE(
      r.out.find("not rebuilt from " + lines.string() + ": it lacks the records of sizes [48]"),
      std::string::npos)
      << r.out;
}

TEST(ProfileCli, StrictRefusesAnUnservableLayerElseFallsBackAndSaysSo) {
  TempDir dir;
  auto r = run_nnperf(fmt::format(
      "profile --model resnet18 --algorithm winograd --strict {} --sizes 32 --output-dir '{}'",
      kFast, (dir / "strict").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("winograd"), std::string::npos) << r.err;
  r = run_nnperf(
      fmt::format("profile --model resnet18 --algorithm winograd {} --sizes 32 --output-dir '{}'",
                  kFast, (dir / "fallback").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable l = read_csv(dir / "fallback" / "resnet18_winograd_layers.csv");
  int fallbacks = 0, winograd = 0;
  for (const auto& row : l.rows) {
    if (!row[static_cast<std::size_t>(l.column("fallback_reason"))].empty()) ++fallbacks;
    if (row[static_cast<std::size_t>(l.column("algorithm_used"))] == "winograd") ++winograd;
  }
  EXPECT_GT(fallbacks, 0);  // the 7x7 stem, the stride-2 and 1x1 convolutions
  EXPECT_GT(winograd, 0);   // the 3x3 stride-1 convolutions
}

TEST(ProfileCli, BadInputIsRefusedWithTheValidChoices) {
  TempDir dir;
  auto r = run_nnperf(
      fmt::format("profile --model lenet {} --output-dir '{}'", kFast, dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("resnet50"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format("profile --model vgg16 --algorithm turbo {} --output-dir '{}'", kFast,
                             dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("implicit_precomp_gemm"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format("profile --model alexnet {} --sizes 32 --output-dir '{}'", kFast,
                             dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("alexnet needs at least"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format(
      "profile --model resnet18 {} --sizes 32 --output-dir /proc/nnperf-cannot-write", kFast));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/proc/nnperf-cannot-write"), std::string::npos) << r.err;
  r = run_nnperf("profile --stage huge");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "nnperf: error: --stage 'huge': expected sanity, quick or full\n");
  r = run_nnperf(
      fmt::format("profile --model resnet18 {} --sizes 32 --launch graph --output-dir '{}'", kFast,
                  (dir.path() / "never").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--launch: applies to --device cuda only"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "never"));
  // --engines adds candidates to cuDNN's find: refused on the CPU and with a named algorithm,
  // before anything is written (and before a device is looked for).
  for (const char* args :
       {"--algorithm find --engines", "--device cuda --algorithm guess --engines",
        "--device cuda --algorithm implicit_gemm --engines"}) {
    r = run_nnperf(fmt::format("profile --model resnet18 {} --sizes 32 {} --output-dir '{}'", kFast,
                               args, (dir.path() / "never").string()));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_EQ(r.err,
              "nnperf: error: --engines: adds cuDNN's graph-API engines to find's candidates; it "
              "needs --device cuda and --algorithm find\n")
        << args;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "never"));
  }
  // find in any case is find: --engines is accepted, and without a GPU the device is what fails.
  r = run_nnperf(
      fmt::format("profile --model resnet18 {} --sizes 32 --device cuda --algorithm FIND --engines "
                  "--output-dir '{}'",
                  kFast, (dir.path() / "never").string()));
  EXPECT_EQ(r.err.find("--engines"), std::string::npos) << r.err;
  if (!cuda::available()) {
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--device cuda"), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir.path() / "never"));
  }
}

TEST(ProfileCli, ListsModelsWithParameterCountsAndAlgorithms) {
  auto r = run_nnperf("profile --list-models");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("25557032"), std::string::npos);   // resnet50
  EXPECT_NE(r.out.find("138357544"), std::string::npos);  // vgg16
  r = run_nnperf("profile --list-algorithms");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("find"), std::string::npos);
  EXPECT_NE(r.out.find("no: "), std::string::npos);
}

}  // namespace
}  // namespace nnperf
