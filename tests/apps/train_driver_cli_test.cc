// `nnperf train --iters N`, the fixed-iteration driver (cloudml-project1's run_train.py): a CNN
// trained for exactly warm-up + N steps on synthetic data, the MEASURED_SEC line, and one row per
// run appended to <log-dir>/metrics.csv with run_train.py's 22 columns (header once; a file with
// another header refused and left as it is) and its record metrics_records.json, from which a lost
// metrics.csv is rebuilt; refused flag combinations name the flag.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>

#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/json_read.h"
#include "nnperf/runs/train_driver.h"
#include "test_util.h"

namespace nnperf {
namespace {

const char* kSmall =
    "--synthetic --iters 2 --warmup-iters 1 --batch-size 4 --input-size 32 --num-classes 10 "
    "--threads 1";

TEST(TrainDriverCli, CnnStepsMeasuredAndOneMetricsRowPerRun) {
  test::TempDir dir;
  const std::string logs = (dir / "logs").string();
  auto r = test::run_nnperf(
      fmt::format("train --arch resnet18 {} --label first --log-dir '{}'", kSmall, logs));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  double sec = 0, ips = 0;
  const auto at = r.out.find("MEASURED_SEC=");
  ASSERT_NE(at, std::string::npos) << r.out;
  ASSERT_EQ(std::sscanf(r.out.c_str() + at, "MEASURED_SEC=%lf IMGS_PER_SEC=%lf", &sec, &ips), 2)
      << r.out;
  EXPECT_GT(sec, 0);
  EXPECT_NEAR(ips, 8 / sec, 0.01 * ips + 0.01);  // 2 measured steps of 4 images
  EXPECT_NE(r.out.find("BATCH=4 ARCH=resnet18 BACKEND=cpu"), std::string::npos) << r.out;
  r = test::run_nnperf(
      fmt::format("train --model mobilenet_v2 {} --algorithm Find --label second --log-dir '{}'",
                  kSmall, logs));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable t = read_csv(dir / "logs" / "metrics.csv");
  const std::vector<std::string> header{
      "timestamp",     "hostname",       "arch",           "backend",        "device_name",
      "batch_size",    "warmup_iters",   "measured_iters", "precision",      "lr",
      "momentum",      "weight_decay",   "elapsed_sec",    "images_per_sec", "images_processed",
      "data_root",     "label",          "torch_version",  "channels_last",  "grad_accum_steps",
      "deterministic", "cudnn_benchmark"};
  EXPECT_EQ(t.header, header);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.cell(0, t.require("arch")), "resnet18");
  EXPECT_EQ(t.cell(1, t.require("arch")), "mobilenet_v2");
  EXPECT_EQ(t.cell(0, t.require("label")), "first");
  // cudnn_benchmark: whether every pass chose its algorithms by timing (--algorithm find, any
  // case), as torch.backends.cudnn.benchmark does.
  EXPECT_EQ(t.cell(0, t.require("cudnn_benchmark")), "false");
  EXPECT_EQ(t.cell(1, t.require("cudnn_benchmark")), "true");
  EXPECT_EQ(t.cell(0, t.require("warmup_iters")), "1");
  EXPECT_EQ(t.cell(0, t.require("measured_iters")), "2");
  EXPECT_EQ(t.cell(0, t.require("images_processed")), "8");
  EXPECT_EQ(t.cell(0, t.require("lr")), "0.1");  // run_train.py's defaults
  EXPECT_EQ(t.cell(0, t.require("weight_decay")), "0.0001");
  EXPECT_NEAR(t.number(0, t.require("elapsed_sec")), sec, 1e-6);
}

// --grad-accum-steps and --deterministic as run_train.py records them; two deterministic runs
// give the same loss to the last printed digit.
TEST(TrainDriverCli, GradAccumulationAndDeterminism) {
  test::TempDir dir;
  const std::string logs = (dir / "logs").string();
  std::string loss[2];
  for (int run = 0; run < 2; ++run) {
    const auto r = test::run_nnperf(
        fmt::format("train --model resnet18 {} --grad-accum-steps 2 --deterministic --log-dir '{}'",
                    kSmall, logs));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto at = r.out.find("loss after 3 steps: ");
    ASSERT_NE(at, std::string::npos) << r.out;
    loss[run] = r.out.substr(at, r.out.find('\n', at) - at);
  }
  EXPECT_EQ(loss[0], loss[1]);
  const CsvTable t = read_csv(dir / "logs" / "metrics.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.cell(0, t.require("grad_accum_steps")), "2");
  EXPECT_EQ(t.cell(0, t.require("deterministic")), "true");
  const auto r = test::run_nnperf(fmt::format(
      "train --model resnet18 {} --deterministic --algorithm FIND --log-dir '{}'", kSmall, logs));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--deterministic"), std::string::npos) << r.err;
}

TEST(TrainDriverCli, AnotherHeaderIsRefusedAndKept) {
  test::TempDir dir;
  std::filesystem::create_directories(dir / "logs");
  const std::string other = "a,b,c\n1,2,3\n";
  write_file_atomic(dir / "logs" / "metrics.csv", other);
  const auto r = test::run_nnperf(
      fmt::format("train --model resnet18 {} --log-dir '{}'", kSmall, (dir / "logs").string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("metrics.csv: cannot append"), std::string::npos) << r.err;
  EXPECT_EQ(test::read_text(dir / "logs" / "metrics.csv"), other);
}

// metrics_records.json keeps every run's row (and what else it was), takes in rows another program
// appended to metrics.csv in their place, and is what metrics.csv is rebuilt from: by the report
// when it is missing, and by the next run (which then appends its row).
TEST(TrainDriverCli, MetricsCsvIsRebuiltFromItsRecordWithRowsOthersAppended) {
  test::TempDir dir;
  const std::filesystem::path logs = dir / "logs";
  const auto train = [&](const char* label) {
    const auto r = test::run_nnperf(fmt::format(
        "train --model resnet18 {} --label {} --log-dir '{}'", kSmall, label, logs.string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  };
  train("first");
  // run_train.py's row: the same header, quoted fields.
  const std::string theirs =
      "2026-11-28T00:00:00Z,gpu1,resnet50,cuda,\"NVIDIA H100, 80GB\",128,5,50,fp32,0.1,0.9,"
      "0.0001,10.5,609.5,6400,/data,\"torch,run\",2.9.0,false,1,false,true\n";
  write_file_atomic(logs / "metrics.csv", test::read_text(logs / "metrics.csv") + theirs);
  train("second");
  const std::string csv = test::read_text(logs / "metrics.csv");
  const nlohmann::json doc = read_json(logs / "metrics_records.json");
  ASSERT_EQ(doc["records"].size(), 3u);
  EXPECT_EQ(doc["records"][0]["label"], "first");
  EXPECT_EQ(doc["records"][0]["nnperf"]["model"], "resnet18");
  EXPECT_EQ(doc["records"][0]["nnperf"]["threads"], 1);
  EXPECT_TRUE(doc["records"][0]["nnperf"]["final_loss"].is_number());
  EXPECT_EQ(doc["records"][1]["label"], "torch,run");
  EXPECT_EQ(doc["records"][1]["device_name"], "NVIDIA H100, 80GB");
  EXPECT_EQ(doc["records"][1]["source"], "metrics.csv");
  EXPECT_EQ(doc["records"][2]["label"], "second");

  std::filesystem::remove(logs / "metrics.csv");
  const auto rep = test::run_nnperf(
      fmt::format("report '{}' --out-dir '{}'", logs.string(), (dir / "report").string()));
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("rebuilt metrics.csv from"), std::string::npos) << rep.out;
  EXPECT_EQ(test::read_text(logs / "metrics.csv"), csv);

  std::filesystem::remove(logs / "metrics.csv");
  const auto third = test::run_nnperf(
      fmt::format("train --model resnet18 {} --label third --log-dir '{}'", kSmall, logs.string()));
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_NE(third.out.find("metrics.csv whole from metrics_records.json (4 rows"),
            std::string::npos)
      << third.out;
  const CsvTable t = read_csv(logs / "metrics.csv");
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(test::read_text(logs / "metrics.csv").substr(0, csv.size()), csv);
  EXPECT_EQ(t.cell(3, t.require("label")), "third");
  EXPECT_EQ(read_json(logs / "metrics_records.json")["records"].size(), 4u);

  // metrics.csv started again by run_train.py (its header, then its row): the row goes in after
  // the record's rows, which were written before it; the file gets the next row appended.
  const std::string header = csv.substr(0, csv.find('\n') + 1);
  std::string later = theirs;
  later.replace(0, 20, "2026-11-29T00:00:00Z");
  write_file_atomic(logs / "metrics.csv", header + later);
  train("fourth");
  const nlohmann::json after = read_json(logs / "metrics_records.json");
  std::vector<std::string> labels;
  for (const auto& e : after["records"]) labels.push_back(e["label"].get<std::string>());
  EXPECT_EQ(labels, (std::vector<std::string>{"first", "torch,run", "second", "third", "torch,run",
                                              "fourth"}));
  EXPECT_EQ(after["records"][4]["source"], "metrics.csv");
  EXPECT_EQ(read_csv(logs / "metrics.csv").rows.size(), 2u);
}

// Runs sharing a --log-dir add their rows one at a time: neither loses the other's entry.
TEST(TrainDriverCli, RunsSharingALogDirKeepEachOthersRecords) {
  test::TempDir dir;
  const std::filesystem::path logs = dir / "logs";
  const auto one = [&](const char* label) {
    return fmt::format("'{}' train --model resnet18 {} --label {} --log-dir '{}' > /dev/null",
                       NNPERF_BINARY, kSmall, label, logs.string());
  };
  const auto r =
      test::run_command(fmt::format("{} & {} & {} & wait", one("a"), one("b"), one("c")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = read_json(logs / "metrics_records.json");
  ASSERT_EQ(doc["records"].size(), 3u) << doc.dump(1);
  for (const auto& e : doc["records"]) EXPECT_TRUE(e.contains("nnperf")) << e.dump();
  EXPECT_EQ(read_csv(logs / "metrics.csv").rows.size(), 3u);
}

// A record that is not the driver's, or a metrics.csv whose rows do not parse, is refused before
// any step runs, and neither file is changed.
TEST(TrainDriverCli, AForeignRecordOrARaggedMetricsCsvIsRefusedBeforeTraining) {
  test::TempDir dir;
  struct Case {
    std::string file, text, expect;
  };
  std::string header;
  for (const auto& c : train_metrics_header()) header += (header.empty() ? "" : ",") + c;
  const std::vector<Case> cases{
      {"metrics_records.json", R"({"context": {"kind": "profile"}, "records": []})",
       "metrics_records.json: not the training driver's record of metrics.csv"},
      {"metrics_records.json", "{\"context\": ", "metrics_records.json"},
      {"metrics.csv", header + "\na,b\n", "metrics.csv:2: row has 2 fields"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const std::filesystem::path logs = dir / fmt::format("logs{}", i);
    std::filesystem::create_directories(logs);
    write_file_atomic(logs / cases[i].file, cases[i].text);
    const auto r = test::run_nnperf(
        fmt::format("train --model resnet18 {} --log-dir '{}'", kSmall, logs.string()));
    EXPECT_EQ(r.exit_code, 1) << cases[i].text;
    EXPECT_NE(r.err.find(cases[i].expect), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("MEASURED_SEC"), std::string::npos);
    EXPECT_EQ(test::read_text(logs / cases[i].file), cases[i].text);
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(logs),
                            std::filesystem::directory_iterator()),
              1);
  }
}

TEST(TrainDriverCli, RefusedCombinations) {
  test::TempDir dir;
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases{
      {"train --model resnet18 --iters 2", "--synthetic"},
      {"train --model vgg16 --synthetic --epochs 1 --hidden 4", "--hidden"},
      {fmt::format("train --model resnet18 {} --algorithm nosuch", kSmall), "nosuch"},
      {"train --model vgg16 --synthetic --iters 2 --input-size 8", "--input-size 8"},
      {"train --model nosuch --synthetic --iters 2", "nosuch"},
      {"train --model resnet18 --synthetic --iters -1", "--iters"},
      // Flags the driver does not read are refused, not ignored.
      {"train --model mlp --synthetic --iters 2 --hidden 5", "--hidden: not used by the --iters"},
      {"train --model mlp --synthetic --iters 2 --progress quiet", "--progress: not used"},
      {"train --model resnet18 --synthetic --iters 2 --on-bad-image skip", "--on-bad-image: not"},
  };
  for (const auto& c : cases) {
    const auto r =
        test::run_nnperf(fmt::format("{} --log-dir '{}'", c.args, (dir / "logs").string()));
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "logs" / "metrics.csv"));
}

// The parameters, gradients and optimizer state are checked against memory after the model is
// built (its weights still untouched zero pages) and before they are initialised: VGG16 with a
// million classes (4.2e9 parameters) is refused at once, naming --num-classes.
TEST(TrainDriverCli, AModelTooLargeForMemoryIsRefusedBeforeItsWeightsAreWritten) {
  test::TempDir dir;
  const test::ScopedEnv limit("NNPERF_MEMORY_LIMIT", "20G");
  const auto r = test::run_nnperf(
      fmt::format("train --model vgg16 --synthetic --iters 1 --batch-size 1 --num-classes 1000000 "
                  "--threads 1 --log-dir '{}'",
                  (dir / "logs").string()));
  EXPECT_EQ(r.exit_code, 1);
  // Refused by the whole-model check, or (where less memory is free than the 15.26 GiB
  // classifier) already while building it: either way naming the flag.
  EXPECT_NE(r.err.find("--model vgg16 with 1000000 classes (--num-classes): "), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "logs" / "metrics.csv"));
}

}  // namespace
}  // namespace nnperf
