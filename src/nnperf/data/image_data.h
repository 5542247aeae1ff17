// The image data sets a CNN trains on, found from one --data folder: MNIST-format IDX
// (train-/t10k-images-idx3-ubyte[.gz]), CIFAR-10/100 binary, or an image folder
// (DIR/{train,val}/<class>/*.{jpg,png}); or deterministic synthetic images. Returns the training
// and test sets, the class names when the format has them, the per-channel normalisation (seed
// 004's CIFAR-10 constants for CIFAR-10, else computed from the training set) and the images
// skipped. nnperf never downloads: a folder holding none of these formats is an error that says
// which files to put where.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/data/dataset.h"
#include "nnperf/data/image_folder.h"
#include "nnperf/data/transform.h"

namespace nnperf {

struct ImageDataOptions {
  std::filesystem::path dir;  // empty: default_data_dir() (Fashion-MNIST)
  bool synthetic = false;
  // Synthetic data: channels, side, classes (0 = 3, 32, 10) and sample counts.
  int64_t synthetic_channels = 0, synthetic_side = 0, synthetic_classes = 0;
  int64_t synthetic_train = 1024, synthetic_test = 256;  // cut by limit_train / limit_test
  // Image folders: the crop side (0 = 224) and the shorter side after resizing (0 = side * 8 / 7,
  // 256 for 224). IDX and CIFAR images keep their size: a different input_size is refused.
  int64_t input_size = 0;
  OnBadImage on_bad_image = OnBadImage::kFail;
  int64_t limit_train = 0, limit_test = 0;  // > 0: the first N samples only
  uint64_t seed = 42;                       // synthetic data only
};

struct ImageData {
  Dataset train, test;
  std::string format;  // "idx", "cifar-10", "cifar-100", "image-folder", "synthetic"
  std::string name;    // short, for file names: "fashion-mnist", "cifar-10", "synthetic"
  std::string source;  // the folder read, or "synthetic"
  std::vector<std::string> classes;  // image folders only
  std::vector<SkippedImage> skipped;
  ChannelNorm norm;
  int64_t channels() const { return train.images.shape()[1]; }
  int64_t side() const { return train.images.shape()[2]; }
};

ImageData load_image_data(const ImageDataOptions& options);

// Which format `dir` holds ("idx", "cifar", "image-folder"), or "" when none.
std::string detect_image_format(const std::filesystem::path& dir);

}  // namespace nnperf
