// Per-sample training transforms on float images in [0, 1] (C x H x W): seed 004's
// RandomCrop(size, padding=4) + RandomHorizontalFlip, then Normalize(mean, std) per channel. The
// random draw of a sample depends only on (seed, epoch, position in the epoch), so a batch is the
// same whichever loader thread makes it and whether or not the run was resumed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nnperf/data/dataset.h"

namespace nnperf {

struct ChannelNorm {
  std::vector<double> mean, std;  // one per channel; std > 0
  std::string source;             // "CIFAR-10 constants", "computed from the training set"
};

// seed 004's constants: mean (0.4914, 0.4822, 0.4465), std (0.2023, 0.1994, 0.2010).
ChannelNorm cifar10_norm();
// Mean and population standard deviation of every channel over all training pixels, summed in
// float64. A constant channel (std 0) gets std 1, so it is centred but not scaled.
ChannelNorm channel_norm(const Dataset& data);

struct AugmentOptions {
  bool enabled = true;  // false: the sample is only normalised
  int pad = 4;          // random crop offsets in [0, 2 * pad] on the zero-padded image
  bool flip = true;     // horizontal flip with probability 1/2
};

struct SampleDraw {
  int dy = 0, dx = 0;  // crop origin in the padded image
  bool flip = false;
};

// The crop and flip of the sample at `position` of epoch `epoch`: (pad, pad, no flip) when
// augmentation is off.
SampleDraw draw_sample(const AugmentOptions& a, uint64_t seed, int64_t epoch, int64_t position);

// dst[c][y][x] = v * scale[c] + shift[c], v = src[c][y + dy - pad][x' + dx - pad] with
// x' = flip ? w - 1 - x : x (the crop is flipped), or 0 outside the image: torchvision's
// RandomCrop(padding) fills with 0 before ToTensor/Normalize. scale = 1/std, shift = -mean/std.
void transform_sample(const float* src, int64_t c, int64_t h, int64_t w, const SampleDraw& d,
                      int pad, const float* scale, const float* shift, float* dst);

}  // namespace nnperf
