// `nnperf train --model <CNN>` in epoch mode (nn-perf train.py's job): outputs rendered from the
// records (CSV rebuilt from train_records.json alone), checkpoints (best, epoch_NNN, final
// weights), --resume reaching the uninterrupted run's weights bit for bit on one thread, refused
// checkpoints and data by name with nothing written, IDX and CIFAR data with their normalisation,
// --profile-one-step's trace and CSV, and a diverging run stopped with its finished epochs kept.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/runs/cnn_train_outputs.h"
#include "nnperf/train/checkpoint.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

// 4 steps of 8 per epoch, 16 test images of 3x8x8, one thread.
const char* kTiny =
    "--model resnet18 --synthetic --input-size 8 --limit-train 32 --limit-test 16 --batch-size 8 "
    "--warmup 3 --threads 1 --progress lines --no-tensorboard";

nlohmann::json read_json(const fs::path& p) { return nlohmann::json::parse(test::read_text(p)); }

TEST(CnnTrainCli, StepLogHasEveryStepWithItsRate) {
  test::TempDir dir;
  const fs::path log = dir / "steps.csv";
  const auto r = test::run_nnperf(fmt::format("train {} --epochs 2 --step-log '{}' --out-dir '{}'",
                                              kTiny, log.string(), (dir / "a").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable t = read_csv(log);
  ASSERT_EQ(t.header, (std::vector<std::string>{"step", "loss", "lr"}));
  ASSERT_EQ(t.rows.size(), 8u);  // 4 steps per epoch, 2 epochs
  double mean_epoch2 = 0;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    EXPECT_EQ(t.number(i, 0), static_cast<double>(i + 1));
    EXPECT_GT(t.number(i, 1), 0.0);
    if (i >= 4) mean_epoch2 += t.number(i, 1) / 4;
  }
  // Warm-up over 3 steps: the first step at 0.1 / 3, then cosine from the peak at step 4.
  EXPECT_NEAR(t.number(0, 2), 0.1 / 3, 1e-8);
  EXPECT_NEAR(t.number(3, 2), 0.1, 1e-8);
  // The epoch's train loss is the mean of its steps' losses (equal batches).
  const CsvTable m = read_csv(dir / "a" / "training_metrics.csv");
  EXPECT_NEAR(m.number(1, m.require("train_loss")), mean_epoch2, 1e-6 * mean_epoch2);
  // Appended only to a step log: another CSV is refused before anything is written; a log inside
  // the new output folder is opened once the folder exists.
  std::ofstream(dir / "other.csv") << "x,y\n1,2\n";
  auto bad =
      test::run_nnperf(fmt::format("train {} --epochs 1 --step-log '{}' --out-dir '{}'", kTiny,
                                   (dir / "other.csv").string(), (dir / "b").string()));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("holds another file (first line 'x,y', expected 'step,loss,lr')"),
            std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(dir / "b"));
  EXPECT_EQ(test::read_text(dir / "other.csv"), "x,y\n1,2\n");
  bad = test::run_nnperf(fmt::format("train {} --epochs 1 --step-log '{}' --out-dir '{}'", kTiny,
                                     (dir / "c" / "steps.csv").string(), (dir / "c").string()));
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_EQ(read_csv(dir / "c" / "steps.csv").rows.size(), 4u);
  // The driver's flags and a warm-up longer than the run: refused, and said.
  for (const char* flag :
       {"--label x", "--grad-accum-steps 2", "--log-dir logs", "--warmup-iters 2"}) {
    bad = test::run_nnperf(
        fmt::format("train {} --epochs 1 {} --out-dir '{}'", kTiny, flag, (dir / "d").string()));
    EXPECT_EQ(bad.exit_code, 2) << flag;
    EXPECT_NE(bad.err.find("not to epoch training"), std::string::npos) << bad.err;
  }
  bad = test::run_nnperf(
      fmt::format("train {} --epochs 1 --warmup 100 --out-dir '{}'", kTiny, (dir / "e").string()));
  ASSERT_EQ(bad.exit_code, 0) << bad.err;
  EXPECT_NE(bad.err.find(
                "--warmup 100 is not shorter than the whole run (4 steps): the learning rate only "
                "reaches 0.004"),
            std::string::npos)
      << bad.err;
  // Refused for the MLP, as every CNN-only flag.
  const auto mlp = test::run_nnperf(fmt::format("train --synthetic --step-log '{}'", log.string()));
  EXPECT_EQ(mlp.exit_code, 2);
  EXPECT_NE(mlp.err.find("--step-log: applies to the CNNs"), std::string::npos) << mlp.err;
}

TEST(CnnTrainCli, EpochsCheckpointsAndRecords) {
  test::TempDir dir;
  const fs::path out = dir / "a";
  const auto r = test::run_nnperf(fmt::format(
      "train {} --epochs 2 --save-every 1 --batchnorm OWN --out-dir '{}'", kTiny, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("MEASURED_SEC="), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BATCH=8 ARCH=resnet18 BACKEND=cpu"), std::string::npos) << r.out;
  for (const char* f : {"run.json", "train_records.json", "final_results.json",
                        "training_metrics.csv", "epoch_001.ckpt", "epoch_002.ckpt",
                        "resnet18_synthetic_best.ckpt", "resnet18_synthetic_final_weights.ckpt"}) {
    EXPECT_TRUE(fs::exists(out / f)) << f;
  }
  const CsvTable t = read_csv(out / "training_metrics.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.cell(1, t.require("epoch")), "2");
  // 8 steps, warm-up 3, then cosine: the last step (7) is at p = (7 - 3) / 5 = 0.8 (float lr).
  EXPECT_NEAR(t.number(1, t.require("lr")), 0.1 * 0.5 * (1 + std::cos(M_PI * 0.8)), 1e-8);
  EXPECT_NEAR(t.number(0, t.require("lr")), 0.1 * 0.5 * (1 + std::cos(M_PI * 0.0)), 1e-8);
  const nlohmann::json run = read_json(out / "run.json");
  EXPECT_EQ(run["device"], "cpu");
  EXPECT_EQ(run["batchnorm"], "own");  // the CPU's BatchNorm, in the table's spelling
  EXPECT_TRUE(run["launch"].is_null()) << run["launch"];  // the GPU's default: no launches here
  const nlohmann::json fr = read_json(out / "final_results.json");
  EXPECT_EQ(fr["model"], "resnet18");
  EXPECT_EQ(fr["measured_epochs"], 2);
  EXPECT_GT(fr["measured_sec"].get<double>(), 0);
  EXPECT_EQ(fr["images_trained"], 64);
  EXPECT_EQ(fr["context"]["recipe"]["nesterov"], true);
  EXPECT_EQ(fr["context"]["recipe"]["weight_decay"], 5e-4);
  // The CSV is rendered from the records: rebuilt from train_records.json alone, same bytes.
  const fs::path again = dir / "again";
  fs::create_directories(again);
  render_cnn_train_csv(read_json(out / "train_records.json"), again);
  EXPECT_EQ(test::read_text(again / "training_metrics.csv"),
            test::read_text(out / "training_metrics.csv"));
  const Checkpoint w = read_checkpoint(out / "resnet18_synthetic_final_weights.ckpt");
  EXPECT_EQ(w.meta["kind"], "weights");
  const Checkpoint e1 = read_checkpoint(out / "epoch_001.ckpt");
  EXPECT_EQ(e1.meta["epoch"], 1);
  EXPECT_EQ(e1.meta["optimizer"]["steps"], 4);
}

// A CNN run's event file, deleted, is rebuilt by the report from train_records.json, same bytes;
// one that is there is left alone.
TEST(CnnTrainCli, TheReportRebuildsItsTensorBoardFile) {
  test::TempDir dir;
  const fs::path out = dir / "a";
  std::string args = kTiny;
  args.erase(args.find(" --no-tensorboard"));
  const auto r =
      test::run_nnperf(fmt::format("train {} --epochs 2 --out-dir '{}'", args, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = read_json(out / "train_records.json");
  const fs::path file =
      out / "tensorboard" / doc["context"]["tensorboard"]["file"].get<std::string>();
  const std::string bytes = test::read_text(file);
  ASSERT_FALSE(bytes.empty());
  const auto report = [&] {
    return test::run_nnperf(
        fmt::format("report '{}' --out-dir '{}'", out.string(), (dir / "report").string()));
  };
  auto rep = report();
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_EQ(rep.out.find("rebuilt"), std::string::npos) << rep.out;
  fs::remove(file);
  rep = report();
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("rebuilt tensorboard/"), std::string::npos) << rep.out;
  EXPECT_EQ(test::read_text(file), bytes);
}

// Checkpoints that cannot fit on the output folder's disk are refused before the run claims the
// folder: a million epochs saved every epoch are 81 TiB of ResNet-18 checkpoints.
TEST(CnnTrainCli, CheckpointsThatCannotFitOnTheDiskAreRefusedBeforeTheRun) {
  test::TempDir dir;
  const auto r = test::run_nnperf(fmt::format(
      "train {} --epochs 1000000 --save-every 1 --out-dir '{}'", kTiny, (dir / "a").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(
      r.err.find("--save-every 1 with --epochs 1000000: 1000000 epoch checkpoints and the best, "
                 "85.3 MiB each, and the final weights need "),
      std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" free on the disk of " + (dir / "a").string()), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "a"));
}

// Image-folder data are resized to 8/7 of --input-size before the centre crop: an input size whose
// resize exceeds what the decoder takes names the flag and the largest size that works.
TEST(CnnTrainCli, AnInputSizeTooLargeForImageFoldersNamesTheFlag) {
  test::TempDir dir;
  fs::create_directories(dir / "img" / "train" / "a");
  fs::create_directories(dir / "img" / "val" / "a");
  const auto r = test::run_nnperf(
      fmt::format("train --model resnet18 --data '{}' --input-size 3585 --epochs 1 --out-dir '{}'",
                  (dir / "img").string(), (dir / "a").string()));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--input-size 3585: image-folder data are resized to 4097 (8/7 of it, then "
                       "centre-cropped to it), above the 4096 pixels nnperf decodes; give at most "
                       "3584"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir / "a"));
}

// Stopped after epoch 1 and resumed: the same weights and BatchNorm statistics, bit for bit.
TEST(CnnTrainCli, ResumeIsBitIdentical) {
  test::TempDir dir;
  const fs::path a = dir / "a", b = dir / "b";
  auto r = test::run_nnperf(
      fmt::format("train {} --epochs 2 --save-every 1 --out-dir '{}'", kTiny, a.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = test::run_nnperf(fmt::format("train {} --epochs 2 --resume '{}' --out-dir '{}'", kTiny,
                                   (a / "epoch_001.ckpt").string(), b.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Checkpoint wa = read_checkpoint(a / "resnet18_synthetic_final_weights.ckpt");
  const Checkpoint wb = read_checkpoint(b / "resnet18_synthetic_final_weights.ckpt");
  ASSERT_EQ(wa.tensors.size(), wb.tensors.size());
  for (std::size_t i = 0; i < wa.tensors.size(); ++i) {
    EXPECT_EQ(wa.tensors[i].name, wb.tensors[i].name);
    EXPECT_TRUE(wa.tensors[i].data == wb.tensors[i].data) << wa.tensors[i].name;
  }
  // The resumed run's records: epoch 1 from the checkpoint, epoch 2 trained again, same losses.
  const CsvTable ta = read_csv(a / "training_metrics.csv"),
                 tb = read_csv(b / "training_metrics.csv");
  ASSERT_EQ(tb.rows.size(), 2u);
  for (const char* col : {"train_loss", "train_acc", "test_loss", "test_acc", "lr"}) {
    EXPECT_EQ(ta.cell(1, ta.require(col)), tb.cell(1, tb.require(col))) << col;
  }
  EXPECT_EQ(read_json(b / "final_results.json")["resumed_after_epoch"], 1);
  EXPECT_EQ(read_json(b / "final_results.json")["measured_epochs"], 1);
}

TEST(CnnTrainCli, RefusedCheckpointsNameTheProblem) {
  test::TempDir dir;
  const fs::path a = dir / "a";
  ASSERT_EQ(test::run_nnperf(
                fmt::format("train {} --epochs 2 --save-every 1 --out-dir '{}'", kTiny, a.string()))
                .exit_code,
            0);
  const std::string ckpt = (a / "epoch_001.ckpt").string();
  const std::string bytes = test::read_text(ckpt);
  write_file_atomic(dir / "cut.ckpt", bytes.substr(0, bytes.size() / 2));
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases{
      {fmt::format("{} --epochs 2 --resume '{}' --batch-size 4", kTiny, ckpt), "--batch-size"},
      {fmt::format("{} --epochs 3 --resume '{}'", kTiny, ckpt), "--epochs"},
      {fmt::format("{} --epochs 2 --resume '{}'", kTiny,
                   (a / "resnet18_synthetic_final_weights.ckpt").string()),
       "weights-only"},
      {fmt::format("{} --epochs 2 --resume '{}'", kTiny, (dir / "cut.ckpt").string()), "cut.ckpt"},
      {fmt::format("{} --epochs 2 --resume '{}'", kTiny, (dir / "none.ckpt").string()), "--resume"},
      // Another resolution or learning rate would mix two runs in one metrics file.
      {fmt::format("{} --epochs 2 --resume '{}' --input-size 16", kTiny, ckpt),
       "input_side 8, this run has 16 (give the same --input-size)"},
      {fmt::format("{} --epochs 2 --resume '{}' --lr 0.05", kTiny, ckpt),
       "base_lr 0.1, this run has 0.05"},
      // So would another recipe: the update's terms and the loss.
      {fmt::format("{} --epochs 2 --resume '{}' --weight-decay 0.001", kTiny, ckpt),
       "(give the same --weight-decay)"},
      {fmt::format("{} --epochs 2 --resume '{}' --momentum 0.5", kTiny, ckpt),
       "momentum 0.9, this run has 0.5 (give the same --momentum)"},
      {fmt::format("{} --epochs 2 --resume '{}' --no-nesterov", kTiny, ckpt),
       "nesterov true, this run has false (give the same --no-nesterov)"},
      {fmt::format("{} --epochs 2 --resume '{}' --label-smoothing 0.1", kTiny, ckpt),
       "(give the same --label-smoothing)"},
  };
  for (const auto& c : cases) {
    const fs::path out = dir / "refused";
    const auto r = test::run_nnperf(fmt::format("train {} --out-dir '{}'", c.args, out.string()));
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;  // refused before the folder is claimed
  }
  // Another model's checkpoint: refused by restore_checkpoint, naming both models.
  const auto r = test::run_nnperf(fmt::format(
      "train --model resnet34 --synthetic --input-size 8 --limit-train 32 --limit-test 16 "
      "--batch-size 8 --warmup 3 --threads 1 --epochs 2 --resume '{}' --out-dir '{}'",
      ckpt, (dir / "other").string()));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("'resnet18', not of 'resnet34'"), std::string::npos) << r.err;
}

// --init-weights: a run starts from another run's final weights. With a learning rate too small
// to move any weight (1e-30, no momentum or decay) the trained run ends with exactly the loaded
// parameters, while its BatchNorm running statistics (updated in training mode) moved on.
TEST(CnnTrainCli, InitWeightsStartsFromTheFileAndIsRefusedByName) {
  test::TempDir dir;
  const fs::path a = dir / "a";
  ASSERT_EQ(test::run_nnperf(fmt::format("train {} --epochs 1 --out-dir '{}'", kTiny, a.string()))
                .exit_code,
            0);
  const fs::path w = a / "resnet18_synthetic_final_weights.ckpt";
  const fs::path b = dir / "b";
  const auto r = test::run_nnperf(fmt::format(
      "train {} --epochs 1 --seed 9 --lr 1e-30 --momentum 0 --weight-decay 0 --no-nesterov "
      "--init-weights '{}' --out-dir '{}'",
      kTiny, w.string(), b.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Checkpoint loaded = read_checkpoint(w);
  const Checkpoint trained = read_checkpoint(b / "resnet18_synthetic_final_weights.ckpt");
  ASSERT_EQ(loaded.tensors.size(), trained.tensors.size());
  int params = 0, moved_buffers = 0;
  for (std::size_t i = 0; i < loaded.tensors.size(); ++i) {
    ASSERT_EQ(loaded.tensors[i].name, trained.tensors[i].name);
    if (loaded.tensors[i].name.starts_with("params.")) {
      EXPECT_EQ(loaded.tensors[i].data, trained.tensors[i].data) << loaded.tensors[i].name;
      ++params;
    } else {
      moved_buffers += loaded.tensors[i].data != trained.tensors[i].data ? 1 : 0;
    }
  }
  EXPECT_EQ(params, 62);         // resnet18: 20 convs, 20 BatchNorms x 2, fc weight and bias
  EXPECT_EQ(moved_buffers, 40);  // 20 BatchNorms x (running_mean, running_var)
  EXPECT_EQ(read_json(b / "run.json")["init_weights"], w.string());

  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases{
      {fmt::format("{} --init-weights '{}'", kTiny, (dir / "none.ckpt").string()),
       "--init-weights"},
      {fmt::format("{} --epochs 2 --init-weights '{}' --resume '{}'", kTiny, w.string(),
                   w.string()),
       "not with --resume"},
      {fmt::format("--model resnet34 --synthetic --input-size 8 --limit-train 32 --limit-test 16 "
                   "--batch-size 8 --threads 1 --init-weights '{}'",
                   w.string()),
       "'resnet18', not of 'resnet34'"},
      {fmt::format("--model mlp --synthetic --init-weights '{}'", w.string()),
       "--init-weights: applies to the CNNs, not --model mlp"},
  };
  for (const auto& c : cases) {
    const fs::path out = dir / "refused";
    const auto e = test::run_nnperf(fmt::format("train {} --out-dir '{}'", c.args, out.string()));
    EXPECT_NE(e.exit_code, 0) << c.args;
    EXPECT_NE(e.err.find(c.expect), std::string::npos) << c.args << "\n" << e.err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

// A small IDX data set (like Fashion-MNIST: 1 x 28 x 28, 10 classes).
void write_idx(const fs::path& dir, const std::string& prefix, int n) {
  std::string images{0, 0, 8, 3, 0, 0, 0, static_cast<char>(n), 0, 0, 0, 28, 0, 0, 0, 28};
  std::string labels{0, 0, 8, 1, 0, 0, 0, static_cast<char>(n)};
  for (int i = 0; i < n; ++i) {
    labels.push_back(static_cast<char>(i % 10));
    for (int p = 0; p < 28 * 28; ++p)
      images.push_back(static_cast<char>((i * 31 + p * (i % 10 + 1)) % 256));
  }
  write_file_atomic(dir / (prefix + "-images-idx3-ubyte"), images);
  write_file_atomic(dir / (prefix + "-labels-idx1-ubyte"), labels);
}

TEST(CnnTrainCli, IdxDataAndRefusedShapes) {
  test::TempDir dir;
  const fs::path data = dir / "fmnist";
  fs::create_directories(data);
  write_idx(data, "train", 40);
  write_idx(data, "t10k", 20);
  const std::string base = fmt::format(
      "train --model resnet18 --data '{}' --batch-size 8 --epochs 1 --threads 1 --progress quiet "
      "--no-tensorboard",
      data.string());
  auto r =
      test::run_nnperf(fmt::format("{} --workers 1 --out-dir '{}'", base, (dir / "ok").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json run = read_json(dir / "ok" / "final_results.json")["context"]["data"];
  EXPECT_EQ(run["format"], "idx");
  EXPECT_EQ(run["name"], "fmnist");
  EXPECT_EQ(run["shape"], (nlohmann::json{1, 28, 28}));
  EXPECT_EQ(run["norm"]["source"], "computed from the training set");
  struct Case {
    std::string args, expect;
  };
  const fs::path empty = dir / "empty";
  fs::create_directories(empty);
  const std::vector<Case> cases{
      {fmt::format("{} --in-channels 3", base), "--in-channels 3"},
      {fmt::format("{} --num-classes 5", base), "--num-classes 5"},
      {fmt::format("{} --input-size 32", base), "--input-size 32"},
      {fmt::format("{} --batch-size 64", base), "--batch-size 64"},
      // 40 % 13 leaves one image, and layer4's maps are 1x1 at 28x28: its BatchNorms would see
      // one value per channel at the end of the epoch; refused before the run.
      {fmt::format("{} --batch-size 13", base),
       "--batch-size 13: an epoch's last batch holds the 1 left of 40 training images, and "
       "training it fails: node 52 'layer4.0.bn1': BatchNorm2d(512): training needs more than 1 "
       "value per channel, input is [1, 512, 1, 1]"},
      {fmt::format("{} --hidden 8", base), "--hidden"},
      {fmt::format("{} --workers 1000", base), "--workers"},
      {"train --model resnet18 --data '" + empty.string() + "'", "no data set found"},
      {"train --model resnet18 --data '" + (dir / "missing").string() + "'", "does not download"},
      {"train --model vgg16 --synthetic --input-size 8 --epochs 1", "vgg16"},
  };
  for (const auto& c : cases) {
    const fs::path out = dir / "refused";
    r = test::run_nnperf(fmt::format("{} --out-dir '{}'", c.args, out.string()));
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.err.find(c.expect), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;  // one line
    EXPECT_FALSE(fs::exists(out)) << c.args;
  }
}

TEST(CnnTrainCli, CifarUsesSeedConstants) {
  test::TempDir dir;
  const fs::path data = dir / "cifar-10-batches-bin";
  fs::create_directories(data);
  const auto batch = [](int n, int seed) {
    std::string s;
    for (int i = 0; i < n; ++i) {
      s.push_back(static_cast<char>((i + seed) % 10));
      for (int p = 0; p < 3072; ++p) s.push_back(static_cast<char>((p * 7 + i * 13 + seed) % 256));
    }
    return s;
  };
  for (int b = 1; b <= 5; ++b)
    write_file_atomic(data / fmt::format("data_batch_{}.bin", b), batch(4, b));
  write_file_atomic(data / "test_batch.bin", batch(8, 9));
  const fs::path out = dir / "run";
  const auto r = test::run_nnperf(fmt::format(
      "train --model resnet18 --data '{}' --batch-size 10 --epochs 1 --threads 1 --progress quiet "
      "--no-tensorboard --out-dir '{}'",
      dir.path().string(), out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The seed's per-channel constants, not the statistics of these made-up images.
  const nlohmann::json d = read_json(out / "run.json")["data"];
  EXPECT_EQ(d["name"], "cifar-10");
  EXPECT_EQ(d["shape"], (nlohmann::json{3, 32, 32}));
  EXPECT_EQ(d["norm"]["source"], "CIFAR-10 constants");
  EXPECT_EQ(d["norm"]["mean"], (nlohmann::json{0.4914, 0.4822, 0.4465})) << d["norm"];
  EXPECT_EQ(d["norm"]["std"], (nlohmann::json{0.2023, 0.1994, 0.2010})) << d["norm"];
  EXPECT_TRUE(fs::exists(out / "resnet18_cifar-10_final_weights.ckpt"));
}

TEST(CnnTrainCli, ProfileOneStepWritesTraceAndLayers) {
  test::TempDir dir;
  const fs::path out = dir / "p";
  const auto r = test::run_nnperf(
      fmt::format("train {} --profile-one-step --warmup-iters 2 --profile-iter 2 --out-dir '{}'",
                  kTiny, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json trace = read_json(out / "one_step_trace.json");
  std::set<std::string> names;
  for (const auto& e : trace["traceEvents"]) {
    names.insert(e.value("name", ""));
    if (e.value("name", "") == "relu.forward") {
      EXPECT_EQ(e["args"]["fused_into"], "bn1");  // the stem's ReLU ran inside bn1
    }
  }
  for (const char* n : {"forward", "loss", "backward", "optimizer", "conv1.forward",
                        "conv1.backward", "fc.forward", "relu.forward"}) {
    EXPECT_TRUE(names.count(n)) << n;
  }
  const CsvTable t = read_csv(out / "one_step_layers.csv");
  int forward = 0, backward = 0;
  std::map<std::string, std::string> fused;  // ReLU node -> the BatchNorm that ran it
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    forward += t.cell(i, t.require("phase")) == "forward" && t.cell(i, t.require("node")) != "-1";
    backward += t.cell(i, t.require("phase")) == "backward";
    EXPECT_GE(t.number(i, t.require("ms")), 0);
    const std::string into = t.cell(i, t.require("fused_into"));
    if (!into.empty()) fused[t.cell(i, t.require("name"))] = into;
  }
  EXPECT_GT(forward, 20);
  EXPECT_GT(backward, 20);
  // The stem's ReLU and each basic block's first run inside the BatchNorm before them; the ReLUs
  // after the residual Adds run themselves.
  EXPECT_EQ(fused.size(), 9u);
  EXPECT_EQ(fused["relu"], "bn1");
  EXPECT_EQ(fused["layer1.0.relu"], "layer1.0.bn1");
  EXPECT_EQ(fused.count("layer1.0.relu_1"), 0u);
  EXPECT_FALSE(fs::exists(out / "training_metrics.csv"));  // the run ends after the step
  EXPECT_EQ(read_json(out / "one_step.json")["clock"], "cpu-steady-clock");
}

// The recorded step is also marked with NVTX ranges (for Nsight): a stand-in tool loaded through
// NVTX_INJECTION64_PATH logs them. Exactly one step: every phase once, every node's forward and
// backward once (the graph input excluded; resnet18's first conv has no dX but a backward), and
// the ranges nest (every push popped, never below zero). Builds without the CUDA toolkit have no
// NVTX: one_step.json says so and the test reports itself skipped.
TEST(CnnTrainCli, ProfileOneStepMarksLayersAndPhasesWithNvtxRanges) {
#ifndef NNPERF_NVTX_INJECTION_LIB
  GTEST_SKIP() << "built without the CUDA toolkit: no NVTX (nvtx_nocuda.cc)";
#else
  test::TempDir dir;
  const fs::path out = dir / "p", log = dir / "nvtx.log";
  const auto r = test::run_command(fmt::format(
      "NVTX_INJECTION64_PATH='{}' NNPERF_TEST_NVTX_LOG='{}' '{}' train {} --profile-one-step "
      "--warmup-iters 1 --out-dir '{}'",
      NNPERF_NVTX_INJECTION_LIB, log.string(), NNPERF_BINARY, kTiny, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_json(out / "one_step.json")["nvtx_ranges"], true);
  std::map<std::string, int> pushed;
  int depth = 0, max_depth = 0, pops = 0;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("push ", 0) == 0) {
      ++pushed[line.substr(5)];
      max_depth = std::max(max_depth, ++depth);
    } else {
      ASSERT_EQ(line, "pop");
      ++pops;
      ASSERT_GE(--depth, 0) << "a pop without a push";
    }
  }
  EXPECT_EQ(depth, 0);
  for (const char* phase : {"step/forward", "step/loss", "step/backward", "step/optimizer"}) {
    EXPECT_EQ(pushed[phase], 1) << phase;
  }
  for (const char* node : {"forward/conv1", "forward/layer4.1.relu_1", "forward/fc", "backward/fc",
                           "backward/layer1.0.bn1", "backward/conv1"}) {
    EXPECT_EQ(pushed[node], 1) << node;
  }
  int forward = 0, backward = 0;
  for (const auto& [name, n] : pushed) {
    forward += name.rfind("forward/", 0) == 0 ? n : 0;
    backward += name.rfind("backward/", 0) == 0 ? n : 0;
  }
  EXPECT_EQ(forward, backward);  // every node both ways
  EXPECT_GT(forward, 60);        // resnet18: 20 convs, 20 BatchNorms, relus, adds, pool, fc...
  EXPECT_EQ(pops, forward + backward + 4);
  EXPECT_EQ(max_depth, 2);  // a node's range inside its phase's
#endif
}

// A run that diverges in epoch 1 keeps the metrics header alone. One resumed after epoch 1 from
// a checkpoint whose fc weights are NaN (weights a diverged update leaves behind) diverges at
// epoch 2's first step and keeps epoch 1: the same whole row and record as the healthy run's.
TEST(CnnTrainCli, DivergenceStopsWithFinishedEpochsKept) {
  test::TempDir dir;
  const fs::path healthy = dir / "a";
  auto r = test::run_nnperf(
      fmt::format("train {} --epochs 2 --save-every 1 --out-dir '{}'", kTiny, healthy.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string metrics = test::read_text(healthy / "training_metrics.csv");
  const std::size_t header_end = metrics.find('\n');
  const std::size_t row1_end = metrics.find('\n', header_end + 1);
  ASSERT_NE(row1_end, std::string::npos) << metrics;

  // Diverging in epoch 1: the header alone, no records, no results.
  const fs::path first = dir / "first";
  r = test::run_nnperf(fmt::format("train {} --epochs 2 --lr 1e30 --warmup 0 --out-dir '{}'", kTiny,
                                   first.string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("training diverged at step 2: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(epoch 1); the 0 finished epochs are in "), std::string::npos) << r.err;
  EXPECT_TRUE(fs::exists(first / "run.json"));
  EXPECT_EQ(test::read_text(first / "training_metrics.csv"), metrics.substr(0, header_end + 1));
  EXPECT_FALSE(fs::exists(first / "train_records.json"));
  EXPECT_FALSE(fs::exists(first / "final_results.json"));

  // Diverging in epoch 2: resumed from epoch 1's checkpoint with NaN fc weights.
  Checkpoint ckpt = read_checkpoint(healthy / "epoch_001.ckpt");
  int poisoned = 0;
  for (CheckpointTensor& t : ckpt.tensors) {
    if (t.name != "params.fc.weight") continue;
    std::fill(t.data.begin(), t.data.end(), std::numeric_limits<float>::quiet_NaN());
    ++poisoned;
  }
  ASSERT_EQ(poisoned, 1);
  write_checkpoint(dir / "nan.ckpt", ckpt);
  const fs::path out = dir / "d";
  r = test::run_nnperf(fmt::format("train {} --epochs 2 --resume '{}' --out-dir '{}'", kTiny,
                                   (dir / "nan.ckpt").string(), out.string()));
  EXPECT_EQ(r.exit_code, 1);
  // Epoch 2's first step is step 5 (4 steps an epoch): the count goes on from the checkpoint.
  EXPECT_EQ(r.err.rfind("nnperf: error: training diverged at step 5: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("the weights held non-finite values before any update of this run"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(fmt::format("(epoch 2); the 1 finished epochs are in {}",
                                   (out / "training_metrics.csv").string())),
            std::string::npos)
      << r.err;
  // training_metrics.csv: the header and epoch 1's row, whole, as the healthy run wrote them.
  EXPECT_EQ(test::read_text(out / "training_metrics.csv"), metrics.substr(0, row1_end + 1));
  const CsvTable m = read_csv(out / "training_metrics.csv");
  EXPECT_FALSE(m.truncated_row);
  ASSERT_EQ(m.rows.size(), 1u);
  EXPECT_EQ(m.cell(0, m.require("epoch")), "1");
  // train_records.json: epoch 1's record alone, the healthy run's.
  const nlohmann::json records = read_json(out / "train_records.json")["records"];
  ASSERT_EQ(records.size(), 1u) << records;
  EXPECT_EQ(records[0], read_json(healthy / "train_records.json")["records"][0]);
  EXPECT_FALSE(fs::exists(out / "final_results.json"));
  EXPECT_FALSE(fs::exists(out / "resnet18_synthetic_final_weights.ckpt"));
}

}  // namespace
}  // namespace nnperf
