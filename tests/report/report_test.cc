// The report: escaping (HTML, Markdown), base64 against known vectors, a report rebuilt from a
// real results folder (two profile sweeps, a roofline, a complexity JSON) whose folder name is an
// HTML injection attempt, and the HTML opened in headless Chromium (scripts/check_report_html.py).
#include "nnperf/report/report.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "nnperf/core/error.h"
#include "nnperf/io/files.h"
#include "nnperf/report/document.h"
#include "test_util.h"

namespace nnperf {
namespace {

const std::string kEvil = "<img src=x onerror=alert(1)>";

TEST(ReportDocument, Escaping) {
  EXPECT_EQ(html_escape(kEvil), "&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(html_escape("a&b \"q\" 'x'"), "a&amp;b &quot;q&quot; &#39;x&#39;");
  EXPECT_EQ(markdown_escape(kEvil), "&lt;img src=x onerror=alert(1)&gt;");
  EXPECT_EQ(markdown_escape("a|b *c* _d_ [e](f) `g` \\ #h\nz"),
            "a\\|b \\*c\\* \\_d\\_ \\[e\\](f) \\`g\\` \\\\ \\#h z");
}

TEST(ReportDocument, Base64KnownVectors) {
  // RFC 4648 section 10.
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\x00\x80", 3)), "/wCA");
}

TEST(ReportDocument, EveryStringEscapedInBothRenderings) {
  ReportDocument d;
  d.title = kEvil;
  d.intro = {kEvil};
  ReportSection s;
  s.title = kEvil;
  s.paragraphs = {kEvil};
  s.recommendations = {kEvil};
  s.tables.push_back({kEvil, {kEvil, "n"}, {{kEvil, "1.5"}}, {false, true}, kEvil});
  d.sections.push_back(s);
  const std::string html = render_html(d);
  const std::string md = render_markdown(d, ".");
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(md.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  // Self-contained: no URL the browser would fetch.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_NE(html.find("Content-Security-Policy"), std::string::npos);
}

class ReportFolder : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir("nnperf-report");
    const std::filesystem::path sweeps = dir_->path() / kEvil;
    for (const char* algo : {"gemm", "winograd"}) {
      const auto r =
          test::run_nnperf(fmt::format("profile --model resnet18 --algorithm {} --stage sanity "
                                       "--sizes 32 --threads 1 --output-dir '{}'",
                                       algo, (sweeps / algo).string()));
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    // The gemm sweep's files again as if measured on a GPU launched as CUDA graphs (run.json's
    // setup says so): the report must not compare it as the same algorithm as the CPU's.
    const std::filesystem::path gpu = dir_->path() / "gpu_gemm";
    std::filesystem::copy(sweeps / "gemm", gpu);
    nlohmann::json run = nlohmann::json::parse(test::read_text(gpu / "run.json"));
    run["setup"]["device"] = "cuda";
    run["setup"]["launch"] = "graph";
    write_file_atomic(gpu / "run.json", run.dump());
    // And once more as if find's candidates had included cuDNN's graph-API engines.
    const std::filesystem::path engines = dir_->path() / "gpu_gemm_engines";
    std::filesystem::copy(sweeps / "gemm", engines);
    run["setup"]["find_engines"] = true;
    write_file_atomic(engines / "run.json", run.dump());
    // And the two CPU sweeps as if their timed pass had been a training step (--pass train).
    for (const char* algo : {"gemm", "winograd"}) {
      const std::filesystem::path train = dir_->path() / "train" / algo;
      std::filesystem::create_directories(train.parent_path());
      std::filesystem::copy(sweeps / algo, train);
      nlohmann::json train_run = nlohmann::json::parse(test::read_text(train / "run.json"));
      train_run["setup"]["pass"] = "train";
      write_file_atomic(train / "run.json", train_run.dump());
    }
    auto r = test::run_nnperf(
        fmt::format("roofline '{}' --peak-compute 0.05 --peak-bw 10 --out-dir '{}'",
                    sweeps.string(), (dir_->path() / "roofline").string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = test::run_nnperf(fmt::format("complexity --model resnet18 --input-size 32 --json '{}'",
                                     (dir_->path() / "resnet18_complexity.json").string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static test::TempDir* dir_;
};
test::TempDir* ReportFolder::dir_ = nullptr;

TEST_F(ReportFolder, SectionsFindingsAndEscapedNames) {
  const ReportDocument d = build_report(dir_->path());
  std::vector<std::string> titles;
  for (const auto& s : d.sections) titles.push_back(s.title);
  const auto has = [&](const std::string& prefix) {
    return std::any_of(titles.begin(), titles.end(),
                       [&](const std::string& t) { return t.rfind(prefix, 0) == 0; });
  };
  EXPECT_TRUE(has("Roofline")) << fmt::format("{}", fmt::join(titles, " | "));
  EXPECT_TRUE(has("Convolution-algorithm profiles"));
  EXPECT_TRUE(has("Complexity"));
  EXPECT_TRUE(has("Machine and build"));
  const auto profile = std::find_if(
      d.sections.begin(), d.sections.end(),
      [](const ReportSection& s) { return s.title == "Convolution-algorithm profiles"; });
  ASSERT_NE(profile, d.sections.end());
  // Both sweeps share the model and size: the report says which algorithm won, whole model and per
  // shape.
  bool whole = false, shape = false, gpu = false, engines = false, trained = false,
       fell_back = false;
  for (const auto& r : profile->recommendations) {
    whole = whole || r.find("is fastest for the whole model") != std::string::npos;
    // Training steps are compared among themselves, never with inferences.
    if (r.find("training step") != std::string::npos) {
      trained = trained || r.rfind("resnet18 batch 1 at 32x32, training step: ", 0) == 0;
      EXPECT_TRUE(r.find(", training step: ") != std::string::npos ||
                  r.find(", training step, ") != std::string::npos)
          << r;
      EXPECT_EQ(r.find("on cuda"), std::string::npos) << r;
    }
    // winograd serves only resnet18's 3x3 stride-1 convolutions: its whole-model entry says the
    // others ran another algorithm, and which.
    if (r.find("is fastest for the whole model") != std::string::npos) {
      const std::size_t at = r.find("winograd (");
      fell_back = at != std::string::npos &&
                  r.find(" conv layers ran another; ran ", at) != std::string::npos &&
                  r.find("gemm:", at) != std::string::npos;
    }
    shape = shape || r.find("3x3 stride 1 convolutions") != std::string::npos;
    // The GPU copies are entries of their own beside the CPU's gemm, named by device, launch and
    // find's candidates.
    engines = engines || r.find("gemm on cuda (graph, engines)") != std::string::npos;
    if (r.find("gemm on cuda (graph)") != std::string::npos) {
      std::size_t gemms = 0;
      for (std::size_t at = r.find("gemm"); at != std::string::npos; at = r.find("gemm", at + 1))
        ++gemms;
      gpu = gemms >= 2;
    }
  }
  EXPECT_TRUE(whole);
  EXPECT_TRUE(shape);
  EXPECT_TRUE(gpu) << fmt::format("{}", fmt::join(profile->recommendations, " | "));
  EXPECT_TRUE(engines) << fmt::format("{}", fmt::join(profile->recommendations, " | "));
  EXPECT_TRUE(trained) << fmt::format("{}", fmt::join(profile->recommendations, " | "));
  EXPECT_TRUE(fell_back) << fmt::format("{}", fmt::join(profile->recommendations, " | "));
  const auto roof = std::find_if(d.sections.begin(), d.sections.end(), [](const ReportSection& s) {
    return s.title.rfind("Roofline", 0) == 0;
  });
  ASSERT_NE(roof, d.sections.end());
  EXPECT_NE(roof->recommendations.at(0).find("of the measured time is in memory-bound points"),
            std::string::npos);
  ASSERT_EQ(roof->figures.size(), 1u);

  const ReportFiles f = write_report(dir_->path());
  const std::string html = test::read_text(f.html);
  const std::string md = test::read_text(f.markdown);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_EQ(md.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;img src=x onerror=alert(1)&gt;"), std::string::npos);
  EXPECT_EQ(md.rfind("# nnperf report: ", 0), 0u);
  // Rebuilt again from the same files: the same report.
  EXPECT_EQ(write_report(dir_->path()).markdown, f.markdown);
  EXPECT_EQ(test::read_text(f.markdown), md);
}

TEST_F(ReportFolder, OpensInHeadlessChromium) {
  const ReportFiles f = write_report(dir_->path());
  const auto r = test::run_command(
      fmt::format("python3 '{}/scripts/check_report_html.py' '{}' --figures 1 --text 'Roofline' "
                  "--text '&lt;img src=x onerror=alert(1)&gt;' --absent '<img src=\"x\"'",
                  NNPERF_SOURCE_DIR, f.html.string()));
  if (r.exit_code == 77) GTEST_SKIP() << r.out;
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

TEST_F(ReportFolder, KeepsAnotherJobsReportMd) {
  test::TempDir out;
  write_file_atomic(out / "report.md", "# Activation study\n");
  const ReportFiles f = write_report(dir_->path(), out.path());
  EXPECT_EQ(f.markdown, out / "nnperf_report.md");
  EXPECT_EQ(test::read_text(out / "report.md"), "# Activation study\n");
  // Ours went beside it, whole: the Markdown under the report's title, the HTML a page.
  ASSERT_TRUE(std::filesystem::exists(out / "nnperf_report.md"));
  const std::string md = test::read_text(out / "nnperf_report.md");
  EXPECT_EQ(md.rfind("# nnperf report: ", 0), 0u) << md.substr(0, 80);
  EXPECT_NE(md.find("Roofline"), std::string::npos);
  EXPECT_EQ(f.html, out / "report.html");
  ASSERT_TRUE(std::filesystem::exists(out / "report.html"));
  const std::string html = test::read_text(out / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u) << html.substr(0, 80);
  EXPECT_NE(html.find("Roofline"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

// The training table says where each run ran: the CPU, or the GPU with how a CNN run's steps ran
// (its run context's cuda.launch, find's engines, cuDNN's BatchNorm); an MLP run by its
// hyperparameters' device.
TEST(Report, TrainingRunsSayWhereAndHowTheyRan) {
  test::TempDir dir;
  const auto cnn = [](const nlohmann::json& context) {
    return nlohmann::json{{"model", "resnet18"},
                          {"epochs", 2},
                          {"final_test_acc", 0.5},
                          {"imgs_per_sec", 100.0},
                          {"context", context}}
        .dump();
  };
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  std::filesystem::create_directories(dir / "c");
  std::filesystem::create_directories(dir / "d");
  write_file_atomic(dir / "a" / "final_results.json", cnn({{"device", "cpu"}}));
  write_file_atomic(dir / "b" / "final_results.json", cnn({{"device", "cuda"},
                                                           {"find_engines", true},
                                                           {"batchnorm", "own"},
                                                           {"cuda", {{"launch", "graph"}}}}));
  write_file_atomic(dir / "c" / "final_results.json", cnn({{"device", "cuda"},
                                                           {"find_engines", 3},
                                                           {"batchnorm", "cudnn"},
                                                           {"cuda", "not an object"}}));
  write_file_atomic(dir / "d" / "final_results.json",
                    R"({"activation": "ReLU", "final_test_acc": 0.8, "final_test_loss": 0.5, )"
                    R"("hyperparameters": {"device": "cuda", "epochs": 3, "batch_size": 64}})");
  const ReportDocument d = build_report(dir.path());
  const auto section =
      std::find_if(d.sections.begin(), d.sections.end(),
                   [](const ReportSection& s) { return s.title == "Training runs"; });
  ASSERT_NE(section, d.sections.end());
  const ReportTable& t = section->tables.at(0);
  ASSERT_EQ(t.header.at(2), "device");
  std::map<std::string, std::string> device;
  for (const auto& row : t.rows) device[row.at(0)] = row.at(2);
  EXPECT_EQ(device["a"], "cpu");
  EXPECT_EQ(device["b"], "cuda (graph, engines)");
  EXPECT_EQ(device["c"], "cuda (cuDNN BatchNorm)");  // no launch recorded; engines not a flag
  EXPECT_EQ(device["d"], "cuda");
}

// How the ceilings were measured is read as tables, never as raw JSON: the method's fields one
// per row (text, numbers, flags and lists in words), each list of records (the FMA trials) as a
// table of its own with its text columns first.
TEST(Report, CeilingsMethodIsTablesOfFieldsAndTrials) {
  test::TempDir dir;
  const nlohmann::json peaks = {
      {"vm",
       {{"description", "test machine"},
        {"peak_gflops", {{"fp32", 100.0}}},
        {"peak_gbps", 20.0},
        {"method",
         {{"rounds", 3},
          {"quick", true},
          {"statistic", "median"},
          {"working_set_range", {4096, 8192}},
          {"other_processes_cpu_seconds", nullptr},
          {"fma_trials",
           {{{"name", "avx2 fma"}, {"simd", "avx2"}, {"chains", 8}, {"gflops_1thread", 50.5}},
            {{"name", "avx2 fma"},
             {"simd", "avx2"},
             {"chains", 12},
             {"gflops_1thread", 51.25}}}}}}}}};
  std::filesystem::create_directories(dir / "peaks");
  write_file_atomic(dir / "peaks" / "peaks.json", peaks.dump());
  const ReportDocument d = build_report(dir.path());
  const auto section = std::find_if(d.sections.begin(), d.sections.end(), [](const auto& s) {
    return s.title.rfind("Measured ceilings", 0) == 0;
  });
  ASSERT_NE(section, d.sections.end());
  ASSERT_EQ(section->tables.size(), 3u);
  const ReportTable& fields = section->tables.at(1);
  EXPECT_EQ(fields.caption, "vm: how the ceilings were measured");
  std::map<std::string, std::string> value;
  for (const auto& row : fields.rows) value[row.at(0)] = row.at(1);
  EXPECT_EQ(value["rounds"], "3");
  EXPECT_EQ(value["quick"], "yes");
  EXPECT_EQ(value["statistic"], "median");
  EXPECT_EQ(value["working set range"], "4096, 8192");
  EXPECT_EQ(value["other processes cpu seconds"], "n/a");
  EXPECT_EQ(value["fma trials"], "the table \"vm: fma trials\"");
  const ReportTable& trials = section->tables.at(2);
  EXPECT_EQ(trials.caption, "vm: fma trials");
  EXPECT_EQ(trials.header, (std::vector<std::string>{"name", "simd", "chains", "gflops_1thread"}));
  EXPECT_EQ(trials.numeric, (std::vector<bool>{false, false, true, true}));
  ASSERT_EQ(trials.rows.size(), 2u);
  EXPECT_EQ(trials.rows[1], (std::vector<std::string>{"avx2 fma", "avx2", "12", "51.25"}));
  const std::string md = test::read_text(write_report(dir.path()).markdown);
  EXPECT_EQ(md.find("{\""), std::string::npos) << "raw JSON in the report";
}

// The activation study's figures are captioned by what they show, with units, in the study's
// own report.md and in nnperf report alike; a stem it does not know is shown as it is.
TEST(Report, ActivationFiguresAreCaptionedByWhatTheyShow) {
  for (const char* stem :
       {"timing_comparison", "accuracy_vs_time", "layer_heatmap", "validation_curves"}) {
    const std::string caption = activation_figure_caption(stem);
    EXPECT_NE(caption, stem);
    EXPECT_NE(caption.find("("), std::string::npos) << caption << ": no unit";
  }
  EXPECT_EQ(activation_figure_caption("extra_plot"), "extra_plot");
}

TEST(Report, RefusesWhatIsNotAResultsFolder) {
  test::TempDir dir;
  EXPECT_THROW(build_report(dir / "missing"), UsageError);
  EXPECT_THROW(build_report(dir.path()), UsageError);  // empty
  write_file_atomic(dir / "roofline.json", "{\"context\": 3}");
  try {
    build_report(dir.path());
    FAIL() << "a broken roofline.json";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("roofline.json"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace nnperf
