// CIFAR binary records -> Dataset. The pixel bytes are already planar (R, G, B planes of 32x32),
// so conversion is one division per byte; the rest is validation: file sizes (stat) against the
// record size, every label against the class count, and the float copy against the memory budget,
// all before the big allocation. CIFAR-10's 50,000 training images are 154 MB of bytes and
// 614 MB of floats.
#include "nnperf/data/cifar.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <system_error>
#include <vector>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCifarUrl = "https://www.cs.toronto.edu/~kriz/cifar.html";
constexpr int kCifar10Classes = 10;
constexpr int kCifar100Fine = 100;
constexpr int kCifar100Coarse = 20;

int64_t record_bytes(int label_bytes) { return label_bytes + kCifarPixelBytes; }

int num_classes(int label_bytes, CifarLabel label) {
  if (label_bytes == 1) return kCifar10Classes;
  return label == CifarLabel::kCoarse ? kCifar100Coarse : kCifar100Fine;
}

// The number of whole records in `size` bytes; anything else is refused naming the leftover.
int64_t count_records(int64_t size, int label_bytes, const std::string& source) {
  const int64_t rec = record_bytes(label_bytes);
  const char* kind = label_bytes == 1 ? "CIFAR-10" : "CIFAR-100";
  if (size == 0) {
    fail("{}: empty (expected {} records of {} bytes: {} label byte{} + {} pixel bytes)", source,
         kind, rec, label_bytes, label_bytes == 1 ? "" : "s", kCifarPixelBytes);
  }
  if (size % rec != 0) {
    fail(
        "{}: size {} bytes is not a whole number of {} records of {} bytes ({} label byte{} + {} "
        "pixel bytes): {} whole records and {} bytes left over (a cut download, or not a {} "
        "binary file)",
        source, size, kind, rec, label_bytes, label_bytes == 1 ? "" : "s", kCifarPixelBytes,
        size / rec, size % rec, kind);
  }
  return size / rec;
}

// Checks the labels of `count` records at `src` and converts them into dst (count x 3072 floats)
// and labels; messages count records from src's first.
void decode_records(const unsigned char* src, int64_t count, int label_bytes, CifarLabel label,
                    const std::string& source, float* dst, int32_t* labels) {
  const int64_t rec = record_bytes(label_bytes);
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* r = src + i * rec;
    if (label_bytes == 1) {
      if (r[0] >= kCifar10Classes) {
        fail("{}: record {} has label {} (expected 0 to {})", source, i, r[0], kCifar10Classes - 1);
      }
      labels[i] = r[0];
    } else {
      if (r[0] >= kCifar100Coarse) {
        fail("{}: record {} has coarse label {} (expected 0 to {})", source, i, r[0],
             kCifar100Coarse - 1);
      }
      if (r[1] >= kCifar100Fine) {
        fail("{}: record {} has fine label {} (expected 0 to {})", source, i, r[1],
             kCifar100Fine - 1);
      }
      labels[i] = label == CifarLabel::kCoarse ? r[0] : r[1];
    }
    const unsigned char* px = r + label_bytes;
    float* out = dst + i * kCifarPixelBytes;
    // Division, not multiplication by 1/255: bit-identical to torchvision's ToTensor (x / 255).
    for (int64_t j = 0; j < kCifarPixelBytes; ++j) out[j] = static_cast<float>(px[j]) / 255.0f;
  }
}

void check_float_memory(int64_t n, int64_t extra_bytes, const std::string& what) {
  const std::optional<int64_t> bytes =
      checked_mul(n, kCifarPixelBytes * int64_t{sizeof(float)} + int64_t{sizeof(int32_t)});
  check_memory(checked_add(bytes.value_or(INT64_MAX), extra_bytes).value_or(-1),
               fmt::format("{} ({} images of 3x32x32 as float32)", what, n));
}

void check_options(const CifarOptions& options, const std::string& source) {
  if (options.limit < 0)
    fail("{}: limit must be 0 (all) or positive, got {}", source, options.limit);
}

struct CifarLayout {
  fs::path dir;
  int label_bytes = 1;  // 1: CIFAR-10, 2: CIFAR-100
};

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::exists(p, ec);
}

std::string download_hint(int label_bytes, const fs::path& expected) {
  return fmt::format("download {} from {} and extract it so that {} exists",
                     label_bytes == 1 ? "cifar-10-binary.tar.gz" : "cifar-100-binary.tar.gz",
                     kCifarUrl, expected.string());
}

// CIFAR-10 or CIFAR-100, from the files present in dir (or in the folder the archive creates).
CifarLayout find_layout(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    fail(
        "{}: CIFAR folder not found; {} (or cifar-100-binary.tar.gz, so that DIR/train.bin exists)",
        dir.string(), download_hint(1, dir / "data_batch_1.bin"));
  }
  for (const fs::path& d : {dir, dir / "cifar-10-batches-bin", dir / "cifar-100-binary"}) {
    if (is_file(d / "data_batch_1.bin") || is_file(d / "test_batch.bin")) return {d, 1};
    if (is_file(d / "train.bin") || is_file(d / "test.bin")) return {d, 2};
  }
  fail(
      "{}: no CIFAR binary files here (expected data_batch_1.bin .. data_batch_5.bin and "
      "test_batch.bin for CIFAR-10, or train.bin and test.bin for CIFAR-100, in this folder or in "
      "its cifar-10-batches-bin/ or cifar-100-binary/); {} (or cifar-100-binary.tar.gz, so that "
      "DIR/train.bin exists); nnperf never downloads",
      dir.string(), download_hint(1, dir / "data_batch_1.bin"));
}

std::vector<fs::path> split_files(const CifarLayout& layout, CifarSplit split) {
  std::vector<fs::path> files;
  if (layout.label_bytes == 1) {
    if (split == CifarSplit::kTest) {
      files.push_back(layout.dir / "test_batch.bin");
    } else {
      for (int i = 1; i <= 5; ++i)
        files.push_back(layout.dir / fmt::format("data_batch_{}.bin", i));
    }
  } else {
    files.push_back(layout.dir / (split == CifarSplit::kTest ? "test.bin" : "train.bin"));
  }
  return files;
}

// Reads the first `bytes` bytes of a file whose size was checked before.
std::string read_prefix(const fs::path& path, int64_t bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open for reading", path.string());
  std::string buf(static_cast<std::size_t>(bytes), '\0');
  in.read(buf.data(), static_cast<std::streamsize>(bytes));
  if (in.gcount() != static_cast<std::streamsize>(bytes)) {
    fail("{}: read only {} of {} bytes (did the file change while it was read?)", path.string(),
         static_cast<int64_t>(in.gcount()), bytes);
  }
  return buf;
}

}  // namespace

const char* to_string(CifarSplit split) { return split == CifarSplit::kTest ? "test" : "train"; }

Dataset parse_cifar_records(std::string_view bytes, int label_bytes, const std::string& source,
                            const CifarOptions& options) {
  if (label_bytes != 1 && label_bytes != 2) {
    fail("{}: label_bytes must be 1 (CIFAR-10) or 2 (CIFAR-100), got {}", source, label_bytes);
  }
  check_options(options, source);
  const int64_t count = count_records(static_cast<int64_t>(bytes.size()), label_bytes, source);
  const int64_t n = options.limit > 0 ? std::min(options.limit, count) : count;
  check_float_memory(n, 0, source);
  Dataset ds;
  ds.name = source;
  ds.num_classes = num_classes(label_bytes, options.label);
  ds.images = Tensor(Shape{n, kCifarChannels, kCifarSide, kCifarSide});
  ds.labels.resize(static_cast<std::size_t>(n));
  decode_records(reinterpret_cast<const unsigned char*>(bytes.data()), n, label_bytes,
                 options.label, source, ds.images.data(), ds.labels.data());
  return ds;
}

Dataset load_cifar(const fs::path& dir, CifarSplit split, const CifarOptions& options) {
  check_options(options, dir.string());
  const CifarLayout layout = find_layout(dir);
  const std::vector<fs::path> files = split_files(layout, split);

  // Every file of the split is present and a whole number of records before anything is read.
  std::vector<int64_t> counts;
  int64_t total = 0;
  for (const fs::path& f : files) {
    std::error_code ec;
    if (!fs::exists(f, ec)) {
      fail("{}: missing ({} {} needs {}); {}; nnperf never downloads", f.string(),
           layout.label_bytes == 1 ? "CIFAR-10" : "CIFAR-100", to_string(split),
           files.size() == 1 ? f.filename().string()
                             : "data_batch_1.bin to data_batch_5.bin in " + layout.dir.string(),
           download_hint(layout.label_bytes, files.front()));
    }
    if (!fs::is_regular_file(f, ec)) fail("{}: not a regular file", f.string());
    const auto size = static_cast<int64_t>(fs::file_size(f, ec));
    if (ec) fail("{}: cannot read its size: {}", f.string(), ec.message());
    counts.push_back(count_records(size, layout.label_bytes, f.string()));
    total += counts.back();
  }

  const int64_t n = options.limit > 0 ? std::min(options.limit, total) : total;
  const int64_t rec = record_bytes(layout.label_bytes);
  // One file's bytes are held at a time beside the floats.
  int64_t largest_read = 0;
  for (int64_t c : counts) largest_read = std::max(largest_read, std::min(c, n) * rec);
  check_float_memory(n, largest_read, layout.dir.string());

  Dataset ds;
  const std::string family = layout.label_bytes == 1                ? "cifar-10"
                             : options.label == CifarLabel::kCoarse ? "cifar-100-coarse"
                                                                    : "cifar-100";
  ds.name = family + "/" + to_string(split);
  ds.num_classes = num_classes(layout.label_bytes, options.label);
  ds.images = Tensor(Shape{n, kCifarChannels, kCifarSide, kCifarSide});
  ds.labels.resize(static_cast<std::size_t>(n));
  int64_t done = 0;
  for (std::size_t i = 0; i < files.size() && done < n; ++i) {
    const int64_t take = std::min(counts[i], n - done);
    const std::string bytes = read_prefix(files[i], take * rec);
    decode_records(reinterpret_cast<const unsigned char*>(bytes.data()), take, layout.label_bytes,
                   options.label, files[i].string(), ds.images.data() + done * kCifarPixelBytes,
                   ds.labels.data() + done);
    done += take;
  }
  return ds;
}

}  // namespace nnperf
