// IDX reading (raw or gzip through zlib's gzread, which inflates straight into our buffer),
// MNIST-style loading, synthetic data, seeded splits and the mini-batch iterator.
// Fashion-MNIST's 60000 training images are 47 MB of bytes: one inflate into one buffer and one
// conversion loop take ~0.2 s; everything else here is bookkeeping and validation.
#include "nnperf/data/dataset.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <system_error>

#include "nnperf/core/error.h"

namespace nnperf {

namespace fs = std::filesystem;

namespace {

constexpr int kIdxMaxDims = 4;
constexpr int kMnistClasses = 10;
constexpr const char* kDataHint =
    "pass --data DIR (a folder with <prefix>-images-idx3-ubyte[.gz] and "
    "<prefix>-labels-idx1-ubyte[.gz]), use --synthetic, or install the Debian package "
    "dataset-fashion-mnist (files in /usr/share/datasets/fashion-mnist)";

std::string dims_str(const std::vector<int64_t>& dims) {
  return fmt::format("{}", fmt::join(dims, "x"));
}

// A file read through zlib: gzread is transparent for raw files and inflates gzip members
// (detected from the 1f 8b magic, never from the name).
class ZSource {
 public:
  explicit ZSource(const fs::path& path) : path_(path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      fail("{}: cannot open: {}", path.string(),
           std::error_code(errno, std::generic_category()).message());
    }
    if (!S_ISREG(st.st_mode)) fail("{}: not a regular file", path.string());
    file_ = gzopen(path.c_str(), "rb");
    if (file_ == nullptr) fail("{}: cannot open (zlib gzopen failed)", path.string());
    gzbuffer(file_, 1 << 17);
  }
  ~ZSource() {
    if (file_ != nullptr) gzclose(file_);
  }
  ZSource(const ZSource&) = delete;
  ZSource& operator=(const ZSource&) = delete;

  // Reads up to n bytes; returns fewer only at the end of the data. Corrupt or cut-off gzip
  // streams throw (zlib reports them once the damaged part is reached).
  std::size_t read(void* dst, std::size_t n) {
    auto* p = static_cast<unsigned char*>(dst);
    std::size_t total = 0;
    while (total < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - total, 1u << 30));
      const int got = gzread(file_, p + total, chunk);
      if (got > 0) total += static_cast<std::size_t>(got);
      check_error(total);
      if (got <= 0 || static_cast<unsigned>(got) < chunk) break;
    }
    return total;
  }
  bool gzip() const { return gzdirect(file_) == 0; }

 private:
  void check_error(std::size_t total_this_call) {
    int errnum = Z_OK;
    std::string msg = gzerror(file_, &errnum);
    if (errnum == Z_OK) return;
    if (msg.starts_with(path_.string() + ": ")) msg.erase(0, path_.string().size() + 2);
    if (errnum == Z_BUF_ERROR) {
      fail(
          "{}: truncated gzip stream: it ends before the gzip end-of-stream marker ({}); "
          "the download was probably cut short",
          path_.string(), msg);
    }
    if (errnum == Z_ERRNO) {
      fail("{}: read error: {}", path_.string(),
           std::error_code(errno, std::generic_category()).message());
    }
    fail("{}: corrupt gzip data (zlib: {}) after {} decompressed bytes", path_.string(), msg,
         total_this_call);
  }

  fs::path path_;
  gzFile file_ = nullptr;
};

uint32_t be32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) << 24 | static_cast<uint32_t>(p[1]) << 16 |
         static_cast<uint32_t>(p[2]) << 8 | static_cast<uint32_t>(p[3]);
}

// First existing path among `<dir>/<stem>` and `<dir>/<stem>.gz`; MNIST's own site also used
// "images.idx3-ubyte" with a dot, so that spelling is accepted too.
fs::path find_idx(const fs::path& dir, const std::string& prefix, const std::string& kind,
                  const std::string& idx) {
  const std::string names[] = {prefix + "-" + kind + "-" + idx, prefix + "-" + kind + "." + idx};
  for (const auto& n : names) {
    for (const char* ext : {"", ".gz"}) {
      const fs::path p = dir / (n + ext);
      std::error_code ec;
      if (fs::is_regular_file(p, ec)) return p;
    }
  }
  fail("{}: not found (nor {}.gz); {}", (dir / names[0]).string(), names[0], kDataHint);
}

// Copies the samples `idx` of `src` into a new Dataset (the gather behind splits).
Dataset gather(const Dataset& src, const int64_t* idx, int64_t n, std::string name) {
  Dataset out;
  out.name = std::move(name);
  out.num_classes = src.num_classes;
  std::vector<int64_t> dims = src.images.shape().dims();
  const int64_t per = src.sample_numel();
  if (dims.empty()) dims = {0};
  dims[0] = n;
  out.images = Tensor(Shape(dims));
  out.labels.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out.images.data() + i * per, src.images.data() + idx[i] * per,
                static_cast<std::size_t>(per) * sizeof(float));
    out.labels[static_cast<std::size_t>(i)] = src.labels[static_cast<std::size_t>(idx[i])];
  }
  return out;
}

void shuffle(std::vector<int64_t>& v, Rng& rng) {
  // Fisher-Yates with our own Rng: std::shuffle's output differs between standard libraries.
  for (std::size_t i = v.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(rng.below(i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

int idx_element_size(uint8_t type_code) {
  switch (type_code) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

const char* idx_type_name(uint8_t type_code) {
  switch (type_code) {
    case 0x08:
      return "ubyte";
    case 0x09:
      return "byte";
    case 0x0B:
      return "short";
    case 0x0C:
      return "int";
    case 0x0D:
      return "float";
    case 0x0E:
      return "double";
    default:
      return "unknown";
  }
}

IdxArray read_idx(const fs::path& path) {
  ZSource src(path);
  const std::string file = path.string();
  unsigned char magic[4];
  const std::size_t got_magic = src.read(magic, 4);
  const char* kind = src.gzip() ? "decompressed data" : "file";
  if (got_magic < 4) {
    fail("{}: truncated: the {} holds {} bytes, fewer than the 4-byte IDX magic", file, kind,
         got_magic);
  }
  if (magic[0] != 0 || magic[1] != 0) {
    fail(
        "{}: not an IDX file: it starts with {:02x} {:02x} {:02x} {:02x}, expected 00 00 <type> "
        "<ndims>{}",
        file, magic[0], magic[1], magic[2], magic[3],
        src.gzip() ? " (after gzip decompression)" : "");
  }
  IdxArray out;
  out.type_code = magic[2];
  const int elem = idx_element_size(out.type_code);
  if (elem == 0) {
    fail(
        "{}: unknown IDX element type 0x{:02X} (expected 08 ubyte, 09 byte, 0B short, 0C int, "
        "0D float or 0E double)",
        file, out.type_code);
  }
  const int ndims = magic[3];
  if (ndims < 1 || ndims > kIdxMaxDims) {
    fail("{}: IDX header gives {} dimensions (expected 1 to {})", file, ndims, kIdxMaxDims);
  }
  const std::size_t header_bytes = 4 + 4 * static_cast<std::size_t>(ndims);
  unsigned char dim_bytes[4 * kIdxMaxDims];
  const std::size_t got_dims = src.read(dim_bytes, 4 * static_cast<std::size_t>(ndims));
  if (got_dims < 4 * static_cast<std::size_t>(ndims)) {
    fail("{}: truncated: the {} ends inside the IDX header ({} of {} header bytes)", file, kind,
         4 + got_dims, header_bytes);
  }
  // Every dimension is an int32 in the format; the product is bounded well inside int64.
  int64_t count = 1;
  for (int d = 0; d < ndims; ++d) {
    const uint32_t v = be32(dim_bytes + 4 * d);
    if (v == 0 || v > static_cast<uint32_t>(INT32_MAX)) {
      fail("{}: IDX dimension {} of {} is {} (expected 1 to {})", file, d + 1, ndims, v, INT32_MAX);
    }
    out.dims.push_back(v);
    count *= v;
    if (count > (int64_t{1} << 40)) {
      fail("{}: IDX header says {} elements, implausibly large (corrupt header?)", file,
           dims_str(out.dims));
    }
  }
  const auto expected = static_cast<std::size_t>(count) * static_cast<std::size_t>(elem);
  out.bytes.resize(expected);
  const std::size_t got = src.read(out.bytes.data(), expected);
  if (got < expected) {
    fail(
        "{}: truncated: header says {} {} ({} bytes) but the {} holds only {} bytes after the "
        "{}-byte header",
        file, dims_str(out.dims), idx_type_name(out.type_code), expected, kind, got, header_bytes);
  }
  // Read to the end: reports extra bytes, and makes zlib verify the gzip CRC and length trailer.
  std::size_t extra = 0;
  unsigned char sink[1 << 14];
  for (std::size_t n; (n = src.read(sink, sizeof sink)) > 0;) extra += n;
  if (extra > 0) {
    fail("{}: too long: header says {} {} ({} bytes) but the {} holds {} more bytes after them",
         file, dims_str(out.dims), idx_type_name(out.type_code), expected, kind, extra);
  }
  return out;
}

Dataset load_mnist(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("{}: data folder not found; {}", dir.string(), kDataHint);
  const fs::path images_path = find_idx(dir, prefix, "images", "idx3-ubyte");
  const fs::path labels_path = find_idx(dir, prefix, "labels", "idx1-ubyte");

  IdxArray labels = read_idx(labels_path);
  if (labels.type_code != 0x08 || labels.dims.size() != 1) {
    fail("{}: expected ubyte labels of 1 dimension (N), found {} of shape {}", labels_path.string(),
         idx_type_name(labels.type_code), dims_str(labels.dims));
  }
  IdxArray images = read_idx(images_path);
  if (images.type_code != 0x08 || images.dims.size() != 3) {
    fail("{}: expected ubyte images of 3 dimensions (N x H x W), found {} of shape {}",
         images_path.string(), idx_type_name(images.type_code), dims_str(images.dims));
  }
  const int64_t n = images.dims[0];
  if (labels.dims[0] != n) {
    fail("{} holds {} images but {} holds {} labels; both files must come from the same split",
         images_path.string(), n, labels_path.string(), labels.dims[0]);
  }

  Dataset ds;
  fs::path base = dir.filename().empty() ? dir.parent_path().filename() : dir.filename();
  ds.name = base.string() + "/" + prefix;
  ds.num_classes = kMnistClasses;
  ds.labels.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t v = labels.bytes[static_cast<std::size_t>(i)];
    if (v >= kMnistClasses) {
      fail("{}: label {} at index {} is out of range (expected 0 to {})", labels_path.string(), v,
           i, kMnistClasses - 1);
    }
    ds.labels[static_cast<std::size_t>(i)] = v;
  }
  ds.images = Tensor(Shape{n, 1, images.dims[1], images.dims[2]});
  const uint8_t* src = images.bytes.data();
  float* dst = ds.images.data();
  const int64_t total = ds.images.numel();
  // Division, not multiplication by 1/255: bit-identical to torchvision's ToTensor (x / 255).
  for (int64_t i = 0; i < total; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  return ds;
}

Dataset make_synthetic(int64_t n, int channels, int height, int width, int num_classes,
                       uint64_t seed) {
  if (n < 1 || channels < 1 || height < 1 || width < 1) {
    fail("synthetic data: need n >= 1 and a positive shape, got n={} shape {}x{}x{}", n, channels,
         height, width);
  }
  if (num_classes < 2) fail("synthetic data: need at least 2 classes, got {}", num_classes);
  constexpr int kBlobs = 3;  // Gaussian bumps per class and channel
  constexpr float kBackground = 0.1f;
  constexpr double kNoise = 0.2;  // uniform noise amplitude; classes stay separable
  Rng rng(seed);
  const int64_t plane = static_cast<int64_t>(height) * width;
  const int64_t per = channels * plane;

  // One prototype image per class: smooth, spatially distinct, so both MLPs and convolutions learn.
  std::vector<float> proto(static_cast<std::size_t>(num_classes * per));
  for (int k = 0; k < num_classes; ++k) {
    for (int c = 0; c < channels; ++c) {
      float* p = proto.data() + k * per + c * plane;
      std::fill_n(p, plane, kBackground);
      for (int b = 0; b < kBlobs; ++b) {
        const double cy = rng.uniform(0, height), cx = rng.uniform(0, width);
        const double s = std::max(0.5, rng.uniform(0.08, 0.25) * std::max(height, width));
        const double amp = rng.uniform(0.4, 0.8);
        for (int y = 0; y < height; ++y) {
          for (int x = 0; x < width; ++x) {
            const double d2 = (y - cy) * (y - cy) + (x - cx) * (x - cx);
            p[y * width + x] += static_cast<float>(amp * std::exp(-d2 / (2 * s * s)));
          }
        }
      }
      for (int64_t i = 0; i < plane; ++i) p[i] = std::min(p[i], 0.9f);
    }
  }

  std::vector<int64_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);  // balanced classes (i % k) in a seeded random order

  Dataset ds;
  ds.name = fmt::format("synthetic/{}x{}x{}-{}classes-seed{}", channels, height, width, num_classes,
                        seed);
  ds.num_classes = num_classes;
  ds.images = Tensor(Shape{n, channels, height, width});
  ds.labels.resize(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int label = static_cast<int>(order[static_cast<std::size_t>(i)] % num_classes);
    ds.labels[static_cast<std::size_t>(i)] = label;
    const float* p = proto.data() + label * per;
    float* dst = ds.images.data() + i * per;
    for (int64_t j = 0; j < per; ++j) {
      const double v = p[j] + rng.uniform(-kNoise, kNoise);
      dst[j] = static_cast<float>(std::clamp(v, 0.0, 1.0));
    }
  }
  return ds;
}

std::pair<Dataset, Dataset> split_dataset(const Dataset& all, int64_t n_second, uint64_t seed) {
  const int64_t n = all.size();
  if (n_second < 0 || n_second > n) {
    fail("{}: cannot split off {} samples from {} (expected 0 to {})", all.name, n_second, n, n);
  }
  std::vector<int64_t> perm(static_cast<std::size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  Rng rng(seed);
  shuffle(perm, rng);
  const int64_t n_first = n - n_second;
  return {gather(all, perm.data(), n_first, all.name + "[split 1]"),
          gather(all, perm.data() + n_first, n_second, all.name + "[split 2]")};
}

Batcher::Batcher(const Dataset& data, int64_t batch_size, bool shuffle, uint64_t seed)
    : data_(data), batch_size_(batch_size), shuffle_(shuffle), rng_(seed), seed_(seed) {
  if (batch_size < 1) fail("{}: batch size must be at least 1, got {}", data.name, batch_size);
  // An empty data set (a split with nothing held out) simply yields no batches.
  if (data.size() > 0 && (data.images.shape().rank() < 2 || data.images.size(0) != data.size())) {
    fail("{}: images {} do not match {} labels", data.name, data.images.shape().str(), data.size());
  }
  order_.resize(static_cast<std::size_t>(data.size()));
  std::iota(order_.begin(), order_.end(), 0);
  pos_ = data.size();  // nothing to deliver until an epoch starts
}

void Batcher::start_epoch() { start_epoch(epoch_ + 1); }

void Batcher::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  pos_ = 0;
  std::iota(order_.begin(), order_.end(), 0);
  if (shuffle_) {
    // Each epoch's order is a function of (seed, epoch) alone; the golden-ratio step keeps the
    // per-epoch seeds far apart.
    rng_.reseed(seed_ ^ (static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull));
    shuffle(order_, rng_);
  }
}

bool Batcher::next(Tensor& x, std::vector<int32_t>& labels, bool flatten) {
  if (epoch_ < 0) start_epoch(0);
  const int64_t n = data_.size();
  if (pos_ >= n) return false;
  const int64_t mb = std::min(batch_size_, n - pos_);
  const int64_t per = data_.sample_numel();
  std::vector<int64_t> dims;
  if (flatten) {
    dims = {mb, per};
  } else {
    dims = data_.images.shape().dims();
    dims[0] = mb;
  }
  if (x.shape().dims() != dims) x.resize(Shape(std::move(dims)));
  labels.resize(static_cast<std::size_t>(mb));
  const float* src = data_.images.data();
  float* dst = x.data();
  for (int64_t i = 0; i < mb; ++i) {
    const int64_t s = order_[static_cast<std::size_t>(pos_ + i)];
    std::memcpy(dst + i * per, src + s * per, static_cast<std::size_t>(per) * sizeof(float));
    labels[static_cast<std::size_t>(i)] = data_.labels[static_cast<std::size_t>(s)];
  }
  pos_ += mb;
  return true;
}

int64_t Batcher::batches_per_epoch() const {
  return (data_.size() + batch_size_ - 1) / batch_size_;
}

fs::path default_data_dir() {
  const char* env = std::getenv("NNPERF_DATA");
  if (env != nullptr && *env != '\0') return env;
  return "/usr/share/datasets/fashion-mnist";
}

}  // namespace nnperf
