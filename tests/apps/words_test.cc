// What users read names the studies by what they are (the activation-timing study, the MLP
// implementation benchmark, the convolution-algorithm profiler) or names the published program a
// format follows, never by the project's internal numbering ("seed 002", "the seed-000 program").
// Checked on every subcommand's --help, the listings, and the files of small real runs.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <sstream>

#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::run_nnperf;
using test::TempDir;

// "seed-000", "seed 002", "Seed_001", "seeds 000 and 001", "the seed's order", "the seeds'
// formats": internal words. "--seed", "random seed", "seeded" are fine.
const std::regex kInternal(R"(seeds?[-_ ]?0\d\d|seed's|seeds')", std::regex::icase);

// Every line of `text` with an internal word, prefixed by `where`.
std::string internal_words(const std::string& text, const std::string& where) {
  std::string found;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (std::regex_search(line, kInternal)) found += fmt::format("{}: {}\n", where, line);
  }
  return found;
}

// The subcommands listed by `nnperf --help` (the lines after "Subcommands:").
std::vector<std::string> subcommands() {
  const auto r = run_nnperf("--help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string line;
  bool in_list = false;
  while (std::getline(in, line)) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_list = true;
    } else if (in_list && line.size() > 2 && line[0] == ' ' && std::isalpha(line[2])) {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    }
  }
  return names;
}

TEST(Words, NoInternalNumbersInAnyHelpOrListing) {
  const auto names = subcommands();
  // The commands the README documents are all there (the list is read, not assumed).
  for (const char* c : {"train", "activations", "mlp-bench", "profile", "status", "peaks", "verify",
                        "bench", "devices"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), c), names.end()) << c;
  }
  std::vector<std::string> invocations{"--help"};
  for (const auto& n : names) invocations.push_back(n + " --help");
  for (const char* extra : {"train --list-algorithms", "train --list-activations",
                            "profile --list-models", "profile --list-algorithms"}) {
    invocations.emplace_back(extra);
  }
  std::string found;
  for (const auto& args : invocations) {
    const auto r = run_nnperf(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_FALSE(r.out.empty()) << args;
    found += internal_words(r.out + r.err, "nnperf " + args);
  }
  EXPECT_EQ(found, "");
}

TEST(Words, TheStudiesAreNamedByWhatTheyAre) {
  const auto top = run_nnperf("--help");
  EXPECT_NE(top.out.find("The activation-timing study"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("The MLP implementation benchmark"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("The convolution-algorithm profiler"), std::string::npos) << top.out;
}

// Every file a small activation-timing study writes (report.md, summary.csv, the runs'
// JSON and CSV, the plot scripts), and the files of a one-size profile sweep.
TEST(Words, NoInternalNumbersInWhatRunsWrite) {
  TempDir dir;
  auto r = run_nnperf(fmt::format(
      "activations --synthetic --activations relu --hidden 16 --epochs 2 --warmup-epochs 1 "
      "--batch-size 32 --limit-train 600 --val-split 100 --limit-test 100 --threads 1 "
      "--progress quiet --out-dir '{}'",
      (dir / "study").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  std::string found = internal_words(r.out + r.err, "activations output");
  r = run_nnperf(
      fmt::format("profile --model resnet18 --algorithm gemm --stage sanity --sizes 32 --no-layers "
                  "--threads 1 --progress quiet --output-dir '{}'",
                  (dir / "profile").string()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  found += internal_words(r.out + r.err, "profile output");

  int text_files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir.path())) {
    const std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".md" && ext != ".csv" && ext != ".json" && ext != ".gp"))
      continue;
    ++text_files;
    found += internal_words(test::read_text(e.path()), e.path().string());
  }
  EXPECT_TRUE(fs::exists(dir / "study" / "report.md"));
  EXPECT_GE(text_files, 8);  // report, summary, run files, plot scripts, profile CSVs and run.json
  EXPECT_EQ(found, "");
  const std::string report = test::read_text(dir / "study" / "report.md");
  EXPECT_EQ(report.rfind("# Activation-timing study\n", 0), 0u) << report.substr(0, 200);
  EXPECT_NE(report.find("usra-survey's `MLP.py`"), std::string::npos);
}

}  // namespace
}  // namespace nnperf
