// Small wording helpers for messages and reports.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace nnperf {

// "1 cell", "2 cells", "0 cells": a count with its noun (plural by appending 's').
inline std::string count_noun(int64_t n, std::string_view singular) {
  return std::to_string(n) + " " + std::string(singular) + (n == 1 ? "" : "s");
}

// A duration for people: "42 s", "17 min", "5.3 h", "2.1 d".
std::string format_duration(double seconds);

}  // namespace nnperf
