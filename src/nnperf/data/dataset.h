// Data sets in memory: images as float32 N x C x H x W (scaled to [0,1]), labels as int32.
// Readers validate magic numbers, dimensions, counts and file length, and name the file and the
// problem in every error.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "nnperf/core/rng.h"
#include "nnperf/core/tensor.h"

namespace nnperf {

struct Dataset {
  std::string name;             // "fashion-mnist/train"
  Tensor images;                // N x C x H x W, float32 in [0,1]
  std::vector<int32_t> labels;  // N
  int num_classes = 10;
  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t sample_numel() const { return size() == 0 ? 0 : images.numel() / size(); }
};

// A raw IDX array: the payload's bytes as stored (big-endian), with its type and dimensions.
struct IdxArray {
  uint8_t type_code = 0;  // 0x08 ubyte, 0x09 byte, 0x0B short, 0x0C int, 0x0D float, 0x0E double
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;  // big-endian payload as in the file
};

// Reads an IDX file, raw or gzip (detected from the first bytes, not the name). Checks the magic
// (00 00 type ndims, type in {08,09,0B,0C,0D,0E}, 1..4 dims, each >= 1) and that the payload is
// exactly prod(dims) * element size; errors name the file and the problem ("truncated: header
// says 60000x28x28 ubyte (47040000 bytes) but the file holds only 1234 ...").
// The header is never trusted: before allocating, the claimed payload (overflow-checked) must fit
// the file (exactly for raw files; for gzip within the compressed size times deflate's maximum
// ratio 1032:1) and check_memory(); a gzip payload buffer then grows only as inflated data
// arrives unless the gzip trailer's ISIZE confirms the claim. Concatenated gzip members are
// accepted; other bytes after the gzip stream are an error.
IdxArray read_idx(const std::filesystem::path& path);
// The same for IDX content already in memory (raw or gzip bytes); `source` names it in errors.
IdxArray parse_idx(std::string_view bytes, const std::string& source);
int idx_element_size(uint8_t type_code);       // 0 for an unknown code
const char* idx_type_name(uint8_t type_code);  // "ubyte", ... or "unknown"

// Finds and loads `<dir>/<prefix>-images-idx3-ubyte[.gz]` and the matching labels
// (prefix "train" or "t10k"). Refuses label files whose count differs from the images'.
// Images must be ubyte N x H x W (-> N x 1 x H x W floats in [0,1], value / 255), labels ubyte
// N with values 0..9. A missing folder or file names the path and how to get the data.
Dataset load_mnist(const std::filesystem::path& dir, const std::string& prefix);

// Deterministic synthetic classification data (learnable: a smooth class-dependent prototype
// image plus uniform noise, clamped to [0,1]; classes balanced, in a seeded order).
Dataset make_synthetic(int64_t n, int channels, int height, int width, int num_classes,
                       uint64_t seed);

// Splits off the last `n_second` samples after a seeded shuffle (random_split semantics).
std::pair<Dataset, Dataset> split_dataset(const Dataset& all, int64_t n_second, uint64_t seed);

// Throws Error naming `source` when the test samples' C x H x W differ from the training ones
// (a model is built for one input shape).
void check_same_sample_shape(const Dataset& train, const Dataset& test, const std::string& source);

// The first n samples (n <= 0 or n >= size: a copy of all), named "<name>[:n]".
Dataset take_first(const Dataset& d, int64_t n);

// 0..n-1, shuffled when `shuffle`: a function of (seed, epoch) alone, so a resumed run and any
// number of loader threads see the same order (Batcher and BatchLoader both use it).
std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle);

// Mini-batches over a Dataset: shuffled each epoch (seeded), last partial batch kept.
class Batcher {
 public:
  // The Dataset must outlive the Batcher. batch_size < 1 throws.
  Batcher(const Dataset& data, int64_t batch_size, bool shuffle, uint64_t seed);
  void start_epoch();  // reshuffles when shuffle is on
  // Starts a given epoch: its order depends only on (seed, epoch), so a resumed run sees the
  // same batches as an uninterrupted one. start_epoch() is start_epoch(epoch() + 1).
  void start_epoch(int64_t epoch);
  int64_t epoch() const { return epoch_; }  // -1 before the first start (next() starts epoch 0)
  // Fills x (mb x C x H x W, or mb x features when flatten) and labels; returns false at epoch end.
  // x is resized only when its shape changes (the last, partial batch of an epoch).
  bool next(Tensor& x, std::vector<int32_t>& labels, bool flatten);
  int64_t batches_per_epoch() const;

 private:
  const Dataset& data_;
  int64_t batch_size_;
  bool shuffle_;
  std::vector<int64_t> order_;
  int64_t pos_ = 0;
  uint64_t seed_;
  int64_t epoch_ = -1;
};

std::filesystem::path default_data_dir();  // $NNPERF_DATA or /usr/share/datasets/fashion-mnist

}  // namespace nnperf
