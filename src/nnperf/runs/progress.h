// Progress for people: a one-line bar redrawn in place on a terminal (stderr), or plain lines
// (stdout) when output goes to a file or a pipe, so logs stay readable.
#pragma once
#include <cstdint>
#include <string>

namespace nnperf {

class Progress {
 public:
  enum class Mode { kAuto, kBar, kLines, kQuiet };
  explicit Progress(Mode mode = Mode::kAuto);
  ~Progress();
  // Redraws the bar (at most ~10 times a second); `done`/`total` units, `status` appended.
  void update(const std::string& label, int64_t done, int64_t total, const std::string& status);
  // A line that stays (the bar is cleared first and redrawn by the next update).
  void line(const std::string& text);
  void finish();
  bool is_bar() const { return mode_ == Mode::kBar; }

 private:
  Mode mode_;
  int64_t last_draw_ns_ = 0;
  bool drawn_ = false;
};

Progress::Mode parse_progress_mode(const std::string& s);  // auto|bar|lines|quiet

}  // namespace nnperf
