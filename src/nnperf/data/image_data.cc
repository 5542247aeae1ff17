#include "nnperf/data/image_data.h"

#include <fmt/format.h>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/data/cifar.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

bool path_exists(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string folder_name(const fs::path& dir) {
  const fs::path clean = dir.lexically_normal();
  const std::string name = (clean.has_filename() ? clean : clean.parent_path()).filename().string();
  return name.empty() ? "data" : name;
}

ImageData load_synthetic(const ImageDataOptions& o) {
  ImageData d;
  const int64_t c = o.synthetic_channels > 0 ? o.synthetic_channels : 3;
  const int64_t side =
      o.input_size > 0 ? o.input_size : (o.synthetic_side > 0 ? o.synthetic_side : 32);
  const int64_t k = o.synthetic_classes > 0 ? o.synthetic_classes : 10;
  // Only the images the run uses are made: --limit-train and --limit-test cut the default counts.
  const auto used = [](int64_t limit, int64_t count) {
    return limit > 0 ? std::min(limit, count) : count;
  };
  const int64_t n_test = used(o.limit_test, o.synthetic_test);
  const int64_t n = used(o.limit_train, o.synthetic_train) + n_test;
  // The draw and its split copy are held at once.
  const auto bytes = checked_mul(2 * n, checked_mul(c * side, side * 4).value_or(-1));
  check_memory(bytes.value_or(-1),
               fmt::format("--synthetic: {} images of {}x{}x{} (--limit-train, --limit-test, "
                           "--input-size)",
                           n, c, side, side));
  Dataset all = make_synthetic(n, static_cast<int>(c), static_cast<int>(side),
                               static_cast<int>(side), static_cast<int>(k), o.seed);
  auto [train, test] = split_dataset(all, n_test, o.seed + 7919);
  d.train = std::move(train);
  d.test = std::move(test);
  d.format = d.name = d.source = "synthetic";
  return d;
}

// IDX and CIFAR images have one size: --input-size may only repeat it.
void check_fixed_size(const ImageData& d, int64_t input_size) {
  if (input_size > 0 && input_size != d.side()) {
    throw UsageError(fmt::format(
        "--input-size {}: {} holds {}x{} images (only image folders are resized); leave "
        "--input-size out or give {}",
        input_size, d.source, d.side(), d.side(), d.side()));
  }
}

ImageData load_folder_format(const fs::path& dir, const std::string& format,
                             const ImageDataOptions& o) {
  ImageData d;
  d.source = dir.string();
  if (format == "idx") {
    d.train = load_mnist(dir, "train");
    d.test = load_mnist(dir, "t10k");
    d.format = "idx";
    d.name = folder_name(dir);
  } else if (format == "cifar") {
    d.train = load_cifar(dir, CifarSplit::kTrain);
    d.test = load_cifar(dir, CifarSplit::kTest);
    d.name = d.train.name.substr(0, d.train.name.find('/'));  // "cifar-10", "cifar-100"
    d.format = d.name;
  } else {
    ImageFolderOptions f;
    f.input_size = static_cast<int>(o.input_size > 0 ? o.input_size : 224);
    f.resize = f.input_size * 8 / 7;
    if (f.resize > kMaxImageFolderSide) {
      throw UsageError(fmt::format(
          "--input-size {}: image-folder data are resized to {} (8/7 of it, then centre-cropped to "
          "it), above the {} pixels nnperf decodes; give at most {}",
          o.input_size, f.resize, kMaxImageFolderSide, kMaxImageFolderSide * 7 / 8));
    }
    f.on_bad_image = o.on_bad_image;
    ImageFolderData train = load_image_folder(dir, "train", f);
    ImageFolderData val = load_image_folder(dir, "val", f);
    d.train = std::move(train.data);
    d.test = std::move(val.data);
    d.classes = std::move(train.classes);
    d.skipped = std::move(train.skipped);
    d.skipped.insert(d.skipped.end(), val.skipped.begin(), val.skipped.end());
    d.format = "image-folder";
    d.name = folder_name(dir);
  }
  if (format != "image-folder") check_fixed_size(d, o.input_size);
  return d;
}

}  // namespace

std::string detect_image_format(const fs::path& dir) {
  for (const char* f : {"train-images-idx3-ubyte", "train-images-idx3-ubyte.gz"}) {
    if (path_exists(dir / f)) return "idx";
  }
  for (const char* f :
       {"data_batch_1.bin", "train.bin", "cifar-10-batches-bin", "cifar-100-binary"}) {
    if (path_exists(dir / f)) return "cifar";
  }
  std::error_code ec;
  if (fs::is_directory(dir / "train", ec)) return "image-folder";
  return "";
}

ImageData load_image_data(const ImageDataOptions& o) {
  ImageData d;
  if (o.synthetic) {
    d = load_synthetic(o);
  } else {
    const fs::path dir = o.dir.empty() ? default_data_dir() : o.dir;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      throw Error(fmt::format(
          "--data {}: no such folder; nnperf does not download data sets: put Fashion-MNIST's "
          "IDX files there (Debian: apt-get install dataset-fashion-mnist), CIFAR's binary "
          "version (cifar-10-batches-bin/ from cifar-10-binary.tar.gz) or an image folder "
          "(train/<class>/*.jpg and val/<class>/*.jpg)",
          dir.string()));
    }
    const std::string format = detect_image_format(dir);
    if (format.empty()) {
      throw Error(fmt::format(
          "--data {}: no data set found: expected MNIST-format IDX files "
          "(train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-...), CIFAR binary "
          "files (data_batch_1..5.bin + test_batch.bin, or train.bin + test.bin for CIFAR-100) or "
          "an image folder (train/<class>/*.jpg|png, val/<class>/...); nnperf does not download "
          "data",
          dir.string()));
    }
    d = load_folder_format(dir, format, o);
    check_same_sample_shape(d.train, d.test, dir.string());
  }
  d.train = take_first(d.train, o.limit_train);
  d.test = take_first(d.test, o.limit_test);
  d.norm = d.format == "cifar-10" ? cifar10_norm() : channel_norm(d.train);
  return d;
}

}  // namespace nnperf
