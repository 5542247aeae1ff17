// Checks on flag values that run on the text the user typed, before CLI11 converts it: every bad
// value is refused with the flag's name, the text and what was expected, instead of being
// reinterpreted ("-5" threads read as "all"), converted to a made-up number (nan, inf) or passed to
// a conversion that fails with a message that names nothing. main() prints the refusal as one line.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "nnperf/core/limits.h"

namespace nnperf::app {

// An integer in [lo, hi] ("--epochs 0: expected an integer >= 1").
CLI::Validator integer_in(int64_t lo, int64_t hi = std::numeric_limits<int32_t>::max());
// A finite number in [lo, hi]; lo_open / hi_open exclude the bound ("--label-smoothing 1: expected
// a number in [0, 1)"). NaN and infinities are always refused.
CLI::Validator number_in(double lo, double hi, bool lo_open = false, bool hi_open = false);
// A number >= lo (> lo with lo_open) that a float32 holds: at most float's largest, 3.4e38, since
// a rate or decay above it becomes infinite in float arithmetic ("--lr 1e300").
CLI::Validator float_from(double lo, bool lo_open = false);
// A comma-separated list of integers, each in [lo, hi] ("--hidden 128,-1,64"); with distinct,
// none given twice ("--batch-sizes 32,32").
CLI::Validator integer_list_in(int64_t lo, int64_t hi, bool distinct = false);
// A comma-separated list typed as one string: not empty, no empty item ("--impls ''",
// "gemm,,fft") and, with distinct, no item given twice ("--activations relu,relu").
CLI::Validator list_items(bool distinct = true);
// The items of such a list ("a,b" -> {"a", "b"}; "" -> {""}).
std::vector<std::string> split_list(const std::string& text);
// A name its table knows: `find` (a registry's finder) throws a UsageError for any other, whose
// message becomes the flag's ("--model: unknown model 'x': expected one of ..."). With `list`,
// each item of a comma-separated list.
CLI::Validator known_name(std::function<void(const std::string&)> find, bool list = false);
// The tables' finders as such validators: models, activations, optimizers, GEMM algorithms.
CLI::Validator known_model(bool list = false);
CLI::Validator known_activation(bool list = false);
CLI::Validator known_optimizer();
CLI::Validator known_gemm();

// Common cases.
inline CLI::Validator count_at_least(int64_t lo) { return integer_in(lo); }
// --threads: 0 = all logical CPUs; above the CPU count it is capped (with a warning) at run time.
CLI::Validator threads_count();

// The largest sizes any flag accepts (core/limits.h).
using nnperf::kMaxBatch;
using nnperf::kMaxImageSide;
using nnperf::kMaxWidth;

}  // namespace nnperf::app
