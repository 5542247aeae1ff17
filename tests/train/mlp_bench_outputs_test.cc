// The mlp-bench reporters render from mlp_bench.json alone: mlp_bench.csv and the plot's data
// and script rebuilt from the saved JSON are byte-identical to the ones the run wrote.
#include <gtest/gtest.h>

#include "nnperf/io/json_read.h"
#include "nnperf/runs/mlp_bench.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

TEST(MlpBenchOutputs, CsvAndPlotRebuiltFromSavedJson) {
  test::TempDir dir;
  MlpBenchOptions o;
  o.impls = {"naive", "blocked"};
  o.batch_sizes = {8, 64};
  o.hidden = {16};
  o.warmup = 0;
  o.measure = 3;
  o.threads = 1;
  o.consistency_steps = 5;
  o.overhead_reps = 3;
  o.synthetic = true;
  o.out_dir = dir / "bench";
  const MlpBenchResult r = run_mlp_bench(o);
  EXPECT_TRUE(r.consistent);
  write_mlp_bench_outputs(r, dir / "extra.json", dir / "extra.csv");

  const nlohmann::json doc = read_json(dir / "bench" / "mlp_bench.json");
  ASSERT_EQ(doc["records"].size(), 2u * 2u * 2u);
  ASSERT_EQ(doc["consistency"].size(), 2u);
  EXPECT_EQ(doc["overhead"]["batch_size"], 64);
  EXPECT_EQ(doc["records"][1]["step"], "forward");
  fs::create_directories(dir / "again");
  render_mlp_bench_outputs(doc, dir / "again");
  for (const char* f : {"mlp_bench.csv", "plots/iteration_time.dat", "plots/iteration_time.gp"}) {
    EXPECT_EQ(test::read_text(dir / "again" / f), test::read_text(dir / "bench" / f)) << f;
  }
  EXPECT_EQ(test::read_text(dir / "extra.csv"), test::read_text(dir / "bench" / "mlp_bench.csv"));
  EXPECT_EQ(format_mlp_bench(doc), format_mlp_bench(r.json));
}

}  // namespace
}  // namespace nnperf
