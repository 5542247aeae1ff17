// What the Nsight Compute import (ncu.cc) and its JSON rendering (ncu_json.cc) share; not a
// public interface.
#pragma once
#include <limits>
#include <string>
#include <string_view>

namespace nnperf::ncu_detail {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr const char* kMetricsHint =
    "collect the metrics listed in share/ncu-roofline-metrics.txt";

// `s` with every invalid UTF-8 sequence replaced by U+FFFD (valid text byte for byte), so the
// JSON of an import always serialises.
std::string valid_utf8(std::string_view s);
// num / den, or NaN when den is not positive.
double ratio(double num, double den);

}  // namespace nnperf::ncu_detail
