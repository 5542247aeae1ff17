// Shared test helpers: seeded random tensors (never zeros), float64 comparisons with stated
// bounds, temp folders, and running the nnperf binary.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/core/tensor.h"

namespace nnperf::test {

inline constexpr double kEps = 0x1.0p-23;  // float32 unit roundoff (2^-23)

// Uniform in [lo, hi), seeded; for inputs that must not be zero.
std::vector<float> random_vector(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f);
Tensor random_tensor(const Shape& shape, uint64_t seed, float lo = -1.0f, float hi = 1.0f);

// A fresh empty folder under the system temp dir, removed by the destructor.
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "nnperf");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Sets (or, with nullptr, unsets) an environment variable for the scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs a shell command line; captures stdout and stderr separately.
CommandResult run_command(const std::string& command_line);
// Runs the nnperf binary built alongside the tests with the given arguments.
CommandResult run_nnperf(const std::string& args);

std::string read_text(const std::filesystem::path& path);

// ||got - ref||_2 / ||ref||_2: a whole output's relative error (normwise bounds of the conv tests).
inline double relative_l2_error(const std::vector<float>& got, const std::vector<double>& ref) {
  double err2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double e = static_cast<double>(got[i]) - ref[i];
    err2 += e * e;
    ref2 += ref[i] * ref[i];
  }
  return std::sqrt(err2 / ref2);
}

// The central difference of loss() in x: (loss at x + h - loss at x - h) / 2h, x moved in place
// (in its own type) and restored.
template <class T, class F>
double central_difference(T& x, F loss, double h) {
  const T keep = x;
  x = static_cast<T>(keep + h);
  const double up = loss();
  x = static_cast<T>(keep - h);
  const double down = loss();
  x = keep;
  return (up - down) / (2 * h);
}

// Central finite differences: each element of v is moved by +-h in place and loss() evaluated
// again; analytic[i] must lie within rel_tol * max(1, |fd|) of fd = (up - down) / 2h. `what`
// names the gradient and the case in failure messages.
template <class F>
void expect_finite_differences(std::vector<double>& v, const Tensor& analytic, F loss, double h,
                               double rel_tol, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(v.size()), analytic.numel()) << what;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double fd = central_difference(v[i], loss, h);
    ASSERT_NEAR(analytic[static_cast<int64_t>(i)], fd, rel_tol * std::max(1.0, std::fabs(fd)))
        << what << " element " << i;
  }
}

}  // namespace nnperf::test
