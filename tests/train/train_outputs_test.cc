// The train job's reporter: train_records.json holds every epoch, and the CSVs rendered from it
// alone are byte-identical to the ones the run wrote as it went (with and without a validation
// split: empty cells, never zeros).
#include "nnperf/runs/train_outputs.h"

#include <gtest/gtest.h>

#include "nnperf/io/json_read.h"
#include "nnperf/runs/train_run.h"
#include "test_util.h"

namespace nnperf {
namespace {

void expect_rebuilt(int64_t val_split) {
  test::TempDir dir;
  TrainRunOptions o;
  o.data.synthetic = true;
  o.data.synthetic_train = 600;
  o.data.synthetic_test = 200;
  o.data.val_split = val_split;
  o.hidden = {32, 16};
  o.epochs = 3;
  o.warmup_epochs = 1;
  o.threads = 1;
  o.tensorboard = false;
  o.progress = Progress::Mode::kQuiet;
  o.out_dir = dir / "run";
  const TrainRunResult r = run_training(o);
  const nlohmann::json doc = read_json(dir / "run" / "train_records.json");
  ASSERT_EQ(doc["records"].size(), 3u);
  EXPECT_EQ(doc["context"]["activation_layers"], 2);
  EXPECT_EQ(doc["records"][0]["timed"], false);
  EXPECT_EQ(doc["records"][2]["train_loss"].get<double>(), r.epochs[2].train_loss);
  EXPECT_EQ(doc["records"][1]["val_acc"].is_null(), val_split == 0);
  std::filesystem::create_directories(dir / "again");
  render_train_csvs(doc, dir / "again");
  for (const char* f : {"training_metrics.csv", "activation_timings.csv"}) {
    EXPECT_EQ(test::read_text(dir / "again" / f), test::read_text(dir / "run" / f)) << f;
  }
}

TEST(TrainOutputs, CsvsRebuiltFromRecordsWithValidation) { expect_rebuilt(100); }
TEST(TrainOutputs, CsvsRebuiltFromRecordsWithoutValidation) { expect_rebuilt(0); }

}  // namespace
}  // namespace nnperf
