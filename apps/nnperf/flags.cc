#include "flags.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

namespace nnperf::app {

namespace {

std::string bounds_text(int64_t lo, int64_t hi) {
  if (hi == std::numeric_limits<int32_t>::max() || hi == std::numeric_limits<int64_t>::max()) {
    return fmt::format("an integer >= {}", lo);
  }
  return fmt::format("an integer in [{}, {}]", lo, hi);
}

// "" when `text` is an integer within [lo, hi], else the reason.
std::string check_integer(const std::string& text, int64_t lo, int64_t hi) {
  int64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  const auto [ptr, ec] = std::from_chars(b, e, v);
  if (text.empty() || ec == std::errc::invalid_argument || ptr != e) {
    return fmt::format("expected {}, got '{}'", bounds_text(lo, hi), text);
  }
  if (ec == std::errc::result_out_of_range || v < lo || v > hi) {
    return fmt::format("expected {}, got {}", bounds_text(lo, hi), text);
  }
  return "";
}

}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) { return check_integer(text, lo, hi); }, bounds_text(lo, hi),
      "integer_in");
}

// More threads than logical CPUs are capped to the CPU count with a warning (core/threads);
// beyond 1024, more than any machine nnperf runs on has, the number is refused as absurd.
CLI::Validator threads_count() {
  constexpr int64_t kMaxThreads = 1024;
  return CLI::Validator(
      [](std::string& text) {
        const std::string err = check_integer(text, 0, kMaxThreads);
        return err.empty() ? err
                           : err + " (0 = all logical CPUs; more than the machine has are capped)";
      },
      "threads in [0, 1024]", "threads_count");
}

CLI::Validator integer_list_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        std::size_t pos = 0;
        while (pos <= text.size()) {
          const std::size_t comma = std::min(text.find(',', pos), text.size());
          if (!check_integer(text.substr(pos, comma - pos), lo, hi).empty()) {
            return fmt::format("expected a comma-separated list of integers, each in [{}, {}], got '{}'",
                               lo, hi, text);
          }
          pos = comma + 1;
        }
        return "";
      },
      "list", "integer_list_in");
}

CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open) {
  const std::string range =
      std::isinf(hi) ? fmt::format("a number {} {}", lo_open ? ">" : ">=", lo)
                     : fmt::format("a number in {}{}, {}{}", lo_open ? "(" : "[", lo, hi,
                                   hi_open ? ")" : "]");
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        // strtod is locale-dependent for the decimal point; the CLI runs in the "C" locale.
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size()) {
          return fmt::format("expected {}, got '{}'", range, text);
        }
        if (!std::isfinite(v)) return fmt::format("expected a finite number ({}), got {}", range, text);
        if (v < lo || v > hi || (lo_open && v == lo) || (hi_open && v == hi)) {
          return fmt::format("expected {}, got {}", range, text);
        }
        return "";
      },
      range, "number_in");
}

}  // namespace nnperf::app
