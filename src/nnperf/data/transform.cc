#include "nnperf/data/transform.h"

#include <fmt/format.h>

#include <cmath>

#include "nnperf/core/error.h"
#include "nnperf/core/rng.h"

namespace nnperf {

ChannelNorm cifar10_norm() {
  return {{0.4914, 0.4822, 0.4465}, {0.2023, 0.1994, 0.2010}, "CIFAR-10 constants"};
}

ChannelNorm channel_norm(const Dataset& data) {
  const Shape& s = data.images.shape();
  NNPERF_CHECK(s.rank() == 4 && s[0] > 0, "{}: channel statistics need N x C x H x W images",
               data.name);
  const int64_t n = s[0], c = s[1], plane = s[2] * s[3];
  ChannelNorm out{std::vector<double>(static_cast<std::size_t>(c)),
                  std::vector<double>(static_cast<std::size_t>(c)),
                  "computed from the training set"};
  const float* x = data.images.data();
#pragma omp parallel for schedule(static)
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float* p = x + (i * c + ch) * plane;
      for (int64_t k = 0; k < plane; ++k) {
        sum += p[k];
        sq += static_cast<double>(p[k]) * p[k];
      }
    }
    const double count = static_cast<double>(n * plane);
    const double mean = sum / count;
    const double var = std::max(0.0, sq / count - mean * mean);
    out.mean[static_cast<std::size_t>(ch)] = mean;
    out.std[static_cast<std::size_t>(ch)] = var > 0 ? std::sqrt(var) : 1.0;
  }
  return out;
}

SampleDraw draw_sample(const AugmentOptions& a, uint64_t seed, int64_t epoch, int64_t position) {
  if (!a.enabled) return {a.pad, a.pad, false};
  // Distinct, well-mixed streams per (seed, epoch, position): Rng's seeding mixes its input.
  Rng rng(seed ^ (static_cast<uint64_t>(epoch + 1) * 0x9E3779B97F4A7C15ull) ^
          (static_cast<uint64_t>(position) * 0xD1B54A32D192ED03ull));
  SampleDraw d;
  const auto range = static_cast<uint64_t>(2 * a.pad + 1);
  d.dy = static_cast<int>(rng.below(range));
  d.dx = static_cast<int>(rng.below(range));
  d.flip = a.flip && rng.below(2) == 1;
  return d;
}

void transform_sample(const float* src, int64_t c, int64_t h, int64_t w, const SampleDraw& d,
                      int pad, const float* scale, const float* shift, float* dst) {
  const int64_t oy = d.dy - pad, ox = d.dx - pad;  // source = output + offset
  for (int64_t ch = 0; ch < c; ++ch) {
    const float* plane = src + ch * h * w;
    float* out = dst + ch * h * w;
    const float sc = scale[ch], sh = shift[ch];
    for (int64_t y = 0; y < h; ++y) {
      const int64_t sy = y + oy;
      float* row = out + y * w;
      if (sy < 0 || sy >= h) {
        for (int64_t x = 0; x < w; ++x) row[x] = sh;
        continue;
      }
      const float* in = plane + sy * w;
      for (int64_t x = 0; x < w; ++x) {
        const int64_t sx = (d.flip ? w - 1 - x : x) + ox;  // crop first, then flip the crop
        row[x] = (sx < 0 || sx >= w) ? sh : in[sx] * sc + sh;
      }
    }
  }
}

}  // namespace nnperf
