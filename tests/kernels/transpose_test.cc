// kernels/transpose.h on every SIMD level this CPU runs: the exact floats of a plain loop, at
// block-aligned and ragged shapes (8 x 8 blocks with edges of 1-7 rows or columns), with leading
// dimensions wider than the block, and nothing written outside the destination block.
#include "nnperf/kernels/transpose.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "test_util.h"

namespace nnperf {
namespace {

struct Shape {
  int64_t rows, cols, pad_src, pad_dst;  // ld_src = cols + pad_src, ld_dst = rows + pad_dst
};

constexpr Shape kShapes[] = {{1, 1, 0, 0},   {3, 5, 2, 1},   {8, 8, 0, 0},   {9, 256, 0, 0},
                             {256, 9, 0, 0}, {13, 17, 3, 5}, {16, 24, 8, 0}, {7, 64, 1, 9},
                             {64, 4, 0, 0},  {33, 1, 0, 2},  {1, 40, 0, 0}};

TEST(Transpose, EveryLevelMovesTheFloatsOfAPlainLoop) {
  int levels = 0;
  for (SimdLevel level : {SimdLevel::kScalar, SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > cpu_info().simd) continue;
    ++levels;
    const TransposeFn fn = transpose_floats_at(level);
    for (const Shape& s : kShapes) {
      const int64_t ld_src = s.cols + s.pad_src, ld_dst = s.rows + s.pad_dst;
      const auto src = test::random_vector(s.rows * ld_src, 7);
      constexpr float kUntouched = -1234.5f;
      std::vector<float> dst(static_cast<std::size_t>(s.cols * ld_dst), kUntouched);
      fn(src.data(), s.rows, s.cols, ld_src, dst.data(), ld_dst);
      for (int64_t j = 0; j < s.cols; ++j) {
        for (int64_t i = 0; i < ld_dst; ++i) {
          const float want =
              i < s.rows ? src[static_cast<std::size_t>(i * ld_src + j)] : kUntouched;
          ASSERT_EQ(dst[static_cast<std::size_t>(j * ld_dst + i)], want)
              << to_string(level) << " " << s.rows << "x" << s.cols << " at row " << j << " col "
              << i;
        }
      }
    }
  }
  EXPECT_GE(levels, 1);
}

}  // namespace
}  // namespace nnperf
