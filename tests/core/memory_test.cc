#include "nnperf/core/memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <limits>

#include "nnperf/core/error.h"

namespace nnperf {
namespace {

TEST(Memory, ParsesByteSizes) {
  EXPECT_EQ(parse_byte_size("1073741824"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("512M"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("2G"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("2GiB"), int64_t{2} << 30);
  EXPECT_EQ(parse_byte_size("1.5k"), 1536);
  EXPECT_FALSE(parse_byte_size(""));
  EXPECT_FALSE(parse_byte_size("-1"));
  EXPECT_FALSE(parse_byte_size("12Q"));
  EXPECT_FALSE(parse_byte_size("nan"));
  EXPECT_FALSE(parse_byte_size("1e30"));
}

TEST(Memory, CheckedArithmeticDetectsOverflow) {
  EXPECT_EQ(checked_mul(1 << 20, 1 << 20), int64_t{1} << 40);
  EXPECT_FALSE(checked_mul(int64_t{1} << 40, int64_t{1} << 40));
  EXPECT_FALSE(checked_add(std::numeric_limits<int64_t>::max(), 1));
  EXPECT_EQ(checked_add(2, 3), 5);
}

TEST(Memory, AvailableIsPositiveAndBelowPhysical) {
  const int64_t a = available_memory_bytes();
  const int64_t physical =
      static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_GT(a, 0);
  EXPECT_LE(a, physical);
}

TEST(Memory, RefusesMoreThanTheCapWithBothNumbers) {
  ::setenv("NNPERF_MEMORY_LIMIT", "64M", 1);
  EXPECT_EQ(available_memory_bytes(), int64_t{64} << 20);
  EXPECT_NO_THROW(check_memory(int64_t{1} << 20, "--batch-size 1"));
  try {
    check_memory(int64_t{1} << 30, "--batch-size 9999999");
    FAIL() << "expected a refusal";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--batch-size 9999999"), std::string::npos) << m;
    EXPECT_NE(m.find("1.00 GiB"), std::string::npos) << m;
    EXPECT_NE(m.find("64.0 MiB"), std::string::npos) << m;
  }
  ::setenv("NNPERF_MEMORY_LIMIT", "lots", 1);
  EXPECT_THROW(available_memory_bytes(), UsageError);
  ::unsetenv("NNPERF_MEMORY_LIMIT");
}

TEST(Memory, FormatsBytes) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(int64_t{3} << 29), "1.50 GiB");
}

}  // namespace
}  // namespace nnperf
