// The activation study's analysis is rendered from its records (the saved runs) alone: loading
// keeps the newest run per activation in usra-survey's order, and rebuilding the analysis from
// the same runs writes summary.csv, the plots' data and scripts and report.md again byte for byte.
#include "nnperf/runs/activation_study.h"

#include <gtest/gtest.h>

#include <map>

#include "nnperf/runs/activation_study_outputs.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

// Every output of the analysis, by path relative to the study folder. The report's machine line
// comes from the runs' run.json files (where, with how many threads and when they trained), so a
// rebuilt report is byte for byte the first.
std::map<std::string, std::string> analysis_outputs(const fs::path& dir) {
  std::map<std::string, std::string> out;
  out["summary.csv"] = test::read_text(dir / "summary.csv");
  for (const auto& e : fs::directory_iterator(dir / "plots")) {
    const std::string ext = e.path().extension().string();
    if (ext == ".dat" || ext == ".gp")
      out["plots/" + e.path().filename().string()] = test::read_text(e.path());
  }
  out["report.md"] = test::read_text(dir / "report.md");
  EXPECT_NE(out["report.md"].find(" kernels), 1 thread(s). Build "), std::string::npos)
      << out["report.md"];
  EXPECT_NE(out["report.md"].find(". Trained 20"), std::string::npos) << out["report.md"];
  return out;
}

TEST(ActivationStudy, AnalysisRebuiltFromSavedRunsIsIdentical) {
  test::TempDir dir;
  ActivationStudyOptions o;
  o.base.data.synthetic = true;
  o.base.data.synthetic_train = 600;
  o.base.data.synthetic_test = 200;
  o.base.data.val_split = 100;
  o.base.hidden = {16, 8};
  o.base.epochs = 3;
  o.base.warmup_epochs = 1;
  o.base.threads = 1;
  o.base.tensorboard = false;
  o.base.progress = Progress::Mode::kQuiet;
  o.base.command_line = "nnperf activations (test)";
  o.activations = {"Tanh", "ReLU"};
  o.out_dir = dir / "study";
  const fs::path report = run_activation_study(o);
  EXPECT_EQ(report, dir / "study" / "report.md");
  const auto first = analysis_outputs(dir / "study");
  EXPECT_EQ(first.size(), 2u + 4u * 2u);  // summary, report, 4 plots x (.dat, .gp)

  // An older run of ReLU beside the newer one: loading keeps the newer.
  ActivationStudyRecords rec = load_activation_study(dir / "study");
  ASSERT_EQ(rec.runs.size(), 2u);
  EXPECT_EQ(rec.runs[0].activation, "ReLU");  // usra-survey's order, not the order run
  EXPECT_EQ(rec.runs[1].activation, "Tanh");
  ASSERT_EQ(rec.val_acc.size(), 2u);
  EXPECT_EQ(rec.val_acc[0].size(), 3u);  // every epoch had a validation pass
  EXPECT_EQ(rec.val_acc[0].front().first, 1);
  fs::copy(dir / "study" / rec.runs[0].folder, dir / "study" / "MLP_ReLU_20000101_000000",
           fs::copy_options::recursive);
  fs::remove(dir / "study" / "MLP_ReLU_20000101_000000" / "training_metrics.csv");
  const std::string kept = rec.runs[0].folder;
  rec = load_activation_study(dir / "study");
  EXPECT_EQ(rec.runs[0].folder, kept);

  analyse_activation_study(dir / "study", o.base.command_line);
  const auto again = analysis_outputs(dir / "study");
  for (const auto& [name, text] : first) {
    ASSERT_TRUE(again.count(name)) << name;
    EXPECT_EQ(again.at(name), text) << name;
  }

  // The plots alone, rendered again from the same analysis, give the same data.
  const ActivationAnalysis a = analyze_activations(rec.runs);
  const std::string plots_md = render_activation_plots(a, rec, dir / "plots");
  EXPECT_NE(plots_md.find("### Validation accuracy per epoch"), std::string::npos);
  for (const char* stem :
       {"timing_comparison", "accuracy_vs_time", "layer_heatmap", "validation_curves"}) {
    const std::string dat = std::string(stem) + ".dat";
    EXPECT_EQ(test::read_text(dir / "plots" / dat), first.at("plots/" + dat)) << stem;
  }
}

}  // namespace
}  // namespace nnperf
