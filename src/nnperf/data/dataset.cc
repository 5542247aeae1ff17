// IDX reading (raw, or gzip through zlib's inflate straight into our buffer), MNIST-style loading,
// synthetic data, seeded splits and the mini-batch iterator.
// Fashion-MNIST's 60000 training images are 47 MB of bytes: one inflate into one buffer and one
// conversion loop take ~0.2 s; everything else here is bookkeeping and validation. Sizes read from
// a header are never trusted: they are checked against the input's size and the memory budget
// before any allocation (files are hostile input too).
#include "nnperf/data/dataset.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <optional>
#include <string_view>
#include <system_error>

#include "nnperf/core/error.h"
#include "nnperf/core/memory.h"

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

// ---- IDX input: the bytes of a file or of a memory buffer, raw or gzip ----
// read_idx (a file) and parse_idx (bytes in memory) differ only in where the bytes come from;
// decode_idx below holds every check once.

// Where the (possibly gzip-compressed) bytes come from; the total size is known up front.
class ByteInput {
 public:
  virtual ~ByteInput() = default;
  // Copies up to n bytes; returns fewer only at the end of the input.
  virtual std::size_t read(unsigned char* dst, std::size_t n) = 0;
  virtual int64_t size() const = 0;
  // The last 4 bytes as a little-endian number (a gzip trailer's ISIZE), if there are 4.
  virtual std::optional<uint32_t> last_le32() = 0;
};

uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

class MemoryInput final : public ByteInput {
 public:
  explicit MemoryInput(std::string_view bytes) : bytes_(bytes) {}
  std::size_t read(unsigned char* dst, std::size_t n) override {
    const std::size_t k = std::min(n, bytes_.size() - pos_);
    if (k > 0) std::memcpy(dst, bytes_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  int64_t size() const override { return static_cast<int64_t>(bytes_.size()); }
  std::optional<uint32_t> last_le32() override {
    if (bytes_.size() < 4) return std::nullopt;
    return le32(reinterpret_cast<const unsigned char*>(bytes_.data() + bytes_.size() - 4));
  }

 private:
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

// A regular file read with read(2); its size comes from fstat on the open descriptor.
class FileInput final : public ByteInput {
 public:
  explicit FileInput(const fs::path& path) : path_(path) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below); reads
    // from regular files ignore the flag.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd_ < 0) fail("{}: cannot open: {}", path.string(), errno_text());
    struct stat st {};
    const bool stat_ok = ::fstat(fd_, &st) == 0;
    const std::string why = stat_ok ? "" : errno_text();
    if (!stat_ok || !S_ISREG(st.st_mode)) {
      ::close(fd_);  // the destructor does not run for a constructor that throws
      if (!stat_ok) fail("{}: cannot stat: {}", path.string(), why);
      fail("{}: not a regular file", path.string());
    }
    size_ = static_cast<int64_t>(st.st_size);
  }
  ~FileInput() override {
    if (fd_ >= 0) ::close(fd_);
  }
  FileInput(const FileInput&) = delete;
  FileInput& operator=(const FileInput&) = delete;

  std::size_t read(unsigned char* dst, std::size_t n) override {
    std::size_t total = 0;
    while (total < n) {
      const ssize_t got = ::read(fd_, dst + total, std::min<std::size_t>(n - total, 1u << 30));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) fail("{}: read error: {}", path_.string(), errno_text());
      if (got == 0) break;
      total += static_cast<std::size_t>(got);
    }
    return total;
  }
  int64_t size() const override { return size_; }
  std::optional<uint32_t> last_le32() override {
    unsigned char tail[4];
    if (size_ < 4 || ::pread(fd_, tail, 4, static_cast<off_t>(size_ - 4)) != 4) return std::nullopt;
    return le32(tail);
  }

 private:
  static std::string errno_text() {
    return std::error_code(errno, std::generic_category()).message();
  }
  fs::path path_;
  int fd_ = -1;
  int64_t size_ = 0;
};

// Deflate cannot expand more than 1032:1 (a 258-byte match in 2 bits), so a gzip input of N
// bytes inflates to at most N * 1032 bytes (plus slack for the smallest inputs).
constexpr int64_t kMaxDeflateRatio = 1032;
constexpr int64_t kInflateSlack = 4096;

// The decoded bytes of a ByteInput: passed through when raw, inflated by zlib when the input
// starts with the gzip magic 1f 8b (never decided by the name). Concatenated gzip members are
// read one after the other, as gunzip does.
class IdxStream {
 public:
  IdxStream(ByteInput& in, const std::string& source, const char* raw_noun)
      : in_(in), source_(source), raw_noun_(raw_noun) {
    peek_len_ = in_.read(peek_, 2);
    gzip_ = peek_len_ == 2 && peek_[0] == 0x1f && peek_[1] == 0x8b;
    if (!gzip_) return;
    inbuf_.resize(1 << 16);
    std::memcpy(inbuf_.data(), peek_, 2);
    zs_.next_in = inbuf_.data();
    zs_.avail_in = 2;
    consumed_before_buf_ = 0;
    peek_len_ = 0;
    // 16 + MAX_WBITS: a gzip wrapper (header, CRC-32 and length trailer checked by zlib).
    const int rc = inflateInit2(&zs_, 16 + MAX_WBITS);
    if (rc != Z_OK) fail("{}: cannot start gzip decompression (zlib error {})", source_, rc);
    zinit_ = true;
  }
  ~IdxStream() {
    if (zinit_) inflateEnd(&zs_);
  }
  IdxStream(const IdxStream&) = delete;
  IdxStream& operator=(const IdxStream&) = delete;

  bool gzip() const { return gzip_; }
  const char* noun() const { return gzip_ ? "decompressed data" : raw_noun_; }
  // Upper bound of the bytes this stream can deliver in all.
  int64_t max_decoded() const {
    if (!gzip_) return in_.size();
    return checked_add(checked_mul(in_.size(), kMaxDeflateRatio).value_or(INT64_MAX), kInflateSlack)
        .value_or(INT64_MAX);
  }
  // The gzip trailer's ISIZE (decoded size mod 2^32 of the last member), a hint only.
  std::optional<uint32_t> isize_hint() { return gzip_ ? in_.last_le32() : std::nullopt; }

  // Reads up to n decoded bytes; returns fewer only at the end of the data. A corrupt, cut-off
  // or trailing-garbage gzip stream throws naming the source.
  std::size_t read(unsigned char* dst, std::size_t n) {
    std::size_t total = 0;
    if (!gzip_) {
      while (peek_pos_ < peek_len_ && total < n) dst[total++] = peek_[peek_pos_++];
      if (total < n) total += in_.read(dst + total, n - total);
      decoded_ += total;
      return total;
    }
    while (total < n && !finished_) {
      if (zs_.avail_in == 0) refill();
      zs_.next_out = dst + total;
      const auto want = static_cast<uInt>(std::min<std::size_t>(n - total, 1u << 30));
      zs_.avail_out = want;
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      const std::size_t produced = want - zs_.avail_out;
      total += produced;
      decoded_ += produced;
      if (rc == Z_STREAM_END) {
        next_member();
      } else if (rc == Z_OK || rc == Z_BUF_ERROR) {
        // The input ended inside the deflate stream or its trailer.
        if (produced == 0 && zs_.avail_in == 0 && in_eof_) {
          fail(
              "{}: truncated gzip stream: it ends before the gzip end-of-stream marker (after {} "
              "decompressed bytes); the download was probably cut short",
              source_, decoded_);
        }
        // Z_BUF_ERROR with input and output space left: zlib made no progress (never expected).
        if (rc == Z_BUF_ERROR && zs_.avail_in > 0) {
          fail("{}: corrupt gzip data (zlib made no progress) after {} decompressed bytes", source_,
               decoded_);
        }
      } else {
        fail("{}: corrupt gzip data (zlib: {}) after {} decompressed bytes", source_,
             zs_.msg != nullptr ? zs_.msg : zlib_error_name(rc), decoded_);
      }
    }
    return total;
  }

 private:
  static const char* zlib_error_name(int rc) {
    switch (rc) {
      case Z_NEED_DICT:
        return "a preset dictionary is required";
      case Z_MEM_ERROR:
        return "out of memory";
      case Z_STREAM_ERROR:
        return "inconsistent stream state";
      default:
        return "invalid data";
    }
  }

  void refill() {
    if (in_eof_) return;
    consumed_before_buf_ += static_cast<int64_t>(zs_.next_in - inbuf_.data());
    const std::size_t got = in_.read(inbuf_.data(), inbuf_.size());
    if (got < inbuf_.size()) in_eof_ = true;
    zs_.next_in = inbuf_.data();
    zs_.avail_in = static_cast<uInt>(got);
  }

  // After a member's trailer: the end of the input, another member, or garbage.
  void next_member() {
    if (zs_.avail_in == 0) refill();
    if (zs_.avail_in == 0) {
      finished_ = true;
      return;
    }
    if (zs_.next_in[0] != 0x1f) {
      const int64_t offset = consumed_before_buf_ + (zs_.next_in - inbuf_.data());
      fail(
          "{}: {} bytes of trailing data after the gzip stream ending at byte {} (expected the "
          "end of the file or another gzip member)",
          source_, in_.size() - offset, offset);
    }
    // Another member (a file made by `cat a.gz b.gz`): its header is checked by inflate.
    inflateReset(&zs_);
  }

  ByteInput& in_;
  const std::string& source_;
  const char* raw_noun_;
  unsigned char peek_[2] = {};
  std::size_t peek_len_ = 0, peek_pos_ = 0;
  bool gzip_ = false;
  z_stream zs_{};
  bool zinit_ = false, in_eof_ = false, finished_ = false;
  std::vector<unsigned char> inbuf_;
  int64_t consumed_before_buf_ = 0;  // input bytes before inbuf_[0]
  int64_t decoded_ = 0;
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
  std::error_code ec;
  if (fs::is_directory(dir / names[0], ec)) {
    fail("{}: is a folder; expected the IDX file of that name", (dir / names[0]).string());
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

namespace {

// What an IDX header says: out's type and dimensions, the header's and the payload's bytes,
// and the claim as the messages quote it ("60000x28x28 ubyte").
struct IdxHeader {
  int64_t header_bytes = 0, payload_bytes = 0;
  std::string claim;
};

IdxHeader read_idx_header(IdxStream& src, const std::string& file, IdxArray& out) {
  const char* kind = src.noun();
  unsigned char magic[4];
  const std::size_t got_magic = src.read(magic, 4);
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
  IdxHeader h;
  h.header_bytes = 4 + 4 * static_cast<int64_t>(ndims);
  unsigned char dim_bytes[4 * kIdxMaxDims];
  const std::size_t got_dims = src.read(dim_bytes, 4 * static_cast<std::size_t>(ndims));
  if (got_dims < 4 * static_cast<std::size_t>(ndims)) {
    fail("{}: truncated: the {} ends inside the IDX header ({} of {} header bytes)", file, kind,
         4 + got_dims, h.header_bytes);
  }
  // Each dimension is an unsigned 32-bit number; the byte count is overflow-checked.
  std::optional<int64_t> payload = elem;
  for (int d = 0; d < ndims; ++d) {
    const uint32_t v = be32(dim_bytes + 4 * d);
    out.dims.push_back(v);
    if (v == 0) {
      fail("{}: IDX dimension {} of {} is 0 (expected at least 1)", file, d + 1, ndims);
    }
    if (payload) payload = checked_mul(*payload, v);
  }
  h.claim = fmt::format("{} {}", dims_str(out.dims), idx_type_name(out.type_code));
  if (!payload) {
    fail("{}: IDX header says {}, more than 2^63 bytes (corrupt header?)", file, h.claim);
  }
  h.payload_bytes = *payload;
  return h;
}

// The input's own size bounds the payload: exactly for raw data, by deflate's maximum ratio
// for gzip; then the memory budget. All before any allocation.
void check_payload_fits(const IdxStream& src, const ByteInput& in, const std::string& file,
                        const IdxHeader& h) {
  const int64_t expected = h.payload_bytes;
  if (!src.gzip()) {
    const int64_t holds = std::max<int64_t>(0, in.size() - h.header_bytes);
    if (expected > holds) {
      fail(
          "{}: truncated: header says {} ({} bytes) but the {} holds only {} bytes after the "
          "{}-byte header",
          file, h.claim, expected, src.noun(), holds, h.header_bytes);
    }
    if (expected < holds) {
      fail(
          "{}: too long: header says {} ({} bytes) but the {} holds {} more bytes after them "
          "(more data than the header says)",
          file, h.claim, expected, src.noun(), holds - expected);
    }
  } else if (expected > src.max_decoded() - h.header_bytes) {
    fail(
        "{}: truncated: header says {} ({} bytes) but the data holds at most {} bytes: {} bytes "
        "of gzip inflate to no more than {}x that (deflate's limit)",
        file, h.claim, expected, src.max_decoded() - h.header_bytes, in.size(), kMaxDeflateRatio);
  }
  check_memory(expected, fmt::format("{} (header says {})", file, h.claim));
}

// The payload into out.bytes. A gzip trailer whose ISIZE matches the claim (a well-formed
// single-member file) lets us allocate once; otherwise the buffer doubles as data arrives, never
// past the claim.
void read_idx_payload(IdxStream& src, const std::string& file, const IdxHeader& h,
                      IdxArray& out) {
  const int64_t expected = h.payload_bytes;
  const auto total_mod32 = static_cast<uint32_t>(static_cast<uint64_t>(expected + h.header_bytes));
  const bool size_known = !src.gzip() || src.isize_hint() == total_mod32;
  constexpr int64_t kFirstChunk = int64_t{1} << 20;
  int64_t have = 0;
  while (have < expected) {
    if (static_cast<int64_t>(out.bytes.size()) == have) {
      const int64_t next =
          size_known ? expected : std::min(expected, std::max(have * 2, kFirstChunk));
      out.bytes.reserve(static_cast<std::size_t>(next));  // exactly `next`: no growth slack
      out.bytes.resize(static_cast<std::size_t>(next));
    }
    const std::size_t want = out.bytes.size() - static_cast<std::size_t>(have);
    const std::size_t got = src.read(out.bytes.data() + have, want);
    have += static_cast<int64_t>(got);
    if (got < want) break;
  }
  if (have < expected) {
    fail(
        "{}: truncated: header says {} ({} bytes) but the {} holds only {} bytes after the "
        "{}-byte header",
        file, h.claim, expected, src.noun(), have, h.header_bytes);
  }
}

// Inflates a gzip input to the end: reports extra data and makes zlib verify the CRC-32 and
// length trailer. A bomb's surplus is not inflated past 1 MiB.
void check_gzip_end(IdxStream& src, const std::string& file, const IdxHeader& h) {
  constexpr int64_t kExtraLimit = int64_t{1} << 20;
  int64_t extra = 0;
  unsigned char sink[1 << 14];
  for (std::size_t n; extra <= kExtraLimit && (n = src.read(sink, sizeof sink)) > 0;) {
    extra += static_cast<int64_t>(n);
  }
  if (extra > 0) {
    fail(
        "{}: too long: header says {} ({} bytes) but the {} holds {}{} more bytes after them "
        "(more data than the header says)",
        file, h.claim, h.payload_bytes, src.noun(), extra > kExtraLimit ? "over " : "",
        std::min(extra, kExtraLimit));
  }
}

// Every IDX check, shared by read_idx and parse_idx. Sizes from the header are checked against
// what the input can hold and against the memory budget before anything is allocated; the
// payload buffer then grows only as decoded data arrives (unless the gzip trailer confirms the
// size), so a lying header costs no more memory than the data really holds.
IdxArray decode_idx(ByteInput& in, const std::string& file, const char* raw_noun) {
  IdxStream src(in, file, raw_noun);
  IdxArray out;
  const IdxHeader h = read_idx_header(src, file, out);
  check_payload_fits(src, in, file, h);
  read_idx_payload(src, file, h, out);
  if (src.gzip()) check_gzip_end(src, file, h);
  return out;
}

}  // namespace

IdxArray read_idx(const fs::path& path) {
  FileInput in(path);
  return decode_idx(in, path.string(), "file");
}

IdxArray parse_idx(std::string_view bytes, const std::string& source) {
  MemoryInput in(bytes);
  return decode_idx(in, source, "data");
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

  // The float32 copy is 4x the image bytes (plus 4 bytes per label): checked before allocating.
  const std::optional<int64_t> float_bytes = checked_add(
      checked_mul(static_cast<int64_t>(images.bytes.size()), 4).value_or(INT64_MAX), n * 4);
  check_memory(float_bytes.value_or(-1), fmt::format("{} (header says {} ubyte) as float32",
                                                     images_path.string(), dims_str(images.dims)));

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
  // Only the classes the n samples use (labels i % k) are stored: 1000 classes of a large sample
  // would be gigabytes for a handful of images. The others' random draws are still taken, so a
  // class's prototype does not depend on n.
  const int64_t used = std::min<int64_t>(num_classes, n);
  check_memory(checked_mul(used, checked_mul(per, 4).value_or(-1)).value_or(-1),
               fmt::format("synthetic data: {} class prototypes of {}x{}x{}", used, channels,
                           height, width));
  std::vector<float> proto(static_cast<std::size_t>(used * per));
  for (int k = 0; k < num_classes; ++k) {
    for (int c = 0; c < channels; ++c) {
      float* p = k < used ? proto.data() + k * per + c * plane : nullptr;
      if (p != nullptr) std::fill_n(p, plane, kBackground);
      for (int b = 0; b < kBlobs; ++b) {
        const double cy = rng.uniform(0, height), cx = rng.uniform(0, width);
        const double s = std::max(0.5, rng.uniform(0.08, 0.25) * std::max(height, width));
        const double amp = rng.uniform(0.4, 0.8);
        if (p == nullptr) continue;
        for (int y = 0; y < height; ++y) {
          for (int x = 0; x < width; ++x) {
            const double d2 = (y - cy) * (y - cy) + (x - cx) * (x - cx);
            p[y * width + x] += static_cast<float>(amp * std::exp(-d2 / (2 * s * s)));
          }
        }
      }
      if (p == nullptr) continue;
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
    : data_(data), batch_size_(batch_size), shuffle_(shuffle), seed_(seed) {
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

void check_same_sample_shape(const Dataset& train, const Dataset& test, const std::string& source) {
  if (train.size() == 0 || test.size() == 0) return;
  const auto sample = [](const Dataset& d) {
    const auto& dims = d.images.shape().dims();
    return Shape(std::vector<int64_t>(dims.begin() + 1, dims.end()));
  };
  const Shape a = sample(train), b = sample(test);
  if (a != b) {
    fail("{}: the test samples are {} ({}) but the training samples are {} ({}); both splits "
         "must have one shape",
         source, b.str(), test.name, a.str(), train.name);
  }
}

Dataset take_first(const Dataset& d, int64_t n) {
  if (n <= 0 || n >= d.size()) return d;
  Dataset out;
  out.name = fmt::format("{}[:{}]", d.name, n);
  out.num_classes = d.num_classes;
  Shape s = d.images.shape();
  s[0] = n;
  out.images = Tensor(s);
  std::memcpy(out.images.data(), d.images.data(),
              static_cast<std::size_t>(out.images.numel()) * sizeof(float));
  out.labels.assign(d.labels.begin(), d.labels.begin() + n);
  return out;
}

std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, int64_t epoch, bool shuffle_it) {
  std::vector<int64_t> order(static_cast<std::size_t>(std::max<int64_t>(n, 0)));
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_it) {
    // The golden-ratio step keeps the per-epoch seeds far apart.
    Rng rng(seed ^ (static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull));
    shuffle(order, rng);
  }
  return order;
}

void Batcher::start_epoch(int64_t epoch) {
  epoch_ = epoch;
  pos_ = 0;
  order_ = shuffled_order(data_.size(), seed_, epoch, shuffle_);
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
