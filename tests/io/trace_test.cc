// Tests for io/trace: the Chrome/Perfetto trace JSON parses and holds the events with the fields
// viewers need (ph, ts, dur, pid, tid, args), names for process and threads, and metadata.
#include "nnperf/io/trace.h"

#include <gtest/gtest.h>

#include <cmath>

#include "nnperf/core/error.h"
#include "test_util.h"

namespace nnperf {
namespace {

TEST(Trace, WritesParsableChromeTrace) {
  test::TempDir dir("nnperf-trace");
  TraceWriter w("nnperf profile resnet18");
  w.set_thread_name(0, "layers");
  w.set_metadata("model", "resnet18");
  double ts = 0;
  const char* names[] = {"conv1.forward", "bn1.forward", "relu.forward", "fc.forward"};
  for (int i = 0; i < 4; ++i) {
    const double dur = 10.5 * (i + 1);
    w.add_complete(names[i], "forward", ts, dur, 0,
                   {{"algorithm", "winograd"}, {"flops", 1e9 * i}});
    ts += dur;
  }
  w.add({"sgd.step", "optimizer", ts, 3.25, 1, {}});
  w.add_counter("power", 5.0, {{"package_w", 41.5}});
  EXPECT_EQ(w.size(), 6u);
  w.write(dir / "trace.json");

  const auto j = nlohmann::json::parse(test::read_text(dir / "trace.json"));
  EXPECT_EQ(j.at("displayTimeUnit"), "ms");
  EXPECT_EQ(j.at("metadata").at("model"), "resnet18");
  const auto& ev = j.at("traceEvents");
  ASSERT_TRUE(ev.is_array());
  int complete = 0, meta = 0, counters = 0;
  for (const auto& e : ev) {
    const std::string ph = e.at("ph");
    EXPECT_EQ(e.at("pid"), 1);
    if (ph == "X") {
      ++complete;
      EXPECT_TRUE(e.at("ts").is_number());
      EXPECT_GT(e.at("dur").get<double>(), 0);
      EXPECT_TRUE(e.contains("tid"));
      EXPECT_TRUE(e.contains("cat"));
    } else if (ph == "M") {
      ++meta;
    } else if (ph == "C") {
      ++counters;
      EXPECT_EQ(e.at("args").at("package_w"), 41.5);
    }
  }
  EXPECT_EQ(complete, 5);
  EXPECT_EQ(meta, 2);  // process_name + thread_name
  EXPECT_EQ(counters, 1);
  const auto& relu = *std::find_if(ev.begin(), ev.end(),
                                   [](const auto& e) { return e.at("name") == "relu.forward"; });
  EXPECT_EQ(relu.at("ts").get<double>(), 10.5 + 21.0);
  EXPECT_EQ(relu.at("dur").get<double>(), 31.5);
  EXPECT_EQ(relu.at("args").at("algorithm"), "winograd");
  EXPECT_EQ(relu.at("cat"), "forward");
  const auto& proc = ev.at(0);
  EXPECT_EQ(proc.at("name"), "process_name");
  EXPECT_EQ(proc.at("args").at("name"), "nnperf profile resnet18");
}

TEST(Trace, RejectsBadTimes) {
  TraceWriter w;
  EXPECT_THROW(w.add_complete("x", "c", std::nan(""), 1), Error);
  try {
    w.add_complete("conv2.backward", "backward", 0, -2);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("conv2.backward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("negative"), std::string::npos) << e.what();
  }
  EXPECT_THROW(w.add_counter("p", 0, nlohmann::json::object()), Error);
  EXPECT_EQ(w.size(), 0u);
}

}  // namespace
}  // namespace nnperf
