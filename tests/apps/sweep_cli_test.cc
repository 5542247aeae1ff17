// `nnperf sweep` end to end without Slurm: planning and its refusals, a local run merged and
// rendered, a cell killed mid-way and run again (no row lost or doubled), a finished sweep copied
// to another path, training cells, and the Slurm script's quoting run through bash with a
// stand-in sbatch. The real Slurm cluster is tests/slurm/slurm_sweep_test.sh.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "nnperf/io/csv.h"
#include "nnperf/io/files.h"
#include "nnperf/runs/sweep.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::run_command;
using test::run_nnperf;

std::string q(const fs::path& p) { return shell_quote(p.string()); }

// `nnperf sweep plan FLAGS --out-dir DIR`.
test::CommandResult plan(const fs::path& dir, const std::string& flags) {
  return run_nnperf(fmt::format("sweep plan {} --out-dir {}", flags, q(dir)));
}

nlohmann::json read(const fs::path& p) { return nlohmann::json::parse(test::read_text(p)); }

TEST(SweepQuote, EveryShellCharacterStaysLiteral) {
  EXPECT_EQ(shell_quote(""), "''");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  const std::string nasty = "x $HOME `id` \"q\" 'q' ; rm -rf / \\ %A\nline";
  const auto r = run_command("printf '%s' " + shell_quote(nasty));
  EXPECT_EQ(r.out, nasty);
}

TEST(SweepPlan, CellsCarryTheirCommandOutputAndEstimate) {
  test::TempDir t("sweep-plan");
  const fs::path dir = t / "s";
  auto r = run_nnperf(fmt::format("sweep plan --profile --models resnet18,alexnet --algorithms gemm,find "
                                  "--sizes 64,72,80 --sizes-per-cell 2 --stage sanity --out-dir {}", q(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("planned 8 cells in "), std::string::npos) << r.out;
  const nlohmann::json s = read(dir / "sweep.json");
  ASSERT_EQ(s["cells"].size(), 8u);
  const auto& c = s["cells"][1];
  EXPECT_EQ(c["name"], "resnet18_gemm_80-80");
  EXPECT_EQ(c["index"], 1);
  EXPECT_EQ(c["sizes"], nlohmann::json::array({80}));
  EXPECT_EQ(c["output"], "cells/resnet18_gemm_80-80");
  EXPECT_GT(c["estimated_seconds"].get<double>(), 0.0);
  const std::vector<std::string> args = c["args"];
  EXPECT_EQ(args[0], "profile");
  EXPECT_NE(std::find(args.begin(), args.end(), "cells/resnet18_gemm_80-80"), args.end());
  // At the same size an alexnet cell costs less than a resnet18 one (0.71 against 1.8 GFLOP per
  // image at 224 in the complexity model).
  EXPECT_EQ(s["cells"][5]["name"], "alexnet_gemm_80-80");
  EXPECT_LT(s["cells"][5]["estimated_seconds"].get<double>(), s["cells"][1]["estimated_seconds"].get<double>());

  // One sweep per folder; bad values named.
  r = run_nnperf(fmt::format("sweep plan --profile --models resnet18 --algorithms gemm --out-dir {}", q(dir)));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("already holds a sweep (sweep.json); one sweep per folder"), std::string::npos) << r.err;
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--profile --models resnet18 --algorithms strassen", "strassen"},
           {"--profile --models lenet --algorithms gemm", "lenet"},
           {"--profile --train --models resnet18 --algorithms gemm",
            "exactly one of --profile and --train"},
           {"--profile --models resnet18", "--algorithms: expected at least one"},
           {"--train --models resnet18", "--batch-sizes: expected at least one"},
           {"--profile --models resnet18,resnet18 --algorithms gemm",
            "--models: 'resnet18,resnet18' lists resnet18 twice"},
           // One model in two spellings is one model given twice.
           {"--profile --models resnet18,ResNet-18 --algorithms gemm",
            "lists resnet18 twice (as resnet18 and ResNet-18)"},
           {"--profile --models resnet18 --algorithms gemm,FFT,fft", "lists FFT twice"},
           // An empty item is refused, not dropped.
           {"--profile --models resnet18,,vgg16 --algorithms gemm", "(item 2 is empty)"},
           {"--profile --models MLP --algorithms gemm", "mlp-bench times the MLP"}}) {
    r = run_nnperf(fmt::format("sweep plan {} --out-dir {}", flags, q(t / "other")));
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << ": " << r.err;
    EXPECT_FALSE(fs::exists(t / "other" / "sweep.json")) << flags;
  }
  // Cells are named, and their profiles run, with the registries' spellings: the files a cell's
  // profile writes are the ones status and merge look for.
  r = run_nnperf(fmt::format(
      "sweep plan --profile --models ResNet-18 --algorithms Implicit-GEMM,FIND --sizes 32 "
      "--stage sanity --out-dir {}",
      q(t / "canon")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto canon = nlohmann::json::parse(test::read_text(t / "canon" / "sweep.json"));
  EXPECT_EQ(canon["cells"][0]["name"], "resnet18_implicit_gemm_32-32");
  EXPECT_EQ(canon["cells"][1]["name"], "resnet18_find_32-32");
}

TEST(SweepLocal, RunsMergesReportsAndSurvivesAMove) {
  test::TempDir t("sweep-local");
  const fs::path dir = t / "a b";
  ASSERT_EQ(plan(dir, "--profile --models resnet18 --algorithms gemm,direct "
                      "--sizes 32,40 --sizes-per-cell 1 --stage sanity").exit_code, 0);
  // Not done yet: merge refuses and names the cells.
  auto r = run_nnperf("sweep merge " + q(dir));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("4 cells are not done (resnet18_gemm_32-32"), std::string::npos) << r.err;
  r = run_nnperf(fmt::format("sweep run {} --local --jobs 2", q(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("4 cells: 4 done, 0 running, 0 failed, 0 pending"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged 4 cells (4 rows)"), std::string::npos) << r.out;
  const fs::path overall = dir / "merged" / "resnet18_gemm" / "resnet18_gemm_overall.csv";
  ASSERT_TRUE(fs::exists(overall));
  const CsvTable o = read_csv(overall);
  ASSERT_EQ(o.rows.size(), 2u);
  EXPECT_EQ(o.cell(0, o.require("input_size")), "32");
  EXPECT_EQ(o.cell(1, o.require("input_size")), "40");
  const nlohmann::json rec = read(dir / "merged" / "sweep_records.json");
  EXPECT_EQ(rec["records"].size(), 4u);
  EXPECT_EQ(rec["records"][0]["cell"], "resnet18_gemm_32-32");
  EXPECT_EQ(rec["context"]["cells"], 4);
  // Running again runs nothing.
  r = run_nnperf(fmt::format("sweep run {} --local", q(dir)));
  EXPECT_NE(r.out.find("0 of 4 cells to run"), std::string::npos) << r.out;
  // The merged folder is one sweep to `report`.
  r = run_nnperf("report " + q(dir / "merged"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string md = test::read_text(dir / "merged" / "report.md");
  EXPECT_NE(md.find("resnet18 batch 1 at 32x32"), std::string::npos) << md;
  // It keeps the cells' profile records joined, so the report rebuilds its CSVs byte for byte.
  const fs::path group = dir / "merged" / "resnet18_gemm";
  EXPECT_TRUE(fs::exists(group / "profile_records.jsonl"));
  EXPECT_TRUE(fs::exists(group / "resnet18_gemm_trace_40.json"));
  const std::string layers = test::read_text(group / "resnet18_gemm_layers.csv"),
                    overall_text = test::read_text(overall);
  fs::remove(overall);
  fs::remove(group / "resnet18_gemm_layers.csv");
  r = run_nnperf("report " + q(dir / "merged"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rebuilt resnet18_gemm_overall.csv, resnet18_gemm_layers.csv from"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(test::read_text(overall), overall_text);
  EXPECT_EQ(test::read_text(group / "resnet18_gemm_layers.csv"), layers);
  EXPECT_EQ(test::read_text(dir / "merged" / "report.md").find("did not finish"),
            std::string::npos);

  // Copied elsewhere (every path inside is relative), it merges to the same rows.
  const fs::path moved = t / "moved 'here' $X";
  fs::copy(dir, moved, fs::copy_options::recursive);
  r = run_nnperf("sweep merge " + q(moved));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_text(moved / "merged" / "resnet18_gemm" / "resnet18_gemm_overall.csv"),
            test::read_text(overall));
  r = run_nnperf("status " + q(moved));
  EXPECT_NE(r.out.find("4 cells: 4 done"), std::string::npos) << r.out;
}

TEST(SweepLocal, AKilledCellContinuesWhereItsRowsStop) {
  test::TempDir t("sweep-kill");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir, "--profile --models resnet18 --algorithms gemm "
                      "--sizes 48,56,64,72,80,88 --stage sanity").exit_code, 0);
  const fs::path overall = dir / "cells" / "resnet18_gemm_48-88" / "resnet18_gemm_overall.csv";
  // Start the cell, kill its profiler (and the cell runner) as soon as the first row is written
  // (waiting up to 2 minutes: a loaded 2-core machine once took over 30 s for the first size).
  const auto r = run_command(fmt::format(
      "( '{}' sweep run-cell {} 0 >/dev/null 2>&1 & ); for i in $(seq 1 2400); do "
      "[ -f {} ] && [ $(wc -l < {}) -ge 2 ] && break; sleep 0.05; done; "
      // [s]/[o]: patterns that do not match this shell's own command line.
      "pkill -9 -f '[s]weep run-cell {} 0'; pkill -9 -f '[o]utput-dir cells/resnet18_gemm_48-88'; "
      "sleep 0.2; n=$(wc -l < {}); echo ${{n:-0}}",
      NNPERF_BINARY, q(dir), q(overall), q(overall), dir.string(), q(overall)));
  ASSERT_FALSE(r.out.empty()) << r.err;
  const int lines = std::stoi(r.out);
  ASSERT_GE(lines, 2) << "no row within 2 minutes: " << r.err;
  if (lines == 7) GTEST_SKIP() << "the cell finished before it could be killed";
  auto st = run_nnperf("status " + q(dir));
  EXPECT_NE(st.out.find("stale"), std::string::npos) << st.out;
  st = run_nnperf(fmt::format("sweep run {} --local", q(dir)));
  ASSERT_EQ(st.exit_code, 0) << st.out << st.err;
  EXPECT_NE(st.out.find("merged 1 cell (6 rows)"), std::string::npos) << st.out;
  const CsvTable o = read_csv(dir / "merged" / "resnet18_gemm" / "resnet18_gemm_overall.csv");
  std::set<std::string> sizes;
  for (std::size_t i = 0; i < o.rows.size(); ++i) sizes.insert(o.cell(i, o.require("input_size")));
  EXPECT_EQ(sizes, (std::set<std::string>{"48", "56", "64", "72", "80", "88"}));
  EXPECT_EQ(o.rows.size(), 6u);
  // The second run resumed: it profiled only the sizes the first had not written.
  EXPECT_NE(test::read_text(dir / "logs" / "resnet18_gemm_48-88.log")
                .find(fmt::format("({} sizes profiled, {} already done)", 7 - lines, lines - 1)),
            std::string::npos);
}

TEST(SweepLocal, TrainingCellsMergeIntoOneMetricsCsv) {
  test::TempDir t("sweep-train");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir, "--train --models resnet18 --batch-sizes 2,3 --thread-counts 1 "
                      "--iters 1 --warmup-iters 0 --input-size 32").exit_code, 0);
  const auto r = run_nnperf(fmt::format("sweep run {} --local --jobs 2", q(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const CsvTable m = read_csv(dir / "merged" / "metrics.csv");
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.cell(0, m.require("label")), "resnet18_b2_t1");
  EXPECT_EQ(m.cell(1, m.require("label")), "resnet18_b3_t1");
  EXPECT_EQ(m.header.size(), 22u);
  // The merged folder is a report of its own: a row per run and the fastest per batch size.
  const auto rep = run_nnperf(fmt::format("report {}", q(dir / "merged")));
  ASSERT_EQ(rep.exit_code, 0) << rep.out << rep.err;
  const std::string md = test::read_text(dir / "merged" / "report.md");
  EXPECT_NE(md.find("Fixed-iteration training runs"), std::string::npos) << md;
  EXPECT_NE(md.find("resnet18\\_b3\\_t1"), std::string::npos) << md;
  EXPECT_NE(md.find("resnet18 at batch 2: fastest run "), std::string::npos) << md;
  // The merged metrics.csv is rebuilt from sweep_records.json, byte for byte.
  const std::string metrics = test::read_text(dir / "merged" / "metrics.csv");
  fs::remove(dir / "merged" / "metrics.csv");
  const auto again = run_nnperf(fmt::format("report {}", q(dir / "merged")));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("rebuilt metrics.csv from"), std::string::npos) << again.out;
  EXPECT_EQ(test::read_text(dir / "merged" / "metrics.csv"), metrics);
}

TEST(SweepSlurm, TheScriptRunsEachCellThroughBashWhateverThePath) {
  test::TempDir t("sweep-slurm");
  const fs::path dir = t / "sw 'it''s' $HOME `x` %A";
  ASSERT_EQ(plan(dir, "--profile --models resnet18 --algorithms gemm --sizes 32,40 "
                      "--sizes-per-cell 1 --stage sanity").exit_code, 0);
  auto r = run_nnperf(fmt::format("sweep run {} --slurm --dry-run --partition p1 --max-parallel 3", q(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("not submitted: --dry-run"), std::string::npos) << r.out;
  const std::string submit = test::read_text(dir / "slurm" / "submit_1.sh");
  EXPECT_NE(submit.find("'--array=0-1%3'"), std::string::npos) << submit;
  EXPECT_NE(submit.find("'--partition=p1'"), std::string::npos) << submit;
  EXPECT_NE(submit.find("%%A/slurm/%A_%a.out"), std::string::npos) << submit;  // a literal % doubled
  // A stand-in sbatch: runs the script once per array index with SLURM_ARRAY_TASK_ID set.
  const fs::path bin = t / "bin";
  fs::create_directories(bin);
  {
    std::ofstream f(bin / "sbatch");
    f << "#!/bin/bash\nfor a in \"$@\"; do case $a in --array=*) arr=${a#--array=}; arr=${arr%%\\%*};; "
         "esac; script=$a; done\nfor i in $(seq ${arr%-*} ${arr#*-}); do SLURM_ARRAY_TASK_ID=$i bash "
         "\"$script\" || exit 1; done\necho 4242\n";
  }
  fs::permissions(bin / "sbatch", fs::perms::owner_all);
  r = run_command(fmt::format("PATH={}:$PATH sh {}", q(bin), q(dir / "slurm" / "submit_1.sh")));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  r = run_nnperf("status " + q(dir));
  EXPECT_NE(r.out.find("2 cells: 2 done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("merged 2 cells (2 rows)"), std::string::npos) << r.out;
  // Submitting again submits nothing.
  r = run_nnperf(fmt::format("sweep run {} --slurm --dry-run", q(dir)));
  EXPECT_NE(r.out.find("nothing to submit"), std::string::npos) << r.out;
}

TEST(SweepSlurm, OptionsSbatchWouldRejectAreRefusedBeforeAnythingIsWritten) {
  test::TempDir t("sweep-slurm-bad");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir, "--profile --models resnet18 --algorithms gemm --sizes 32 "
                      "--stage sanity").exit_code, 0);
  for (const auto& [flags, expected] : std::vector<std::pair<std::string, std::string>>{
           {"--slurm --time bogus", "--time 'bogus': expected a Slurm time limit"},
           {"--slurm --time 1-", "--time '1-'"},
           {"--slurm --time 1:2:3:4", "--time '1:2:3:4'"},
           {"--slurm --mem lots", "--mem 'lots': expected a whole number"},
           {"--slurm --mem 16GB", "--mem '16GB'"},
           {"--slurm --partition 'a b'", "--partition 'a b': expected a Slurm name"},
           {"--local --time 10", "--time is an option of --slurm, not of --local"},
           {"--local --dry-run", "--dry-run is an option of --slurm"},
           {"--slurm --jobs 2", "--jobs is an option of --local"}}) {
    const auto r = run_nnperf(fmt::format("sweep run {} {}", q(dir), flags));
    EXPECT_EQ(r.exit_code, 2) << flags;
    EXPECT_NE(r.err.find(expected), std::string::npos) << flags << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(dir / "slurm"));
  EXPECT_FALSE(fs::exists(dir / "state"));
  // Every form sbatch documents is taken.
  const auto r = run_nnperf(fmt::format("sweep run {} --slurm --dry-run --time 2-12:30:00 --mem 0", q(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string submit = test::read_text(dir / "slurm" / "submit_1.sh");
  EXPECT_NE(submit.find("'--time=2-12:30:00' '--mem=0'"), std::string::npos) << submit;
  for (const char* time : {"90", "90:30", "1:30:00", "2-12", "2-12:30", "UNLIMITED"}) {
    EXPECT_EQ(run_nnperf(fmt::format("sweep run {} --slurm --dry-run --time {} --mem 512M", q(dir), time)).exit_code, 0)
        << time;
  }
}

TEST(SweepPlan, CellsCarryAMemoryEstimateThatRunChecksBeforeStarting) {
  test::TempDir t("sweep-memory");
  const fs::path dir = t / "s";
  auto r = run_nnperf(fmt::format("sweep plan --profile --models resnet18 --algorithms gemm --sizes 64,32,1024 "
                                  "--sizes-per-cell 2 --stage sanity --out-dir {}", q(dir)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("largest cell: resnet18_gemm_1024-1024 needs at least"), std::string::npos) << r.out;
  const nlohmann::json sweep = nlohmann::json::parse(test::read_text(dir / "sweep.json"));
  const double small = sweep["cells"][0]["estimated_memory_bytes"];  // sizes 64,32: its largest is 64
  const double big = sweep["cells"][1]["estimated_memory_bytes"];
  // resnet18 at 1x3x1024x1024: about 700 MiB of node outputs and parameters, the figure the
  // profiler's own check uses; at 64 the 46.8 MB of parameters dominate.
  EXPECT_NEAR(big / (1 << 20), 700.6, 5.0);
  EXPECT_GT(small, 46.0e6);
  EXPECT_LT(small, 60.0e6);
  // Refused before any cell starts, here by this machine's memory and under Slurm by --mem.
  {
    const test::ScopedEnv cap("NNPERF_MEMORY_LIMIT", "300M");
    r = run_nnperf(fmt::format("sweep run {} --local", q(dir)));
  }
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("sweep cell resnet18_gemm_1024-1024 (sweep.json's estimate at its largest input) needs"),
            std::string::npos) << r.err;
  r = run_nnperf(fmt::format("sweep run {} --slurm --dry-run --mem 512M", q(dir)));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--mem 512M: cell resnet18_gemm_1024-1024 needs at least"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "state"));
  EXPECT_FALSE(fs::exists(dir / "slurm"));
  EXPECT_EQ(run_nnperf(fmt::format("sweep run {} --slurm --dry-run --mem 1G", q(dir))).exit_code, 0);
}

TEST(SweepStatus, BrokenStateAndRunFilesAreNamedNotHidden) {
  test::TempDir t("sweep-status");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir, "--profile --models resnet18 --algorithms gemm --sizes 32 "
                      "--stage sanity").exit_code, 0);
  fs::create_directories(dir / "state");
  std::ofstream(dir / "state" / "resnet18_gemm_32-32.json") << R"({"state": "weird"})";
  auto r = run_nnperf("status " + q(dir));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("resnet18_gemm_32-32.json: state 'weird' (expected pending, queued, running, done or "
                       "failed)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1 cell: 0 done, 0 running, 0 failed, 0 pending, 1 with an unreadable state file"),
            std::string::npos) << r.out;
  r = run_nnperf(fmt::format("sweep run {} --local", q(dir)));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("state 'weird'"), std::string::npos) << r.err;
  // A profile folder: a corrupt run.json is reported as such (not "no profile sweeps"), and an
  // overall CSV with a header only has no last row to date.
  const fs::path p = t / "p";
  fs::create_directories(p / "bad");
  std::ofstream(p / "bad" / "run.json") << "{corrupt";
  r = run_nnperf("status " + q(p / "bad"));
  EXPECT_NE(r.out.find("unreadable run.json: "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("no profile sweeps"), std::string::npos) << r.out;
  ASSERT_EQ(run_nnperf(fmt::format("profile --model resnet18 --algorithm gemm --sizes 32 --warmup 0 --measure 1 "
                                   "--no-layers --output-dir {}", q(p / "a"))).exit_code, 0);
  const std::string overall = test::read_text(p / "a" / "resnet18_gemm_overall.csv");
  std::ofstream(p / "a" / "resnet18_gemm_overall.csv") << overall.substr(0, overall.find('\n') + 1);
  r = run_nnperf("status " + q(p / "a"));
  EXPECT_NE(r.out.find("not started"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("no rows yet"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("last row"), std::string::npos) << r.out;
}

// A hand-edited sweep.json: every field the runner, status and merge read is checked when the
// file is read, and a missing or mistyped one is named with its file and path (it was read
// unchecked: "internal error: [json.exception.type_error.302] ...", or undefined behaviour).
TEST(SweepStatus, AMistypedSweepJsonFieldIsNamedByStatusRunAndMerge) {
  test::TempDir t("sweep-json");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir,
                 "--profile --models resnet18 --algorithms gemm --sizes 32 "
                 "--stage sanity")
                .exit_code,
            0);
  const nlohmann::json good = read(dir / "sweep.json");
  struct Case {
    const char* key;
    nlohmann::json value;  // null: the field removed
    const char* expect;
  };
  const std::vector<Case> cases{
      {"output", nullptr, "cells[0].output"},
      {"output", "../elsewhere", "output '../elsewhere' is not a folder inside the sweep"},
      {"estimated_seconds", "x", "cells[0].estimated_seconds"},
      {"sizes", "x", "cells[0]: sizes: expected a non-empty list"},
      {"sizes", nlohmann::json::array({0}), "sizes: expected positive integers"},
      {"model", 5, "cells[0].model"},
      {"kind", "train", "kind is not the sweep's (profile)"},
  };
  for (const auto& c : cases) {
    nlohmann::json bad = good;
    if (c.value.is_null()) {
      bad["cells"][0].erase(c.key);
    } else {
      bad["cells"][0][c.key] = c.value;
    }
    std::ofstream(dir / "sweep.json") << bad.dump(2);
    for (const char* cmd : {"status", "sweep merge", "sweep run"}) {
      const auto r = run_nnperf(
          fmt::format("{} {}{}", cmd, q(dir), std::string(cmd) == "sweep run" ? " --local" : ""));
      EXPECT_NE(r.exit_code, 0) << cmd << " " << c.key;
      EXPECT_NE(r.err.find("sweep.json"), std::string::npos)
          << cmd << " " << c.key << ": " << r.err;
      EXPECT_NE(r.err.find(c.expect), std::string::npos) << cmd << " " << c.key << ": " << r.err;
      EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    }
  }
  nlohmann::json empty = good;
  empty["cells"] = nlohmann::json::array();
  std::ofstream(dir / "sweep.json") << empty.dump(2);
  auto r = run_nnperf("status " + q(dir));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("the cells array is empty"), std::string::npos) << r.err;
  // A state file whose fields have other types than the runner writes is named, field and all.
  std::ofstream(dir / "sweep.json") << good.dump(2);
  fs::create_directories(dir / "state");
  std::ofstream(dir / "state" / "resnet18_gemm_32-32.json")
      << R"({"state": "done", "rows": "x", "host": 5})";
  r = run_nnperf("status " + q(dir));
  EXPECT_NE(r.out.find("resnet18_gemm_32-32.json: field 'host': expected a string"),
            std::string::npos)
      << r.out << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

// sbatch failing (no controller): the cells go back to the state they had, so status shows no
// job that was never submitted.
TEST(SweepSlurm, AFailedSbatchLeavesTheCellsAsTheyWere) {
  test::TempDir t("sweep-sbatch-fails");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir,
                 "--profile --models resnet18 --algorithms gemm --sizes 32,40 "
                 "--sizes-per-cell 1 --stage sanity")
                .exit_code,
            0);
  const fs::path bin = t / "bin";
  fs::create_directories(bin);
  std::ofstream(bin / "sbatch")
      << "#!/bin/sh\necho 'sbatch: error: cannot reach the controller' >&2\nexit 1\n";
  fs::permissions(bin / "sbatch", fs::perms::owner_all);
  fs::create_directories(dir / "state");
  const std::string failed = R"({"state": "failed", "exit_code": 3, "error": "earlier"})";
  std::ofstream(dir / "state" / "resnet18_gemm_40-40.json") << failed;
  auto r = run_command(
      fmt::format("PATH={}:$PATH '{}' sweep run {} --slurm", q(bin), NNPERF_BINARY, q(dir)));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("exited with status 1"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "state" / "resnet18_gemm_32-32.json"));
  EXPECT_EQ(read(dir / "state" / "resnet18_gemm_40-40.json"), nlohmann::json::parse(failed));
  r = run_nnperf("status " + q(dir));
  EXPECT_NE(r.out.find("1 failed, 1 pending"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("queued"), std::string::npos) << r.out;
}

TEST(SweepMerge, ABadCellFileIsNamedWithWhatIsWrongAndNothingIsMerged) {
  test::TempDir t("sweep-merge-bad");
  const fs::path dir = t / "s";
  ASSERT_EQ(plan(dir, "--profile --models resnet18 --algorithms gemm --sizes 32,40,48 "
                      "--sizes-per-cell 2 --stage sanity").exit_code, 0);
  ASSERT_EQ(run_nnperf(fmt::format("sweep run {} --local", q(dir))).exit_code, 0);
  fs::remove_all(dir / "merged");
  const fs::path file = dir / "cells" / "resnet18_gemm_32-40" / "resnet18_gemm_overall.csv";
  const std::string good = test::read_text(file);
  const std::string header = good.substr(0, good.find('\n') + 1);
  const std::string row32 = good.substr(header.size(), good.find('\n', header.size()) + 1 - header.size());
  const std::string row40 = good.substr(header.size() + row32.size());
  const std::string other = test::read_text(dir / "cells" / "resnet18_gemm_48-48" / "resnet18_gemm_overall.csv");
  const std::string row48 = other.substr(other.find('\n') + 1);
  for (const auto& [content, expected] : std::vector<std::pair<std::string, std::string>>{
           {"", "resnet18_gemm_overall.csv: empty, not even a header"},
           {header + row32, "resnet18_gemm_overall.csv: no row for size 40 (cell resnet18_gemm_32-40 planned "
                            "sizes 32, 40; the file has 1 row)"},
           {good + row40 + row48, "more than one row for size 40; a row for size 48, not planned"},
           {"a,b\n1,2\n", "resnet18_gemm_overall.csv: no column 'input_size'"}}) {
    std::ofstream(file, std::ios::trunc) << content;
    const auto r = run_nnperf("sweep merge " + q(dir));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(expected), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir / "merged"));
  }
  std::ofstream(file, std::ios::trunc) << good;
  EXPECT_EQ(run_nnperf("sweep merge " + q(dir)).exit_code, 0);
  EXPECT_TRUE(fs::exists(dir / "merged"));
}

}  // namespace
}  // namespace nnperf
