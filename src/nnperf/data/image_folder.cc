// ImageFolder loading: list and validate the folders first (cheap, all errors before any
// decoding), check the float tensor against the memory budget, then decode, resize and crop each
// image straight into its slot, in parallel (one image per OpenMP task; errors are collected per
// slot and handled in file order afterwards, so the result does not depend on the thread count).
#include "nnperf/data/image_folder.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <system_error>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"
#include "nnperf/data/image_decode.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

constexpr int kChannels = 3;
constexpr int kMaxInputSize = kMaxImageFolderSide;

bool is_image_name(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  });
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

// Sub-folder names of dir, sorted by bytes.
std::vector<std::string> class_folders(const fs::path& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory(ec)) out.push_back(e.path().filename().string());
  }
  if (ec) fail("{}: cannot list: {}", dir.string(), ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

std::string list_or_none(const std::vector<std::string>& names) {
  if (names.empty()) return "none";
  std::vector<std::string> shown;
  for (std::size_t i = 0; i < names.size() && i < 10; ++i)
    shown.push_back(quote_input(names[i], 60));
  return fmt::format("{}{}", fmt::join(shown, ", "),
                     names.size() > 10 ? fmt::format(" and {} more", names.size() - 10) : "");
}

// The class folder's images (its own files; sub-folders are not searched). What else the folder
// holds is said in one warning, so that images nested one level too deep are not lost unnoticed.
std::vector<fs::path> image_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::vector<std::string> ignored;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (is_image_name(e.path()) && !e.is_directory(ec)) {
      out.push_back(e.path());
    } else {
      ignored.push_back(e.path().filename().string() + (e.is_directory(ec) ? "/" : ""));
    }
  }
  if (ec) fail("{}: cannot list: {}", dir.string(), ec.message());
  std::sort(out.begin(), out.end());
  if (!ignored.empty()) {
    std::sort(ignored.begin(), ignored.end());
    warn("{}: {} ignored ({}): images are read from the class folder itself, as *.jpg, *.jpeg or "
         "*.png, not from its sub-folders",
         dir.string(), ignored.size() == 1 ? std::string("1 entry") : fmt::format("{} entries", ignored.size()),
         list_or_none(ignored));
  }
  return out;
}


void check_same_classes(const fs::path& train_dir, const std::vector<std::string>& train,
                        const fs::path& split_dir, const std::vector<std::string>& split) {
  if (train == split) return;
  std::vector<std::string> only_train, only_split;
  std::set_difference(train.begin(), train.end(), split.begin(), split.end(),
                      std::back_inserter(only_train));
  std::set_difference(split.begin(), split.end(), train.begin(), train.end(),
                      std::back_inserter(only_split));
  fail(
      "{}: its class folders differ from {}'s ({} vs {}): only in {}: {}; only in {}: {}; both "
      "splits need the same classes so that labels mean the same",
      split_dir.string(), train_dir.string(), split.size(), train.size(), train_dir.string(),
      list_or_none(only_train), split_dir.string(), list_or_none(only_split));
}

// The split's class folders, checked: at least two, and the same as train's.
std::vector<std::string> split_classes(const fs::path& dir, const std::string& split) {
  const fs::path split_dir = dir / split;
  std::error_code ec;
  if (!fs::is_directory(split_dir, ec)) {
    fail("{}: folder not found (expected {}/{{train,val}}/<class>/*.{{jpg,jpeg,png}})",
         split_dir.string(), dir.string());
  }
  std::vector<std::string> classes = class_folders(split_dir);
  if (classes.empty()) {
    fail("{}: no class folders (expected {}/<class>/*.{{jpg,jpeg,png}})", split_dir.string(),
         split_dir.string());
  }
  if (classes.size() == 1) {
    fail("{}: one class folder ({}): a classifier needs at least two classes", split_dir.string(),
         quote_input(classes.front(), 60));
  }
  const fs::path train_dir = dir / "train";
  if (split != "train" && fs::is_directory(train_dir, ec)) {
    check_same_classes(train_dir, class_folders(train_dir), split_dir, classes);
  }
  return classes;
}

// Every class's image files (the first max_per_class of each by name when > 0) and their labels.
void list_images(const fs::path& split_dir, const std::vector<std::string>& classes, int64_t max_per_class,
                 std::vector<fs::path>& files, std::vector<int32_t>& labels) {
  for (std::size_t k = 0; k < classes.size(); ++k) {
    const fs::path class_dir = split_dir / classes[k];
    std::vector<fs::path> f = image_files(class_dir);
    if (f.empty()) {
      fail("{}: no images (expected *.jpg, *.jpeg or *.png files; an empty class cannot be learnt)",
           class_dir.string());
    }
    if (max_per_class > 0 && static_cast<int64_t>(f.size()) > max_per_class) {
      f.resize(static_cast<std::size_t>(max_per_class));
    }
    for (fs::path& p : f) {
      files.push_back(std::move(p));
      labels.push_back(static_cast<int32_t>(k));
    }
  }
}

}  // namespace

ImageFolderData load_image_folder(const fs::path& dir, const std::string& split,
                                  const ImageFolderOptions& options) {
  const fs::path split_dir = dir / split;
  if (options.input_size < 1 || options.input_size > kMaxInputSize ||
      options.resize < options.input_size || options.resize > kMaxInputSize) {
    fail("{}: need 1 <= input size <= resize <= {}, got input size {} and resize {}",
         split_dir.string(), kMaxInputSize, options.input_size, options.resize);
  }
  if (options.max_per_class < 0) {
    fail("{}: max images per class must be 0 (all) or positive, got {}", split_dir.string(),
         options.max_per_class);
  }
  ImageFolderData out;
  out.classes = split_classes(dir, split);
  std::vector<fs::path> files;
  std::vector<int32_t> labels;
  list_images(split_dir, out.classes, options.max_per_class, files, labels);

  const auto n = static_cast<int64_t>(files.size());
  const int64_t s = options.input_size;
  const int64_t per = kChannels * s * s;
  const std::optional<int64_t> bytes = checked_mul(n, per * int64_t{sizeof(float)} + 4);
  check_memory(bytes.value_or(-1), fmt::format("{} ({} images as {}x{}x{} float32)",
                                               split_dir.string(), n, kChannels, s, s));

  Tensor images(Shape{n, kChannels, s, s});
  std::vector<std::string> errors(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(dynamic)
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    try {
      const Image img = read_image(files[u]);
      resize_center_crop(img, options.resize, options.input_size, images.data() + i * per);
    } catch (const Error& e) {
      errors[u] = e.what();
    } catch (const std::exception& e) {  // std::bad_alloc: reported like a corrupt file
      errors[u] = fmt::format("{}: {}", files[u].string(), e.what());
    }
  }

  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (!errors[u].empty()) {
      if (options.on_bad_image == OnBadImage::kFail) throw Error(errors[u]);
      out.skipped.push_back({files[u].string(), errors[u]});
      continue;
    }
    if (kept != i) {
      std::memmove(images.data() + kept * per, images.data() + i * per,
                   static_cast<std::size_t>(per) * sizeof(float));
    }
    labels[static_cast<std::size_t>(kept)] = labels[u];
    ++kept;
  }
  if (kept == 0) {
    fail("{}: none of its {} images could be decoded (the first: {})", split_dir.string(), n,
         errors.front());
  }
  labels.resize(static_cast<std::size_t>(kept));

  fs::path base = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  out.data.name = base.string() + "/" + split;
  out.data.num_classes = static_cast<int>(out.classes.size());
  if (kept == n) {
    out.data.images = std::move(images);
  } else {
    out.data.images = Tensor(Shape{kept, kChannels, s, s});
    std::memcpy(out.data.images.data(), images.data(),
                static_cast<std::size_t>(kept * per) * sizeof(float));
  }
  out.data.labels = std::move(labels);
  return out;
}

}  // namespace nnperf
