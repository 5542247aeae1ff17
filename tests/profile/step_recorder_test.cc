// StepRecorder over a scripted Timeline: every span takes its begin and end from the marks its
// before/after (or phase begin/end) calls made, nested spans included, in end order; the
// timeline is read once, when the spans are first asked for. The CPU's timeline is monotonic.
#include "nnperf/profile/step_recorder.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace nnperf {
namespace {

// Mark i happens at 1000 * (i + 1) ns; counts its reads and keeps what was reserved.
class ScriptedTimeline final : public Timeline {
 public:
  explicit ScriptedTimeline(int* reads, int* reserved = nullptr)
      : reads_(reads), reserved_(reserved) {}
  const char* name() const override { return "scripted"; }
  int mark() override { return n_++; }
  void reserve(int marks) override {
    if (reserved_ != nullptr) *reserved_ = marks;
  }
  std::vector<int64_t> read() override {
    ++*reads_;
    std::vector<int64_t> t;
    for (int i = 0; i < n_; ++i) t.push_back(1000 * int64_t{i + 1});
    n_ = 0;
    return t;
  }

 private:
  int* reads_;
  int* reserved_;
  int n_ = 0;
};

TEST(StepRecorder, ReadiesAStepsMarksBeforeTheStep) {
  int reads = 0, reserved = 0;
  StepRecorder rec(3, std::make_unique<ScriptedTimeline>(&reads, &reserved));
  EXPECT_GE(reserved, 4 * 3);  // every node's two marks in each phase, before any is made
  EXPECT_EQ(reads, 0);
}

TEST(StepRecorder, SpansAreTheMarksOfTheirOwnCalls) {
  int reads = 0;
  StepRecorder rec(3, std::make_unique<ScriptedTimeline>(&reads));
  EXPECT_STREQ(rec.clock(), "scripted");
  rec.phase(StepPhase::kForward, true);  // mark 0
  rec.before(1, Phase::kForward);        // 1
  rec.after(1, Phase::kForward);         // 2
  rec.before(2, Phase::kForward);        // 3
  rec.after(2, Phase::kForward);         // 4
  rec.phase(StepPhase::kForward, false);  // 5
  rec.phase(StepPhase::kBackward, true);  // 6
  rec.before(2, Phase::kBackward);        // 7
  rec.before(1, Phase::kBackward);        // 8 (nested inside node 2's, as a hook may be)
  rec.after(1, Phase::kBackward);         // 9
  rec.after(2, Phase::kBackward);         // 10
  rec.phase(StepPhase::kBackward, false);  // 11
  EXPECT_EQ(reads, 0);
  const std::vector<StepRecorder::Span>& s = rec.spans();
  EXPECT_EQ(reads, 1);
  ASSERT_EQ(s.size(), 6u);
  const auto expect = [&](std::size_t i, int node, const char* phase, int begin, int end) {
    EXPECT_EQ(s[i].node, node) << i;
    EXPECT_EQ(s[i].phase, phase) << i;
    EXPECT_EQ(s[i].begin_ns, 1000 * (begin + 1)) << i;
    EXPECT_EQ(s[i].end_ns, 1000 * (end + 1)) << i;
  };
  expect(0, 1, "forward", 1, 2);
  expect(1, 2, "forward", 3, 4);
  expect(2, -1, "forward", 0, 5);
  expect(3, 1, "backward", 8, 9);
  expect(4, 2, "backward", 7, 10);
  expect(5, -1, "backward", 6, 11);
  EXPECT_DOUBLE_EQ(s[5].ms(), 0.005);
  EXPECT_EQ(rec.spans().size(), 6u);  // read once
  EXPECT_EQ(reads, 1);
}

TEST(StepRecorder, TheCpuClockIsTheDefaultAndMonotonic) {
  StepRecorder rec(2);
  EXPECT_STREQ(rec.clock(), "cpu-steady-clock");
  rec.phase(StepPhase::kLoss, true);
  rec.before(1, Phase::kForward);
  rec.after(1, Phase::kForward);
  rec.phase(StepPhase::kLoss, false);
  const auto& s = rec.spans();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_LE(s[1].begin_ns, s[0].begin_ns);
  EXPECT_LE(s[0].begin_ns, s[0].end_ns);
  EXPECT_LE(s[0].end_ns, s[1].end_ns);
}

}  // namespace
}  // namespace nnperf
