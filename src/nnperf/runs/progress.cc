#include "nnperf/runs/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>

#include "nnperf/core/error.h"
#include "nnperf/core/clock.h"

namespace nnperf {

Progress::Progress(Mode mode) : mode_(mode) {
  if (mode_ == Mode::kAuto) mode_ = isatty(fileno(stderr)) ? Mode::kBar : Mode::kLines;
}

Progress::~Progress() { finish(); }

void Progress::update(const std::string& label, int64_t done, int64_t total,
                      const std::string& status) {
  if (mode_ != Mode::kBar) return;
  const int64_t t = now_ns();
  if (done < total && t - last_draw_ns_ < 100'000'000) return;
  last_draw_ns_ = t;
  constexpr int kWidth = 30;
  const double frac = total > 0 ? static_cast<double>(done) / static_cast<double>(total) : 0.0;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, '.');
  fmt::print(stderr, "\r\033[K{} [{}] {}/{} {}", label, bar, done, total, status);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::line(const std::string& text) {
  if (mode_ == Mode::kQuiet) return;
  if (mode_ == Mode::kBar && drawn_) {
    fmt::print(stderr, "\r\033[K");
    drawn_ = false;
  }
  fmt::print(stdout, "{}\n", text);
  std::fflush(stdout);
}

void Progress::finish() {
  if (mode_ == Mode::kBar && drawn_) {
    fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
    drawn_ = false;
  }
}

Progress::Mode parse_progress_mode(const std::string& s) {
  if (s == "auto") return Progress::Mode::kAuto;
  if (s == "bar") return Progress::Mode::kBar;
  if (s == "lines") return Progress::Mode::kLines;
  if (s == "quiet") return Progress::Mode::kQuiet;
  throw UsageError(fmt::format("--progress '{}': expected auto, bar, lines or quiet", s));
}

}  // namespace nnperf
