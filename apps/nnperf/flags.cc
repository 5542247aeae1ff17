#include "flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "nnperf/core/error.h"
#include "nnperf/core/name_registry.h"
#include "nnperf/kernels/activations.h"
#include "nnperf/kernels/gemm/gemm.h"
#include "nnperf/models/registry.h"
#include "nnperf/train/optimizer.h"

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

// "" when `text` is a comma-separated list without an empty item (and, with distinct, without
// an item given twice), else the reason.
std::string check_list(const std::string& text, bool distinct) {
  const std::vector<std::string> items = split_list(text);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (items[i].empty()) {
      return text.empty() ? std::string("expected a comma-separated list, got ''")
                          : fmt::format("expected a comma-separated list, got '{}' (item {} is empty)", text, i + 1);
    }
    // Names compare by the registries' rule (core/name_registry.h): relu and ReLU are one name.
    for (std::size_t j = 0; distinct && j < i; ++j) {
      if (same_registry_key(items[j], items[i])) {
        return items[j] == items[i] ? fmt::format("'{}' lists {} twice", text, items[i])
                                    : fmt::format("'{}' lists {} twice (as {} and {})", text,
                                                  items[j], items[j], items[i]);
      }
    }
  }
  return "";
}

// A finite decimal number in [lo, hi] (bounds excluded as lo_open / hi_open say); `range` is what
// the refusal says was expected.
CLI::Validator number_validator(double lo, double hi, bool lo_open, bool hi_open,
                                const std::string& range) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        // strtod is locale-dependent for the decimal point; the CLI runs in the "C" locale.
        // Decimal only: strtod would also read hexadecimal ("0x10" = 16), "inf" and "nan".
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() ||
            text.find_first_not_of("0123456789+-.eE") != std::string::npos) {
          return fmt::format("expected {}, got '{}'", range, text);
        }
        if (!std::isfinite(v))
          return fmt::format("expected a finite number ({}), got {}", range, text);
        if (v < lo || v > hi || (lo_open && v == lo) || (hi_open && v == hi)) {
          return fmt::format("expected {}, got {}", range, text);
        }
        return "";
      },
      range, "number_in");
}

std::string lower_bound_text(double lo, bool lo_open) {
  return fmt::format("a number {} {}", lo_open ? ">" : ">=", lo);
}

}  // namespace

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    out.push_back(text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

CLI::Validator list_items(bool distinct) {
  return CLI::Validator([distinct](std::string& text) { return check_list(text, distinct); }, "list",
                        "list_items");
}

CLI::Validator known_name(std::function<void(const std::string&)> find, bool list) {
  return CLI::Validator(
      [find = std::move(find), list](std::string& text) {
        try {
          // An empty name is left to the empty-value and list checks, which say so.
          for (const std::string& item : list ? split_list(text) : std::vector{text}) {
            if (!item.empty()) find(item);
          }
        } catch (const UsageError& e) {
          return std::string(e.what());
        }
        return std::string();
      },
      "NAME", "known_name");
}

CLI::Validator known_model(bool list) {
  return known_name([](const std::string& n) { (void)find_model(n); }, list);
}
CLI::Validator known_activation(bool list) {
  return known_name([](const std::string& n) { (void)find_activation(n); }, list);
}
CLI::Validator known_optimizer() {
  return known_name([](const std::string& n) { (void)find_optimizer(n); });
}
CLI::Validator known_gemm() {
  return known_name([](const std::string& n) { (void)find_gemm(n); });
}

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

CLI::Validator integer_list_in(int64_t lo, int64_t hi, bool distinct) {
  return CLI::Validator(
      [lo, hi, distinct](std::string& text) -> std::string {
        for (const std::string& item : split_list(text)) {
          if (!check_integer(item, lo, hi).empty()) {
            return fmt::format("expected a comma-separated list of integers, each in [{}, {}], got '{}'",
                               lo, hi, text);
          }
        }
        return distinct ? check_list(text, true) : std::string();
      },
      "list", "integer_list_in");
}

CLI::Validator number_in(double lo, double hi, bool lo_open, bool hi_open) {
  const std::string range =
      std::isinf(hi)
          ? lower_bound_text(lo, lo_open)
          : fmt::format("a number in {}{}, {}{}", lo_open ? "(" : "[", lo, hi, hi_open ? ")" : "]");
  return number_validator(lo, hi, lo_open, hi_open, range);
}

CLI::Validator float_from(double lo, bool lo_open) {
  return number_validator(lo, std::numeric_limits<float>::max(), lo_open, false,
                          lower_bound_text(lo, lo_open) + ", at most float's largest (3.4e38)");
}

}  // namespace nnperf::app
