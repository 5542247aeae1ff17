// The largest sizes nnperf accepts anywhere before its memory checks even run: a batch, a layer
// width or an image side beyond these is a typo, not a workload. Flags refuse them
// (apps/nnperf/flags.h) and readers of saved records refuse rows that hold them.
#pragma once
#include <cstdint>

namespace nnperf {

constexpr int64_t kMaxBatch = int64_t{1} << 24;
constexpr int64_t kMaxWidth = int64_t{1} << 24;
constexpr int64_t kMaxImageSide = int64_t{1} << 16;

}  // namespace nnperf
