// NNPERF_VERBOSE parsing: a comma- or space-separated list of exact category names.
#include "nnperf/core/verbose.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace nnperf {
namespace {

TEST(Verbose, ListsExactCategories) {
  const char* saved = std::getenv("NNPERF_VERBOSE");
  const std::string restore = saved != nullptr ? saved : "";
  ::unsetenv("NNPERF_VERBOSE");
  EXPECT_FALSE(verbose_enabled("exec"));
  ::setenv("NNPERF_VERBOSE", "exec", 1);
  EXPECT_TRUE(verbose_enabled("exec"));
  EXPECT_FALSE(verbose_enabled("dispatch"));
  ::setenv("NNPERF_VERBOSE", "dispatch,exec", 1);
  EXPECT_TRUE(verbose_enabled("exec"));
  EXPECT_TRUE(verbose_enabled("dispatch"));
  ::setenv("NNPERF_VERBOSE", "dispatch exec", 1);
  EXPECT_TRUE(verbose_enabled("exec"));
  ::setenv("NNPERF_VERBOSE", "executive,dispatcher", 1);  // no prefix matches
  EXPECT_FALSE(verbose_enabled("exec"));
  EXPECT_FALSE(verbose_enabled("dispatch"));
  EXPECT_FALSE(verbose_enabled(""));
  if (saved != nullptr) {
    ::setenv("NNPERF_VERBOSE", restore.c_str(), 1);
  } else {
    ::unsetenv("NNPERF_VERBOSE");
  }
}

}  // namespace
}  // namespace nnperf
