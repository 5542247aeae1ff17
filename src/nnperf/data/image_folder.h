// Image-folder data sets (the torchvision ImageFolder / ImageNet layout): DIR/{train,val}/<class>/
// holding .jpg, .jpeg and .png files (extensions in any case). Classes are the sub-folder names of
// the split, sorted by bytes; labels are their indices. Each image is decoded
// (data/image_decode.h), its shorter side resized to `resize` and centre-cropped to input_size x
// input_size.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nnperf/data/dataset.h"

namespace nnperf {

enum class OnBadImage { kFail, kSkip };

// The largest resize and input size (pixels per side) image-folder data may ask for.
inline constexpr int kMaxImageFolderSide = 4096;

struct ImageFolderOptions {
  int resize = 256;      // shorter side after resizing
  int input_size = 224;  // centre crop, <= resize
  OnBadImage on_bad_image = OnBadImage::kFail;
  int64_t max_per_class = 0;  // the first N files of each class by name (0: all)
};

struct SkippedImage {
  std::string path;
  std::string reason;  // the error message, which names the file
};

struct ImageFolderData {
  Dataset data;                       // N x 3 x input_size x input_size, name "<dir name>/<split>"
  std::vector<std::string> classes;   // label i is classes[i]
  std::vector<SkippedImage> skipped;  // with OnBadImage::kSkip: files that could not be decoded
};

// Loads DIR/<split> ("train" or "val"). When loading "val" and DIR/train exists, the class
// folders of both must be the same (else an error listing the difference). Refused with an
// error naming the path: a missing folder, no class folders, a class folder without images,
// options out of range, N x 3 x S x S floats over the memory budget (checked before decoding).
// A file that cannot be read or decoded is fatal (kFail) or skipped and listed (kSkip); when
// every image is skipped the load fails.
ImageFolderData load_image_folder(const std::filesystem::path& dir, const std::string& split,
                                  const ImageFolderOptions& options = {});

}  // namespace nnperf
