// End-to-end tests of the nnperf program: real runs on small synthetic data, exact output
// formats, and bad input (clear message, non-zero exit, earlier outputs intact).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/io/records.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::run_nnperf;
using test::TempDir;

std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto pos = t.rfind('\n');
  return pos == std::string::npos ? t : t.substr(pos + 1);
}

const char* kSmall =
    "--synthetic --hidden 32,16 --batch-size 32 --threads 1 --progress lines --val-split 500 "
    "--limit-test 300";

TEST(Cli, TrainWritesEveryOutputWithExactColumns) {
  TempDir dir;
  const auto r =
      run_nnperf(fmt::format("train --model mlp {} --epochs 2 --activation GELU --optimizer Adam "
                             "--out-dir '{}'",
                             kSmall, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(std::regex_match(
      last_line(r.out),
      std::regex(
          R"(MEASURED_SEC=[0-9]+\.[0-9]{6} IMGS_PER_SEC=[0-9]+\.[0-9]{2} BATCH=32 ARCH=mlp BACKEND=cpu)")))
      << last_line(r.out);

  const CsvTable m = read_csv(dir / "training_metrics.csv");
  EXPECT_EQ(m.header,
            (std::vector<std::string>{"epoch", "train_loss", "train_acc", "val_loss", "val_acc"}));
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[1][0], "2");
  for (const auto& row : m.rows) {
    const double acc = std::stod(row[2]);
    EXPECT_GT(acc, 0.0);
    EXPECT_LE(acc, 1.0);
  }

  const CsvTable t = read_csv(dir / "activation_timings.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"epoch", "layer_1", "layer_2", "total_time"}));
  ASSERT_EQ(t.rows.size(), 2u);
  for (const auto& row : t.rows) {
    const double l1 = std::stod(row[1]), l2 = std::stod(row[2]), total = std::stod(row[3]);
    EXPECT_GT(l1, 0.0);
    EXPECT_GT(l2, 0.0);
    EXPECT_NEAR(total, l1 + l2, 1e-6 * total + 1e-9);
  }

  const auto j = nlohmann::json::parse(test::read_text(dir / "final_results.json"));
  for (const char* key : {"activation", "final_train_loss", "final_train_acc", "final_val_loss",
                          "final_val_acc", "final_test_loss", "final_test_acc", "activation_times",
                          "total_activation_time", "hyperparameters"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["activation"], "GELU");
  EXPECT_EQ(j["hyperparameters"]["optimizer"], "adam");  // the optimizer's name, not as typed
  EXPECT_EQ(j["activation_times"].size(), 2u);
  for (const char* key :
       {"batch_size", "total_epochs", "warmup_epochs", "timing_epochs", "learning_rate"}) {
    EXPECT_TRUE(j["hyperparameters"].contains(key)) << key;
  }
  EXPECT_EQ(j["hyperparameters"]["timing_epochs"], 2);
  const auto run = nlohmann::json::parse(test::read_text(dir / "run.json"));
  EXPECT_TRUE(run.contains("command"));
  EXPECT_TRUE(run.contains("machine"));
  bool has_events = false;
  for (const auto& e : fs::directory_iterator(dir / "tensorboard")) {
    has_events |= e.path().filename().string().rfind("events.out.tfevents.", 0) == 0 &&
                  fs::file_size(e.path()) > 0;
  }
  EXPECT_TRUE(has_events);
}

// The event file is part of the run's record: train_records.json names it and stamps each epoch,
// so the report rebuilds a deleted file byte for byte.
TEST(Cli, TheReportRebuildsAnMlpRunsTensorBoardFile) {
  TempDir dir;
  const fs::path out = dir / "run";
  const auto r = run_nnperf(fmt::format(
      "train --model mlp {} --epochs 2 --warmup-epochs 1 --out-dir '{}'", kSmall, out.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(test::read_text(out / "train_records.json"));
  const std::string name = doc["context"]["tensorboard"]["file"].get<std::string>();
  const fs::path file = out / "tensorboard" / name;
  const std::string bytes = test::read_text(file);
  EXPECT_GT(bytes.size(), 200u);
  EXPECT_TRUE(doc["records"][1]["wall_time"].is_number());
  fs::remove_all(out / "tensorboard");
  const auto rep = run_nnperf(
      fmt::format("report '{}' --out-dir '{}'", out.string(), (dir / "report").string()));
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  EXPECT_NE(rep.out.find("rebuilt tensorboard/" + name + " from"), std::string::npos) << rep.out;
  EXPECT_EQ(test::read_text(file), bytes);
}

TEST(Cli, WarmupEpochsAreNotTimed) {
  TempDir dir;
  const auto r = run_nnperf(fmt::format("train {} --epochs 3 --warmup-epochs 2 --out-dir '{}'",
                                        kSmall, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CsvTable t = read_csv(dir / "activation_timings.csv");
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0], "3");
  EXPECT_EQ(read_csv(dir / "training_metrics.csv").rows.size(), 3u);
}

TEST(Cli, UnknownNamesAreUsageErrorsListingTheChoices) {
  TempDir dir;
  auto r = run_nnperf(
      fmt::format("train {} --activation Softsign --out-dir '{}'", kSmall, dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Softsign"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Mish"), std::string::npos) << r.err;
  r = run_nnperf(
      fmt::format("train {} --impl strassen --out-dir '{}'", kSmall, dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("blocked"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format("train {} --hidden 32,x --out-dir '{}'", kSmall, dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--hidden"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format("train {} --epochs 2 --warmup-epochs 2 --out-dir '{}'", kSmall,
                             dir.path().string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--warmup-epochs"), std::string::npos) << r.err;
  // The activation study's default warm-up (10 epochs) is longer than a short --epochs: the flag
  // typed is named, not the default.
  r = run_nnperf(fmt::format("activations --synthetic --epochs 3 --out-dir '{}'",
                             (dir.path() / "a").string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "nnperf: error: --epochs 3: the study times only the epochs after the warm-up, "
            "--warmup-epochs 10 (its default); give more epochs than that or a smaller "
            "--warmup-epochs\n");
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "a"));
  r = run_nnperf("train --no-such-flag");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err,
            "nnperf: error: unknown flag --no-such-flag for this command (see 'nnperf train "
            "--help')\n");
}

// Missing data is a runtime error (exit 1) for every command that reads it.
TEST(Cli, MissingDataFolderNamesThePath) {
  TempDir dir;
  for (const char* cmd : {"train", "activations", "mlp-bench"}) {
    const auto r = run_nnperf(
        fmt::format("{} --data /nonexistent/mnist --out-dir '{}'", cmd, (dir / cmd).string()));
    EXPECT_EQ(r.exit_code, 1) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find("/nonexistent/mnist"), std::string::npos) << r.err;
  }
}

TEST(Cli, DivergenceStopsWithAClearErrorAndKeepsWholeRows) {
  TempDir dir;
  const auto r = run_nnperf(fmt::format(
      "train {} --epochs 3 --optimizer sgd --lr 1e12 --out-dir '{}'", kSmall, dir.path().string()));
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("training diverged at step "), std::string::npos) << r.err;
  // Whatever was written is whole: the header, and only complete rows. At --lr 1e12 the run
  // diverges within the first epoch's 188 steps, so no epoch finished: the header alone.
  const std::string text = test::read_text(dir / "training_metrics.csv");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << text;
  const CsvTable m = read_csv(dir / "training_metrics.csv");
  EXPECT_FALSE(m.truncated_row) << *m.truncated_row;
  EXPECT_EQ(m.header,
            (std::vector<std::string>{"epoch", "train_loss", "train_acc", "val_loss", "val_acc"}));
  EXPECT_EQ(m.rows.size(), 0u);
  EXPECT_FALSE(fs::exists(dir / "final_results.json"));
}

TEST(Cli, ActivationStudyWritesSummaryPlotsAndReport) {
  TempDir dir;
  const auto r = run_nnperf(
      fmt::format("activations --quick {} --activations relu,tanh --epochs 2 --warmup-epochs 1 "
                  "--limit-train 1000 --out-dir '{}'",
                  kSmall, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const CsvTable s = read_csv(dir / "summary.csv");
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.header[0], "Activation");
  EXPECT_EQ(s.header[1], "Final (ms)");
  EXPECT_EQ(s.rows[0][0], "ReLU");
  EXPECT_EQ(s.rows[1][0], "Tanh");
  EXPECT_GE(s.column("acc_per_ms"), 0);
  const std::string report = test::read_text(dir / "report.md");
  EXPECT_NE(report.find("## Recommendations"), std::string::npos);
  EXPECT_NE(report.find("Fastest:"), std::string::npos);
  // The timing figure's script draws its data file, titled, with a bar per activation.
  const fs::path gp = dir / "plots" / "timing_comparison.gp",
                 dat = dir / "plots" / "timing_comparison.dat";
  const std::string script = test::read_text(gp), data = test::read_text(dat);
  for (const char* line :
       {"set title 'Activation forward time per training pass (mean over timed epochs)'",
        "set xtics ('ReLU' 0, 'Tanh' 1)", "plot 'timing_comparison.dat' index 0 using ($1+0):2"}) {
    EXPECT_NE(script.find(line), std::string::npos) << line << "\n" << script;
  }
  EXPECT_EQ(data.rfind("# data for timing_comparison.gp: ", 0), 0u) << data;
  int runs = 0;
  for (const auto& e : fs::directory_iterator(dir.path()))
    runs += e.path().filename().string().rfind("MLP_", 0) == 0;
  EXPECT_EQ(runs, 2);
  // The recipe's learning rate as usra-survey writes it, 0.001 (not a float's 0.0010000000474...).
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().filename().string().rfind("MLP_", 0) != 0) continue;
    EXPECT_NE(test::read_text(e.path() / "final_results.json").find("\"learning_rate\": 0.001,"),
              std::string::npos)
        << e.path();
  }
  // The analysis can be rebuilt from the saved runs alone: the same report, but for its last
  // line, which names the command that wrote it; the same figure, byte for byte.
  fs::remove(dir / "report.md");
  fs::remove(gp);
  fs::remove(dat);
  const auto again = run_nnperf(fmt::format("activations --analyze '{}'", dir.path().string()));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::string rebuilt = test::read_text(dir / "report.md");
  const auto command_at = [](const std::string& md) { return md.rfind("\nCommand: `"); };
  ASSERT_NE(command_at(report), std::string::npos) << report;
  ASSERT_NE(command_at(rebuilt), std::string::npos) << rebuilt;
  EXPECT_EQ(rebuilt.substr(0, command_at(rebuilt)), report.substr(0, command_at(report)));
  EXPECT_NE(report.find("activations --quick", command_at(report)), std::string::npos) << report;
  EXPECT_NE(rebuilt.find("activations --analyze", command_at(rebuilt)), std::string::npos)
      << rebuilt;
  EXPECT_EQ(test::read_text(gp), script);
  EXPECT_EQ(test::read_text(dat), data);
}

TEST(Cli, AnalyzeRefusesAFolderWithoutRuns) {
  TempDir dir;
  const auto r = run_nnperf(fmt::format("activations --analyze '{}'", dir.path().string()));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("MLP_"), std::string::npos) << r.err;
}

TEST(Cli, MlpBenchWritesRecordsJsonAndCsv) {
  TempDir dir;
  const auto r = run_nnperf(fmt::format(
      "mlp-bench --impls naive,blocked,blas --batch-sizes 8,33 --warmup 1 --measure 3 --threads 1 "
      "--consistency-steps 20 --overhead-reps 5 --synthetic --out-dir '{}' --json '{}' --csv '{}'",
      dir.path().string(), (dir / "b.json").string(), (dir / "b.csv").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(test::read_text(dir / "b.json"));
  ASSERT_TRUE(j.contains("context"));
  ASSERT_EQ(j["records"].size(), 3u * 2u * 2u);
  for (const auto& rec : j["records"]) {
    for (const char* key : {"impl", "batch_size", "step", "time_ms_median", "time_ms_min",
                            "time_ms_max", "gflops_per_s"}) {
      ASSERT_TRUE(rec.contains(key)) << key;
    }
    EXPECT_LE(rec["time_ms_min"].get<double>(), rec["time_ms_median"].get<double>());
    EXPECT_LE(rec["time_ms_median"].get<double>(), rec["time_ms_max"].get<double>());
    EXPECT_GT(rec["gflops_per_s"].get<double>(), 0.0);
  }
  ASSERT_EQ(j["consistency"].size(), 3u);
  for (const auto& c : j["consistency"]) EXPECT_TRUE(c["pass"].get<bool>()) << c.dump();
  EXPECT_TRUE(j["overhead"].contains("overhead_percent"));
  const CsvTable c = read_csv(dir / "b.csv");
  EXPECT_EQ(c.header[0], "impl");
  EXPECT_EQ(c.rows.size(), 12u);
}

// Names are found by the one name rule and recorded in the tables' spelling: "SGD" trains as sgd
// (with sgd's learning rate) and "leaky-relu" as LeakyReLU.
TEST(Cli, MlpBenchRecordsTheTablesSpellings) {
  TempDir dir;
  const auto r = run_nnperf(fmt::format(
      "mlp-bench --impls Naive --batch-sizes 8 --warmup 0 --measure 1 --threads 1 "
      "--consistency-steps 0 --overhead-reps 0 --synthetic --optimizer SGD --activation leaky-relu "
      "--out-dir '{}' --json '{}'",
      dir.path().string(), (dir / "b.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(test::read_text(dir / "b.json"));
  EXPECT_EQ(j["context"]["optimizer"], "sgd");
  EXPECT_DOUBLE_EQ(j["context"]["learning_rate"].get<double>(), 0.01);  // sgd's, not Adam's
  EXPECT_EQ(j["context"]["activation"], "LeakyReLU");
  EXPECT_EQ(j["records"][0]["impl"], "naive");
  const auto bad =
      run_nnperf("mlp-bench --optimizer lion --synthetic --out-dir " + (dir / "lion").string());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("unknown optimizer 'lion': expected sgd or adam"), std::string::npos)
      << bad.err;
  EXPECT_FALSE(fs::exists(dir / "lion"));
}

// `nnperf report` rebuilds what the reporters render from saved records (runs/rerender.h): an
// MLP run's and a CNN run's CSVs from train_records.json, an mlp-bench's CSV and plot data from
// mlp_bench.json, a profile sweep's CSVs and traces from profile_records.jsonl, a one-step
// profile's CSV and trace from one_step.json, a roofline's points CSV and figure from
// roofline.json, and then an activation study's summary, figures and report from its runs, byte
// for byte, and leaves complete folders alone.
TEST(Cli, ReportRebuildsMissingOutputsFromTheirRecords) {
  TempDir dir;
  auto r = run_nnperf(fmt::format("train --model mlp {} --epochs 2 --out-dir '{}'", kSmall,
                                  (dir / "mlp").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format(
      "train --model resnet18 --synthetic --input-size 8 --limit-train 16 --limit-test 8 "
      "--batch-size 8 --epochs 1 --threads 1 --progress quiet --out-dir '{}'",
      (dir / "cnn").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format(
      "mlp-bench --impls naive,blocked --batch-sizes 8 --warmup 0 --measure 2 --threads 1 "
      "--consistency-steps 2 --overhead-reps 1 --synthetic --out-dir '{}'",
      (dir / "bench").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format(
      "profile --model resnet18 --stage sanity --sizes 32,40 --threads 1 --output-dir '{}'",
      (dir / "profile").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format(
      "train --model resnet18 --synthetic --input-size 8 --limit-train 16 --limit-test 8 "
      "--batch-size 8 --threads 1 --progress quiet --profile-one-step --warmup-iters 1 "
      "--profile-iter 1 --out-dir '{}'",
      (dir / "step").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format("roofline '{}' --peak-compute 0.1 --peak-bw 20 --out-dir '{}'",
                             (dir / "profile").string(), (dir / "roof").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_nnperf(fmt::format(
      "activations --activations relu,tanh --synthetic --hidden 16 --epochs 2 --warmup-epochs 1 "
      "--limit-train 256 --limit-test 128 --val-split 64 --threads 1 --progress quiet "
      "--no-tensorboard --out-dir '{}'",
      (dir / "study").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<fs::path> rendered = {dir / "step" / "one_step_layers.csv",
                                    dir / "step" / "one_step_trace.json",
                                    dir / "mlp" / "training_metrics.csv",
                                    dir / "mlp" / "activation_timings.csv",
                                    dir / "cnn" / "training_metrics.csv",
                                    dir / "bench" / "mlp_bench.csv",
                                    dir / "bench" / "plots" / "iteration_time.dat",
                                    dir / "profile" / "resnet18_guess_overall.csv",
                                    dir / "profile" / "resnet18_guess_layers.csv",
                                    dir / "profile" / "resnet18_guess_trace_32.json",
                                    dir / "profile" / "resnet18_guess_trace_40.json",
                                    dir / "roof" / "roofline_points.csv",
                                    dir / "study" / "summary.csv",
                                    dir / "study" / "report.md"};
  // Each figure's data and script, and its images where gnuplot drew them.
  for (const fs::path& stem :
       {dir / "bench" / "plots" / "iteration_time", dir / "roof" / "roofline",
        dir / "study" / "plots" / "timing_comparison", dir / "study" / "plots" / "layer_heatmap",
        dir / "study" / "plots" / "validation_curves"}) {
    for (const char* ext : {".dat", ".gp", ".svg", ".png"}) {
      if (fs::exists(stem.string() + ext) || std::string(ext) < ".p")
        rendered.emplace_back(stem.string() + ext);
    }
  }
  std::vector<std::string> before;
  for (const fs::path& f : rendered) {
    ASSERT_TRUE(fs::exists(f)) << f;
    before.push_back(test::read_text(f));
  }
  // Complete folders: nothing rebuilt.
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("rebuilt"), std::string::npos) << r.out;
  for (const fs::path& f : rendered) fs::remove(f);
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* what : {"rebuilt training_metrics.csv, activation_timings.csv from",
                           "rebuilt training_metrics.csv from", "rebuilt mlp_bench.csv, ",
                           "rebuilt resnet18_guess_overall.csv, resnet18_guess_layers.csv, "
                           "resnet18_guess_trace_32.json, resnet18_guess_trace_40.json from",
                           "rebuilt one_step_layers.csv, one_step_trace.json from",
                           "rebuilt roofline_points.csv, roofline.dat, roofline.gp",
                           "rebuilt summary.csv, report.md, plots/timing_comparison.dat"}) {
    EXPECT_NE(r.out.find(what), std::string::npos) << what << "\n" << r.out;
  }
  // The one-step profile is a finished run, with a section of its own: its phases and slowest
  // layer.
  const std::string md = test::read_text(dir / "report.md");
  EXPECT_EQ(md.find("did not finish"), std::string::npos) << md;
  EXPECT_NE(md.find("One-step training profiles"), std::string::npos) << md;
  EXPECT_NE(md.find("step: the backward pass is "), std::string::npos) << md;
  for (std::size_t i = 0; i < rendered.size(); ++i) {
    ASSERT_TRUE(fs::exists(rendered[i])) << rendered[i];
    EXPECT_EQ(test::read_text(rendered[i]), before[i]) << rendered[i];
  }
  // The study's validation figure alone deleted: its report.md (which drew it) says it belongs.
  // The folder's report, deleted too, is written again.
  const fs::path curves = dir / "study" / "plots" / "validation_curves.dat";
  const std::string curves_text = test::read_text(curves);
  fs::remove(curves);
  fs::remove(dir / "report.md");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rebuilt plots/validation_curves.dat from"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote " + (dir / "report.md").string()), std::string::npos) << r.out;
  EXPECT_EQ(test::read_text(curves), curves_text);
  EXPECT_EQ(test::read_text(dir / "report.md"), md);
  // An unreadable record: the rebuild names it and rebuilds nothing from it, then the report
  // refuses in one line naming the file (report.h: a broken result file throws) and leaves the
  // earlier report.md as it was.
  const std::string bench_json = (dir / "bench" / "mlp_bench.json").string();
  write_file_atomic(dir / "bench" / "mlp_bench.json", "{");
  fs::remove(dir / "bench" / "mlp_bench.csv");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("not rebuilt from " + bench_json), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.err.find(bench_json), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(test::read_text(dir / "report.md"), md);
  // An unreadable run.json is no study to rebuild: no rebuild line for it.
  write_file_atomic(dir / "cnn" / "run.json", "{");
  r = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("run.json"), std::string::npos) << r.out << r.err;
  EXPECT_EQ(test::read_text(dir / "report.md"), md);
}

// A study whose runs held out no validation split has no validation figure, and its report.md
// says so: a complete folder is left alone; with summary.csv gone, the rest comes back without one.
TEST(Cli, AStudyWithoutValidationGetsNoValidationFigureRebuilt) {
  TempDir dir;
  auto r = run_nnperf(fmt::format(
      "activations --activations relu --synthetic --hidden 16 --epochs 2 --warmup-epochs 1 "
      "--limit-train 256 --limit-test 128 --val-split 0 --threads 1 --progress quiet "
      "--no-tensorboard --out-dir '{}'",
      (dir / "study").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_FALSE(fs::exists(dir / "study" / "plots" / "validation_curves.dat"));
  r = run_nnperf(fmt::format("report '{}'", (dir / "study").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("rebuilt"), std::string::npos) << r.out;
  fs::remove(dir / "study" / "summary.csv");
  r = run_nnperf(fmt::format("report '{}'", (dir / "study").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rebuilt summary.csv from"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(dir / "study" / "plots" / "validation_curves.dat"));
}

TEST(Cli, VerboseDispatchNamesEachLayersAlgorithm) {
  TempDir dir;
  const auto r = test::run_command(
      fmt::format("NNPERF_VERBOSE=dispatch '{}' train {} --epochs 1 --impl naive --out-dir '{}'",
                  NNPERF_BINARY, kSmall, dir.path().string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("nnperf dispatch: node 1 'fc1' Linear(784->32)"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("gemm=naive forward m32n32k784"), std::string::npos) << r.err;
}

TEST(Cli, ListingsComeFromTheRegistries) {
  auto r = run_nnperf("train --list-algorithms");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"naive", "parallel", "blocked", "blas"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  r = run_nnperf("mlp-bench --list-activations");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"ReLU", "GELU", "Sigmoid", "Tanh", "ELU", "LeakyReLU", "SiLU", "Mish"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
}

TEST(Cli, DevicesReportsCpuAndBlas) {
  const auto r = run_nnperf("devices --threads 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cpu:"), std::string::npos);
  EXPECT_NE(r.out.find("OpenBLAS"), std::string::npos);
  EXPECT_NE(r.out.find("cuda:"), std::string::npos);
}

TEST(Cli, PeaksQuickMergesIntoPeaksJsonAndDrawsTheSweep) {
  TempDir dir;
  const fs::path file = dir / "peaks.json";
  const nlohmann::json other = {
      {"gpu-box",
       {{"description", "A100"}, {"peak_gbps", 1555}, {"peak_gflops", {{"fp32", 19500}}}}}};
  { std::ofstream(file) << other.dump(); }
  const auto r = run_nnperf(fmt::format(
      "peaks --quick --rounds 1 --steps-per-octave 1 --sgemm-n 64 --env test-env --out '{}'",
      file.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  for (const char* section :
       {"FMA", "Bandwidth plateaus", "DRAM", "STREAM", "SGEMM 64^3", "peak_gbps"}) {
    EXPECT_NE(r.out.find(section), std::string::npos) << section << "\n" << r.out;
  }
  const auto j = nlohmann::json::parse(test::read_text(file));
  ASSERT_EQ(j.size(), 2u) << j.dump();
  EXPECT_EQ(j["gpu-box"], other["gpu-box"]);
  for (const char* key :
       {"description", "peak_gbps", "peak_gflops", "machine", "method", "compute_ceilings",
        "memory_ceilings", "bandwidth_sweep", "stream_triad", "sgemm", "measured"}) {
    EXPECT_TRUE(j["test-env"].contains(key)) << key;
  }
  EXPECT_EQ(j["test-env"]["method"]["quick"], true);
  // The plot's data and script always; the images when gnuplot is installed. One figure per env
  // with a sweep, named after it (the A100 entry has none).
  const fs::path dat = dir / "peaks_bandwidth_test-env.dat";
  ASSERT_TRUE(fs::exists(dat));
  EXPECT_TRUE(fs::exists(dir / "peaks_bandwidth_test-env.gp"));
  EXPECT_FALSE(fs::exists(dir / "peaks_bandwidth_gpu-box.dat"));
  // The figure is rendered from peaks.json: nnperf report rebuilds a missing one byte for byte,
  // and draws a merged env's (a name with a space and a slash) under a file-safe name.
  const std::string data = test::read_text(dat);
  auto doc = nlohmann::json::parse(test::read_text(file));
  doc["lab 2/b"] = doc["test-env"];
  write_file_atomic(file, doc.dump());
  fs::remove(dat);
  const auto rep = run_nnperf(fmt::format("report '{}'", dir.path().string()));
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const std::string lab2 = peaks_bandwidth_stem(file, "lab 2/b").filename().string();
  EXPECT_EQ(lab2.rfind("peaks_bandwidth_lab_2_b-", 0), 0u) << lab2;
  EXPECT_NE(rep.out.find(fmt::format("rebuilt {}.dat, {}.gp", lab2, lab2)), std::string::npos)
      << rep.out;
  EXPECT_NE(rep.out.find("peaks_bandwidth_test-env.dat from " + file.string()), std::string::npos)
      << rep.out;
  EXPECT_EQ(test::read_text(dat), data);
  // The same points under the merged env's title.
  const std::string merged = test::read_text(dir / (lab2 + ".dat"));
  const std::string body = data.substr(data.find('\n'));
  EXPECT_EQ(merged.substr(merged.find('\n')), body);
  EXPECT_NE(merged.find("(lab 2/b, "), std::string::npos) << merged.substr(0, 200);
}

TEST(Cli, PeaksRefusesACorruptPeaksJsonBeforeMeasuring) {
  TempDir dir;
  const fs::path file = dir / "peaks.json";
  { std::ofstream(file) << "{\"box\": {\"peak_gbps\": 1"; }
  const auto r = run_nnperf(fmt::format("peaks --quick --out '{}'", file.string()));
  EXPECT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.err.find(file.string()), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("FMA"), std::string::npos) << r.out;  // nothing measured
  EXPECT_EQ(test::read_text(file), "{\"box\": {\"peak_gbps\": 1");
}

}  // namespace
}  // namespace nnperf
