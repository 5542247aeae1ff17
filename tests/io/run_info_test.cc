// Tests for io/run_info: run_context() carries machine, build, threads, BLAS, date and OS facts;
// run.json and other JSON files are written atomically with a 4-space indent.
#include "nnperf/io/run_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <regex>

#include "nnperf/build_info.h"
#include "nnperf/core/threads.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;

TEST(RunInfo, ContextHasTheFields) {
  const nlohmann::json c = run_context();
  const auto& m = c.at("machine");
  EXPECT_EQ(m.at("hostname").get<std::string>(), hostname());
  EXPECT_FALSE(m.at("cpu_model").get<std::string>().empty());
  EXPECT_GE(m.at("logical_cpus").get<int>(), 1);
  const std::string simd = m.at("simd").get<std::string>();
  EXPECT_TRUE(simd == "scalar" || simd == "avx2" || simd == "avx512") << simd;
  EXPECT_TRUE(m.at("caches").contains("l1d_bytes"));
  EXPECT_TRUE(m.at("caches").contains("l3_bytes"));
  const auto& b = c.at("build");
  EXPECT_EQ(b.at("version").get<std::string>(), build_info::kVersion);
  EXPECT_EQ(b.at("commit").get<std::string>(), build_info::kGitCommit);
  EXPECT_FALSE(b.at("build_type").get<std::string>().empty());
  EXPECT_NE(b.at("compiler").get<std::string>().find("GNU"), std::string::npos);
  EXPECT_EQ(c.at("threads").get<int>(), num_threads());
  EXPECT_NE(c.at("blas").get<std::string>().find("OpenBLAS"), std::string::npos);
  EXPECT_TRUE(std::regex_match(c.at("date").get<std::string>(),
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)")))
      << c.at("date");
  EXPECT_EQ(c.at("os").at("sysname").get<std::string>(), "Linux");
  EXPECT_FALSE(c.at("os").at("release").get<std::string>().empty());
  EXPECT_FALSE(c.at("libraries").at("zlib").get<std::string>().empty());
}

TEST(RunInfo, TimesAndHostname) {
  EXPECT_TRUE(std::regex_match(timestamp_compact(), std::regex(R"(\d{8}_\d{6})")))
      << timestamp_compact();
  char buf[256] = {};
  ASSERT_EQ(gethostname(buf, sizeof buf - 1), 0);
  EXPECT_EQ(hostname(), std::string(buf));
}

TEST(RunInfo, WriteRunJsonAndAtomicJson) {
  test::TempDir dir("nnperf-runinfo");
  const fs::path out = dir / "runs" / "r1";  // created
  write_run_json(out, "nnperf train --model mlp", {{"model", "mlp"}, {"seed", 42}});
  const auto j = nlohmann::json::parse(test::read_text(out / "run.json"));
  EXPECT_EQ(j.at("command"), "nnperf train --model mlp");
  EXPECT_EQ(j.at("model"), "mlp");
  EXPECT_EQ(j.at("seed"), 42);
  EXPECT_TRUE(j.contains("machine"));
  EXPECT_TRUE(j.contains("build"));
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(out)) names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"run.json"});

  write_json_atomic(dir / "x.json", {{"a", {{"b", 1}}}, {"bad_utf8", std::string("\xff\xfe")}});
  const std::string text = test::read_text(dir / "x.json");
  EXPECT_NE(text.find("\n    \"a\": {\n        \"b\": 1"), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NO_THROW(nlohmann::json::parse(text));
}

}  // namespace
}  // namespace nnperf
