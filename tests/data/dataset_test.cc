// Tests for data/: IDX reading (raw and gzip fixtures written at run time into a TempDir, every
// malformed case checked for the file name and the problem), MNIST loading, the real
// Fashion-MNIST when installed, synthetic data, splits and the Batcher.
#include "nnperf/data/dataset.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "nnperf/core/error.h"
#include "nnperf/data/image_data.h"
#include "test_util.h"

namespace nnperf {
namespace {

namespace fs = std::filesystem;
using test::TempDir;

std::string idx_header(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string h = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) h += static_cast<char>((d >> s) & 0xFF);
  }
  return h;
}

std::string random_bytes(std::size_t n, uint64_t seed) {
  Rng rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng.below(256));
  return s;
}

void write_raw(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << p;
}

void write_gz(const fs::path& p, const std::string& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr) << p;
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// Runs f, expects an nnperf::Error whose message contains every needle; returns the message.
template <typename F>
std::string expect_error(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& n : needles)
      EXPECT_NE(msg.find(n), std::string::npos) << "missing '" << n << "' in: " << msg;
    return msg;
  }
  ADD_FAILURE() << "no nnperf::Error thrown (expected one mentioning " << needles.at(0) << ")";
  return {};
}

TEST(ReadIdx, RawAndGzipOfEveryTypeRoundTrip) {
  TempDir dir("nnperf-idx");
  struct Case {
    uint8_t type;
    std::vector<uint32_t> dims;
    std::size_t elem;
  };
  const Case cases[] = {{0x08, {3, 7, 5}, 1},    {0x09, {11}, 1},   {0x0B, {2, 3}, 2},
                        {0x0C, {4, 1, 3, 2}, 4}, {0x0D, {6, 5}, 4}, {0x0E, {3, 3}, 8}};
  int k = 0;
  for (const auto& c : cases) {
    const std::size_t n =
        std::accumulate(c.dims.begin(), c.dims.end(), std::size_t{1}, std::multiplies<>()) * c.elem;
    const std::string payload = random_bytes(n, 100 + k);
    // Detection is by magic bytes: the gzip file has no .gz suffix, the raw one has it.
    const fs::path raw = dir / fmt::format("case{}.gz", k);
    const fs::path gz = dir / fmt::format("case{}.idx", k);
    write_raw(raw, idx_header(c.type, c.dims) + payload);
    write_gz(gz, idx_header(c.type, c.dims) + payload);
    for (const auto& p : {raw, gz}) {
      const IdxArray a = read_idx(p);
      EXPECT_EQ(a.type_code, c.type) << p;
      ASSERT_EQ(a.dims.size(), c.dims.size()) << p;
      for (std::size_t d = 0; d < c.dims.size(); ++d) EXPECT_EQ(a.dims[d], c.dims[d]) << p;
      ASSERT_EQ(a.bytes.size(), n) << p;
      EXPECT_EQ(std::string(a.bytes.begin(), a.bytes.end()), payload) << p;
    }
    ++k;
  }
}

TEST(ReadIdx, TruncatedPayloadNamesFileShapeAndSizes) {
  TempDir dir("nnperf-idx");
  const std::string bytes = idx_header(0x08, {3, 4, 5}) + random_bytes(50, 1);
  write_raw(dir / "short-images-idx3-ubyte", bytes);
  expect_error(
      [&] { read_idx(dir / "short-images-idx3-ubyte"); },
      {"short-images-idx3-ubyte", "truncated", "3x4x5 ubyte", "(60 bytes)", "only 50 bytes"});
  write_gz(dir / "short.gz", bytes);
  expect_error([&] { read_idx(dir / "short.gz"); },
               {"short.gz", "truncated", "3x4x5 ubyte", "only 50 bytes"});
}

TEST(ReadIdx, TruncatedHeaderAndEmptyFile) {
  TempDir dir("nnperf-idx");
  write_raw(dir / "empty", "");
  expect_error([&] { read_idx(dir / "empty"); }, {"empty", "truncated", "0 bytes"});
  write_raw(dir / "half-header", idx_header(0x08, {3, 4, 5}).substr(0, 9));
  expect_error([&] { read_idx(dir / "half-header"); },
               {"half-header", "truncated", "inside the IDX header", "9 of 16"});
}

TEST(ReadIdx, TooLongNamesTheExtraBytes) {
  TempDir dir("nnperf-idx");
  const std::string bytes = idx_header(0x0D, {2, 3}) + random_bytes(24 + 7, 2);
  write_raw(dir / "long.idx", bytes);
  expect_error([&] { read_idx(dir / "long.idx"); },
               {"long.idx", "too long", "2x3 float", "(24 bytes)", "7 more bytes"});
  write_gz(dir / "long.idx.gz", bytes);
  expect_error([&] { read_idx(dir / "long.idx.gz"); }, {"long.idx.gz", "too long", "7 more bytes"});
}

TEST(ReadIdx, WrongMagicTypeAndDimensions) {
  TempDir dir("nnperf-idx");
  write_raw(dir / "zip.idx", std::string("PK\x03\x04", 4) + random_bytes(40, 3));
  expect_error([&] { read_idx(dir / "zip.idx"); }, {"zip.idx", "not an IDX file", "50 4b 03 04"});
  write_raw(dir / "type.idx", idx_header(0x0A, {4}) + random_bytes(4, 4));
  expect_error([&] { read_idx(dir / "type.idx"); },
               {"type.idx", "unknown IDX element type 0x0A", "08 ubyte"});
  write_raw(dir / "dims5.idx", idx_header(0x08, {1, 1, 1, 1, 1}) + "x");
  expect_error([&] { read_idx(dir / "dims5.idx"); }, {"dims5.idx", "5 dimensions", "1 to 4"});
  write_raw(dir / "dims0.idx", idx_header(0x08, {}));
  expect_error([&] { read_idx(dir / "dims0.idx"); }, {"dims0.idx", "0 dimensions"});
  write_raw(dir / "zero.idx", idx_header(0x08, {3, 0, 2}));
  expect_error([&] { read_idx(dir / "zero.idx"); }, {"zero.idx", "dimension 2 of 3 is 0"});
  expect_error([&] { read_idx(dir / "missing.idx"); }, {"missing.idx", "cannot open"});
}

TEST(ReadIdx, CorruptAndCutGzip) {
  TempDir dir("nnperf-idx");
  // Random payload of moderate size so the deflate stream spans several blocks.
  const std::string bytes = idx_header(0x08, {40, 50}) + random_bytes(2000, 5);
  write_gz(dir / "good.gz", bytes);
  const std::string gz = test::read_text(dir / "good.gz");
  ASSERT_GT(gz.size(), 100u);
  ASSERT_EQ(read_idx(dir / "good.gz").bytes.size(), 2000u);

  std::string bad_crc = gz;
  bad_crc[gz.size() - 6] ^= 0x5A;  // inside the CRC-32 of the gzip trailer
  write_raw(dir / "crc.gz", bad_crc);
  expect_error([&] { read_idx(dir / "crc.gz"); },
               {"crc.gz", "corrupt gzip", "incorrect data check"});

  std::string bad_method = gz;
  bad_method[2] = 0x07;  // compression method: only 8 (deflate) exists
  write_raw(dir / "method.gz", bad_method);
  expect_error([&] { read_idx(dir / "method.gz"); }, {"method.gz", "corrupt gzip"});

  std::string flipped = gz;
  for (std::size_t i = 20; i < 40; ++i) flipped[i] = static_cast<char>(~flipped[i]);
  write_raw(dir / "flipped.gz", flipped);
  expect_error([&] { read_idx(dir / "flipped.gz"); }, {"flipped.gz", "gzip"});

  write_raw(dir / "cut.gz", gz.substr(0, gz.size() / 2));
  expect_error([&] { read_idx(dir / "cut.gz"); }, {"cut.gz", "truncated gzip stream"});
}

// ---- Hostile headers: sizes are checked against the input and the memory budget first ----

// gzip bytes in memory (what write_gz writes to a file).
std::string gzip_bytes(const std::string& raw) {
  z_stream zs{};
  EXPECT_EQ(
      deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY),
      Z_OK);
  std::string out(deflateBound(&zs, raw.size()), '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(raw.data()));
  zs.avail_in = static_cast<uInt>(raw.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

using test::ScopedEnv;

// Runs f in a forked child and returns how far the child's peak resident memory rose above this
// process's resident memory at the fork, in MiB; nullopt unless the child ended with an
// nnperf::Error. A 2 GiB vector, zero-filled by resize, would show as about +2048.
template <typename F>
std::optional<long> child_peak_rss_growth_mib(F&& f) {
  long resident_pages = 0;
  {
    std::ifstream statm("/proc/self/statm");
    long size_pages = 0;
    statm >> size_pages >> resident_pages;
  }
  const long resident_kib = resident_pages * (sysconf(_SC_PAGESIZE) / 1024);
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    int code = 3;
    try {
      f();
      code = 2;
    } catch (const Error&) {
      code = 0;
    } catch (...) {
      code = 1;
    }
    _exit(code);
  }
  int status = 0;
  rusage child{};
  if (pid < 0 || wait4(pid, &status, 0, &child) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    return std::nullopt;
  }
  return (child.ru_maxrss - resident_kib) / 1024;  // ru_maxrss is in KiB
}

TEST(ReadIdx, HugeClaimInTinyRawFileIsRefusedBeforeAllocating) {
  TempDir dir("nnperf-idx");
  // 2^31 labels claimed, 2040 bytes present (a 2 KB file).
  const std::string bytes = idx_header(0x08, {0x80000000u}) + random_bytes(2040, 11);
  write_raw(dir / "labels-idx1-ubyte", bytes);
  // The budget is 64 MiB, so a memory check alone would also refuse: the message shows that the
  // size check refused first, without asking for 2 GiB.
  ScopedEnv limit("NNPERF_MEMORY_LIMIT", "64M");
  const auto start = std::chrono::steady_clock::now();
  const std::string msg = expect_error(
      [&] { read_idx(dir / "labels-idx1-ubyte"); },
      {"labels-idx1-ubyte", "truncated", "header says 2147483648 ubyte (2147483648 bytes)",
       "only 2040 bytes after the 8-byte header"});
  EXPECT_EQ(msg.find("memory"), std::string::npos) << msg;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
  expect_error([&] { parse_idx(bytes, "in-memory labels"); },
               {"in-memory labels", "truncated", "2147483648 ubyte", "data holds only 2040 bytes"});
  // The same claim in 60000x28x28 images.
  write_raw(dir / "images", idx_header(0x08, {60000, 28, 28}) + random_bytes(2000, 12));
  expect_error([&] { read_idx(dir / "images"); },
               {"images", "truncated", "60000x28x28 ubyte (47040000 bytes)", "only 2000 bytes"});
  // Peak memory of the refusal, measured in a child process: nothing like the claimed 2 GiB.
  const auto growth = child_peak_rss_growth_mib([&] { read_idx(dir / "labels-idx1-ubyte"); });
  ASSERT_TRUE(growth.has_value()) << "the child did not end with an nnperf::Error";
  EXPECT_LT(*growth, 64) << "MiB";
}

TEST(ReadIdx, HugeClaimInTinyGzipFileIsRefusedBeforeAllocating) {
  TempDir dir("nnperf-idx");
  const std::string raw = idx_header(0x08, {0x80000000u}) + random_bytes(2000, 13);
  write_gz(dir / "labels.gz", raw);
  const auto gz_size = fs::file_size(dir / "labels.gz");
  ASSERT_LT(gz_size, 2100u);
  ScopedEnv limit("NNPERF_MEMORY_LIMIT", "64M");
  // At 1032:1 at most, ~2 KB of gzip cannot hold 2 GiB: refused from the compressed size.
  const std::string msg = expect_error(
      [&] { read_idx(dir / "labels.gz"); },
      {"labels.gz", "truncated", "header says 2147483648 ubyte (2147483648 bytes)",
       fmt::format("at most {} bytes", static_cast<int64_t>(gz_size) * 1032 + 4096 - 8),
       "deflate"});
  EXPECT_EQ(msg.find("memory"), std::string::npos) << msg;
  expect_error([&] { parse_idx(gzip_bytes(raw), "labels in memory"); },
               {"labels in memory", "truncated", "2147483648 ubyte", "1032x"});
  const auto growth = child_peak_rss_growth_mib([&] { read_idx(dir / "labels.gz"); });
  ASSERT_TRUE(growth.has_value()) << "the child did not end with an nnperf::Error";
  EXPECT_LT(*growth, 64) << "MiB";
}

TEST(ReadIdx, GzipBombLikeClaimsAreBoundedByTheDataThatArrives) {
  // 2 MB of zeros deflate to ~2 KB. A header claiming just under deflate's limit for that
  // compressed size passes the size check; the buffer then grows only with the inflated data and
  // the shortfall is reported.
  const std::string zeros(2000000, '\0');
  const std::string gz0 = gzip_bytes(idx_header(0x08, {2000000}) + zeros);
  // Margin: another claim changes the 4 header bytes and may move the compressed size by a byte.
  const int64_t claim = static_cast<int64_t>(gz0.size()) * 1032 + 4096 - 8 - 8192;
  ASSERT_GT(claim, 2000000);
  const std::string gz = gzip_bytes(idx_header(0x08, {static_cast<uint32_t>(claim)}) + zeros);
  ASSERT_LE(claim, static_cast<int64_t>(gz.size()) * 1032 + 4096 - 8);
  expect_error([&] { parse_idx(gz, "bomb.gz"); },
               {"bomb.gz", "truncated", fmt::format("header says {} ubyte", claim),
                "decompressed data holds only 2000000 bytes"});

  // The other way round: a small claim and a flood of extra data. Inflating stops 1 MiB past
  // the claim instead of expanding all 16 MiB.
  const std::string flood = gzip_bytes(idx_header(0x08, {1000}) + std::string(16 << 20, '\0'));
  ASSERT_LT(flood.size(), 200000u);
  const auto start = std::chrono::steady_clock::now();
  expect_error([&] { parse_idx(flood, "flood.gz"); },
               {"flood.gz", "too long", "1000 ubyte (1000 bytes)", "over 1048576 more bytes",
                "more data than the header says"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(ReadIdx, DimensionProductOverflowAndBadDimensionCounts) {
  TempDir dir("nnperf-idx");
  // 4 x (2^32 - 1) doubles: 2^131 bytes, far past int64.
  const std::string overflow =
      idx_header(0x0E, {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu});
  write_raw(dir / "overflow.idx", overflow + "abc");
  expect_error([&] { read_idx(dir / "overflow.idx"); },
               {"overflow.idx", "4294967295x4294967295x4294967295x4294967295 double",
                "more than 2^63 bytes"});
  expect_error([&] { parse_idx(gzip_bytes(overflow), "overflow.gz"); },
               {"overflow.gz", "more than 2^63 bytes"});
  // Just below overflow: (2^32-1) x (2^31-1) ubytes fit int64 but not a 13-byte input.
  expect_error(
      [&] {
        parse_idx(idx_header(0x08, {0xFFFFFFFFu, 0x7FFFFFFFu}) + "x", "square");
      },
      {"square", "truncated", "4294967295x2147483647 ubyte (9223372030412324865 bytes)",
       "only 1 bytes"});
  // 0 dimensions, more than 4, a zero dimension: raw and gzip alike.
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {idx_header(0x08, {}), "0 dimensions (expected 1 to 4)"},
           {idx_header(0x08, {1, 1, 1, 1, 1}) + "x", "5 dimensions (expected 1 to 4)"},
           {std::string{0, 0, 8, static_cast<char>(255)}, "255 dimensions (expected 1 to 4)"},
           {idx_header(0x08, {7, 0}), "dimension 2 of 2 is 0 (expected at least 1)"}}) {
    expect_error([&] { parse_idx(text, "raw.idx"); }, {"raw.idx", needle});
    expect_error([&] { parse_idx(gzip_bytes(text), "gz.idx"); }, {"gz.idx", needle});
  }
}

TEST(ReadIdx, ConsistentSizesBeyondTheMemoryBudgetAreRefused) {
  TempDir dir("nnperf-idx");
  const std::string bytes = idx_header(0x08, {100, 1000}) + random_bytes(100000, 14);
  write_raw(dir / "big.idx", bytes);
  write_gz(dir / "big.gz", bytes);
  {
    ScopedEnv limit("NNPERF_MEMORY_LIMIT", "64K");
    for (const char* name : {"big.idx", "big.gz"}) {
      expect_error([&] { read_idx(dir / name); },
                   {name, "(header says 100x1000 ubyte) needs 97.7 KiB of memory",
                    "only 64.0 KiB are available", "NNPERF_MEMORY_LIMIT"});
    }
  }
  EXPECT_EQ(read_idx(dir / "big.idx").bytes.size(), 100000u);
  EXPECT_EQ(read_idx(dir / "big.gz").bytes.size(), 100000u);
}

TEST(ParseIdx, MatchesReadIdxForRawAndGzip) {
  TempDir dir("nnperf-idx");
  const std::string raw = idx_header(0x0B, {3, 5, 2}) + random_bytes(60, 15);
  write_raw(dir / "a.idx", raw);
  write_gz(dir / "a.gz", raw);
  for (const std::string& content : {raw, gzip_bytes(raw), test::read_text(dir / "a.gz")}) {
    const IdxArray m = parse_idx(content, "memory");
    const IdxArray f = read_idx(dir / "a.idx");
    EXPECT_EQ(m.type_code, 0x0B);
    EXPECT_EQ(m.dims, f.dims);
    EXPECT_EQ(m.bytes, f.bytes);
  }
  // Concatenated gzip members (`cat a.gz b.gz`) are one stream, as gunzip reads them.
  const std::string two = gzip_bytes(raw.substr(0, 30)) + gzip_bytes(raw.substr(30));
  EXPECT_EQ(parse_idx(two, "two members").bytes, read_idx(dir / "a.idx").bytes);
  // Anything else after the gzip stream is refused, naming the byte count and the offset.
  const std::string gz = gzip_bytes(raw);
  expect_error([&] { parse_idx(gz + "junk!", "junk.gz"); },
               {"junk.gz", "5 bytes of trailing data after the gzip stream",
                fmt::format("ending at byte {}", gz.size())});
  // A truncated gzip member and a raw header cut short, from memory.
  expect_error([&] { parse_idx(gz.substr(0, gz.size() - 3), "cut.gz"); },
               {"cut.gz", "truncated gzip stream"});
  expect_error([&] { parse_idx(raw.substr(0, 10), "cut.idx"); },
               {"cut.idx", "inside the IDX header", "10 of 16"});
  expect_error([&] { parse_idx("", "nothing"); }, {"nothing", "truncated", "holds 0 bytes"});
  expect_error([&] { parse_idx(std::string("\x1f\x8b", 2), "magic only"); },
               {"magic only", "truncated gzip stream"});
  // Not a regular file: a folder, and a FIFO with no writer (refused at once, not waited on).
  expect_error([&] { read_idx(dir.path()); }, {dir.path().string(), "not a regular file"});
  ASSERT_EQ(mkfifo((dir / "fifo").c_str(), 0600), 0);
  expect_error([&] { read_idx(dir / "fifo"); }, {"fifo", "not a regular file"});
}

// Writes a small MNIST-style pair; returns the image bytes.
std::string write_mnist(const fs::path& dir, const std::string& prefix, uint32_t n, uint32_t h,
                        uint32_t w, const std::string& labels, bool gz_images) {
  const std::string pixels = random_bytes(static_cast<std::size_t>(n) * h * w, 7);
  const std::string images = idx_header(0x08, {n, h, w}) + pixels;
  if (gz_images) {
    write_gz(dir / (prefix + "-images-idx3-ubyte.gz"), images);
  } else {
    write_raw(dir / (prefix + "-images-idx3-ubyte"), images);
  }
  write_raw(dir / (prefix + "-labels-idx1-ubyte"),
            idx_header(0x08, {static_cast<uint32_t>(labels.size())}) + labels);
  return pixels;
}

TEST(LoadMnist, ScalesImagesAndKeepsLabels) {
  TempDir dir("nnperf-mnist");
  const std::string labels = {3, 0, 9, 1, 1, 7, 2};
  const std::string pixels = write_mnist(dir.path(), "train", 7, 5, 6, labels, true);
  const Dataset ds = load_mnist(dir.path(), "train");
  EXPECT_EQ(ds.size(), 7);
  EXPECT_EQ(ds.images.shape(), Shape({7, 1, 5, 6}));
  EXPECT_EQ(ds.num_classes, 10);
  EXPECT_EQ(ds.sample_numel(), 30);
  EXPECT_NE(ds.name.find("/train"), std::string::npos) << ds.name;
  for (std::size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(ds.labels[i], labels[i]);
  for (std::size_t i = 0; i < pixels.size(); ++i) {
    const double want = static_cast<unsigned char>(pixels[i]) / 255.0;
    ASSERT_NEAR(ds.images[static_cast<int64_t>(i)], want, 1e-7) << "pixel " << i;
  }
  // The same data raw instead of gzip gives the same tensor.
  TempDir raw("nnperf-mnist");
  write_mnist(raw.path(), "t10k", 7, 5, 6, labels, false);
  const Dataset ds2 = load_mnist(raw.path(), "t10k");
  ASSERT_EQ(ds2.images.numel(), ds.images.numel());
  for (int64_t i = 0; i < ds.images.numel(); ++i) ASSERT_EQ(ds.images[i], ds2.images[i]);
}

TEST(LoadMnist, RejectsMismatchedCountsRangesAndTypes) {
  {
    TempDir dir("nnperf-mnist");
    write_mnist(dir.path(), "train", 7, 4, 4, std::string(6, 1), false);
    expect_error([&] { load_mnist(dir.path(), "train"); },
                 {"train-images-idx3-ubyte", "7 images", "train-labels-idx1-ubyte", "6 labels"});
  }
  {
    TempDir dir("nnperf-mnist");
    write_mnist(dir.path(), "train", 5, 4, 4, std::string{1, 2, 3, 12, 4}, false);
    expect_error([&] { load_mnist(dir.path(), "train"); },
                 {"train-labels-idx1-ubyte", "label 12 at index 3", "0 to 9"});
  }
  {
    TempDir dir("nnperf-mnist");
    write_mnist(dir.path(), "train", 2, 4, 4, std::string{1, 2}, false);
    write_raw(dir / "train-images-idx3-ubyte",
              idx_header(0x0D, {2, 4, 4}) + random_bytes(2 * 16 * 4, 8));
    expect_error([&] { load_mnist(dir.path(), "train"); },
                 {"train-images-idx3-ubyte", "expected ubyte images", "float", "2x4x4"});
  }
  {
    TempDir dir("nnperf-mnist");
    write_mnist(dir.path(), "train", 2, 4, 4, std::string{1, 2}, false);
    write_raw(dir / "train-labels-idx1-ubyte", idx_header(0x08, {2, 1}) + std::string{1, 2});
    expect_error([&] { load_mnist(dir.path(), "train"); },
                 {"train-labels-idx1-ubyte", "expected ubyte labels", "2x1"});
  }
}

TEST(LoadMnist, FloatCopyIsCheckedAgainstTheMemoryBudget) {
  TempDir dir("nnperf-mnist");
  // 20000 image bytes pass a 64 KiB budget; their float32 copy (80000 bytes + 4 per label) does
  // not.
  write_mnist(dir.path(), "train", 50, 20, 20, std::string(50, 3), false);
  {
    ScopedEnv limit("NNPERF_MEMORY_LIMIT", "64K");
    expect_error([&] { load_mnist(dir.path(), "train"); },
                 {"train-images-idx3-ubyte (header says 50x20x20 ubyte) as float32",
                  "needs 78.3 KiB of memory", "only 64.0 KiB"});
  }
  EXPECT_EQ(load_mnist(dir.path(), "train").images.shape(), Shape({50, 1, 20, 20}));
}

TEST(LoadMnist, MissingFolderOrFileSaysWhereToGetData) {
  TempDir dir("nnperf-mnist");
  const fs::path nowhere = dir / "no-such-folder";
  expect_error([&] { load_mnist(nowhere, "train"); },
               {nowhere.string(), "--data DIR", "--synthetic", "dataset-fashion-mnist"});
  write_raw(dir / "train-images-idx3-ubyte", idx_header(0x08, {1, 2, 2}) + "abcd");
  expect_error([&] { load_mnist(dir.path(), "train"); },
               {(dir / "train-labels-idx1-ubyte").string(), "not found", "--data DIR",
                "dataset-fashion-mnist"});
}

TEST(LoadMnist, RealFashionMnist) {
  const fs::path dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(dir / "train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << dir << " is missing (Debian package dataset-fashion-mnist)";
  }
  const Dataset train = load_mnist(dir, "train");
  const Dataset test = load_mnist(dir, "t10k");
  EXPECT_EQ(train.images.shape(), Shape({60000, 1, 28, 28}));
  EXPECT_EQ(test.images.shape(), Shape({10000, 1, 28, 28}));
  ASSERT_EQ(train.size(), 60000);
  ASSERT_EQ(test.size(), 10000);
  // Known facts of the data set: both splits start with an ankle boot (9); the first training
  // image's bytes sum to 76247; classes are balanced; the mean pixel is 0.2860 (train) and
  // 0.2868 (test), the normalisation constants everyone uses.
  EXPECT_EQ(train.labels[0], 9);
  EXPECT_EQ(test.labels[0], 9);
  double first = 0;
  for (int64_t i = 0; i < 784; ++i) first += train.images[i];
  EXPECT_EQ(std::lround(first * 255.0), 76247);
  for (const Dataset* ds : {&train, &test}) {
    std::map<int, int64_t> counts;
    for (int32_t l : ds->labels) ++counts[l];
    ASSERT_EQ(counts.size(), 10u);
    for (const auto& [label, c] : counts) EXPECT_EQ(c, ds->size() / 10) << "label " << label;
    double sum = 0;
    float lo = 1, hi = 0;
    for (int64_t i = 0; i < ds->images.numel(); ++i) {
      sum += ds->images[i];
      lo = std::min(lo, ds->images[i]);
      hi = std::max(hi, ds->images[i]);
    }
    EXPECT_EQ(lo, 0.0f);
    EXPECT_EQ(hi, 1.0f);
    const double mean = sum / static_cast<double>(ds->images.numel());
    EXPECT_NEAR(mean, ds == &train ? 0.28604 : 0.28685, 5e-5) << ds->name;
  }
}

TEST(DefaultDataDir, EnvironmentOverrides) {
  const char* old = std::getenv("NNPERF_DATA");
  const std::string saved = old != nullptr ? old : "";
  unsetenv("NNPERF_DATA");
  EXPECT_EQ(default_data_dir(), fs::path("/usr/share/datasets/fashion-mnist"));
  setenv("NNPERF_DATA", "/tmp/my-data", 1);
  EXPECT_EQ(default_data_dir(), fs::path("/tmp/my-data"));
  if (old != nullptr) {
    setenv("NNPERF_DATA", saved.c_str(), 1);
  } else {
    unsetenv("NNPERF_DATA");
  }
}

// Nearest-centroid accuracy of `test` given centroids from `train` (float64 sums).
double nearest_centroid_accuracy(const Dataset& train, const Dataset& test) {
  const int64_t per = train.sample_numel();
  const int k = train.num_classes;
  std::vector<double> centroid(static_cast<std::size_t>(k * per), 0.0);
  std::vector<int64_t> count(static_cast<std::size_t>(k), 0);
  for (int64_t i = 0; i < train.size(); ++i) {
    const int l = train.labels[static_cast<std::size_t>(i)];
    ++count[static_cast<std::size_t>(l)];
    for (int64_t j = 0; j < per; ++j)
      centroid[static_cast<std::size_t>(l * per + j)] += train.images[i * per + j];
  }
  for (int l = 0; l < k; ++l) {
    for (int64_t j = 0; j < per; ++j)
      centroid[static_cast<std::size_t>(l * per + j)] /=
          std::max<int64_t>(1, count[static_cast<std::size_t>(l)]);
  }
  int64_t correct = 0;
  for (int64_t i = 0; i < test.size(); ++i) {
    int best = -1;
    double best_d = 1e300;
    for (int l = 0; l < k; ++l) {
      double d = 0;
      for (int64_t j = 0; j < per; ++j) {
        const double diff =
            test.images[i * per + j] - centroid[static_cast<std::size_t>(l * per + j)];
        d += diff * diff;
      }
      if (d < best_d) {
        best_d = d;
        best = l;
      }
    }
    correct += best == test.labels[static_cast<std::size_t>(i)];
  }
  return static_cast<double>(correct) / static_cast<double>(test.size());
}

TEST(Synthetic, DeterministicBoundedBalancedAndLearnable) {
  struct Case {
    int64_t n;
    int c, h, w, k;
  };
  for (const Case& cs : {Case{600, 1, 28, 28, 10}, Case{301, 3, 7, 5, 4}, Case{97, 2, 1, 13, 3}}) {
    const Dataset a = make_synthetic(cs.n, cs.c, cs.h, cs.w, cs.k, 42);
    const Dataset b = make_synthetic(cs.n, cs.c, cs.h, cs.w, cs.k, 42);
    const Dataset other = make_synthetic(cs.n, cs.c, cs.h, cs.w, cs.k, 43);
    ASSERT_EQ(a.images.shape(), Shape({cs.n, cs.c, cs.h, cs.w}));
    ASSERT_EQ(a.size(), cs.n);
    EXPECT_EQ(a.num_classes, cs.k);
    EXPECT_EQ(a.labels, b.labels);
    int64_t differ = 0;
    double sum = 0;
    for (int64_t i = 0; i < a.images.numel(); ++i) {
      ASSERT_EQ(a.images[i], b.images[i]);
      ASSERT_GE(a.images[i], 0.0f);
      ASSERT_LE(a.images[i], 1.0f);
      differ += a.images[i] != other.images[i];
      sum += a.images[i];
    }
    EXPECT_GT(differ, a.images.numel() / 2) << "another seed should give other data";
    const double mean = sum / static_cast<double>(a.images.numel());
    EXPECT_GT(mean, 0.05);
    EXPECT_LT(mean, 0.9);
    std::map<int, int64_t> counts;
    for (int32_t l : a.labels) ++counts[l];
    ASSERT_EQ(static_cast<int>(counts.size()), cs.k);
    for (const auto& [l, c] : counts) EXPECT_LE(std::abs(c - cs.n / cs.k), 1) << "class " << l;
    // Learnable: class centroids from 80% of the samples classify the other 20% well.
    const auto [fit, held] = split_dataset(a, cs.n / 5, 7);
    EXPECT_GT(nearest_centroid_accuracy(fit, held), 0.9) << cs.c << "x" << cs.h << "x" << cs.w;
  }
  expect_error([] { make_synthetic(0, 1, 2, 2, 10, 1); }, {"synthetic", "n >= 1"});
  expect_error([] { make_synthetic(10, 1, 2, 2, 1, 1); }, {"synthetic", "2 classes"});
}

// CNN synthetic data (load_image_data): --limit-train and --limit-test cut the counts made, so a
// limited run's images are all the memory check counts; the defaults stay 1024 and 256.
TEST(Synthetic, ImageDataMakesOnlyTheImagesTheLimitsKeep) {
  ImageDataOptions o;
  o.synthetic = true;
  o.input_size = 64;  // 48 KiB an image: 1280 images and their split copy need 120 MiB
  ScopedEnv limit("NNPERF_MEMORY_LIMIT", "8M");
  expect_error([&] { load_image_data(o); },
               {"--synthetic: 1280 images of 3x64x64", "--limit-train"});
  o.limit_train = 20;
  o.limit_test = 7;
  const ImageData d = load_image_data(o);
  EXPECT_EQ(d.train.size(), 20);
  EXPECT_EQ(d.test.size(), 7);
  EXPECT_EQ(d.train.images.shape(), Shape({20, 3, 64, 64}));
  o.input_size = 8;
  o.limit_train = 5000;  // more than the default count: the default count
  o.limit_test = 0;
  const ImageData all = load_image_data(o);
  EXPECT_EQ(all.train.size(), 1024);
  EXPECT_EQ(all.test.size(), 256);
}

// A data set whose sample i holds the value i in every element: batches reveal the indices.
Dataset indexed_dataset(int64_t n, int c, int h, int w) {
  Dataset ds;
  ds.name = "indexed";
  ds.images = Tensor(Shape{n, c, h, w});
  const int64_t per = static_cast<int64_t>(c) * h * w;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < per; ++j) ds.images[i * per + j] = static_cast<float>(i);
    ds.labels.push_back(static_cast<int32_t>(i % 10));
  }
  return ds;
}

TEST(Split, SizesCoverageAndDeterminism) {
  const Dataset all = indexed_dataset(53, 2, 3, 3);
  for (int64_t n2 : {int64_t{0}, int64_t{1}, int64_t{10}, int64_t{53}}) {
    const auto [a, b] = split_dataset(all, n2, 11);
    EXPECT_EQ(a.size(), 53 - n2);
    EXPECT_EQ(b.size(), n2);
    EXPECT_EQ(a.images.shape(), Shape({53 - n2, 2, 3, 3}));
    std::set<int64_t> seen;
    for (const Dataset* part : {&a, &b}) {
      for (int64_t i = 0; i < part->size(); ++i) {
        const auto idx = static_cast<int64_t>(part->images[i * 18]);
        EXPECT_EQ(part->images[i * 18 + 17], static_cast<float>(idx));
        EXPECT_EQ(part->labels[static_cast<std::size_t>(i)], idx % 10);
        EXPECT_TRUE(seen.insert(idx).second) << "sample " << idx << " twice";
      }
    }
    EXPECT_EQ(seen.size(), 53u);
  }
  const auto [a1, b1] = split_dataset(all, 10, 11);
  const auto [a2, b2] = split_dataset(all, 10, 11);
  const auto [a3, b3] = split_dataset(all, 10, 12);
  EXPECT_EQ(b1.labels, b2.labels);
  bool same = true;
  for (int64_t i = 0; i < 10; ++i) same = same && b1.images[i * 18] == b3.images[i * 18];
  EXPECT_FALSE(same) << "another seed should pick other samples";
  expect_error([&] { split_dataset(all, 54, 1); }, {"indexed", "54", "0 to 53"});
}

std::vector<int64_t> epoch_order(Batcher& b, int64_t per, bool flatten,
                                 std::vector<int64_t>* sizes) {
  Tensor x;
  std::vector<int32_t> labels;
  std::vector<int64_t> order;
  const float* storage = nullptr;
  while (b.next(x, labels, flatten)) {
    const int64_t mb = x.size(0);
    if (sizes != nullptr) sizes->push_back(mb);
    EXPECT_EQ(static_cast<int64_t>(labels.size()), mb);
    EXPECT_EQ(x.numel(), mb * per);
    // Storage is allocated by the first batch and reused (the last, smaller batch fits in it).
    if (storage == nullptr) storage = x.data();
    EXPECT_EQ(x.data(), storage);
    for (int64_t i = 0; i < mb; ++i) {
      const auto idx = static_cast<int64_t>(x[i * per]);
      EXPECT_EQ(x[i * per + per - 1], static_cast<float>(idx));
      EXPECT_EQ(labels[static_cast<std::size_t>(i)], idx % 10);
      order.push_back(idx);
    }
  }
  return order;
}

TEST(Batcher, EverySampleOncePerEpochPartialLastBatchDeterministicShuffle) {
  const Dataset ds = indexed_dataset(23, 1, 3, 2);
  Batcher b(ds, 5, true, 99);
  EXPECT_EQ(b.batches_per_epoch(), 5);
  std::vector<std::vector<int64_t>> orders;
  for (int e = 0; e < 3; ++e) {
    b.start_epoch();
    EXPECT_EQ(b.epoch(), e);
    std::vector<int64_t> sizes;
    orders.push_back(epoch_order(b, 6, false, &sizes));
    EXPECT_EQ(sizes, (std::vector<int64_t>{5, 5, 5, 5, 3}));
    std::vector<int64_t> sorted = orders.back();
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(23);
    std::iota(all.begin(), all.end(), 0);
    EXPECT_EQ(sorted, all) << "epoch " << e << " must cover every sample exactly once";
    Tensor x;
    std::vector<int32_t> l;
    EXPECT_FALSE(b.next(x, l, false)) << "epoch end";
  }
  EXPECT_NE(orders[0], orders[1]);
  EXPECT_NE(orders[1], orders[2]);
  // Same seed -> same sequence; a resumed run (start at epoch 2) sees epoch 2's order.
  Batcher again(ds, 5, true, 99);
  EXPECT_EQ(epoch_order(again, 6, false, nullptr), orders[0]);  // next() starts epoch 0 itself
  Batcher resumed(ds, 5, true, 99);
  resumed.start_epoch(2);
  EXPECT_EQ(epoch_order(resumed, 6, false, nullptr), orders[2]);
  Batcher other_seed(ds, 5, true, 100);
  EXPECT_NE(epoch_order(other_seed, 6, false, nullptr), orders[0]);
}

TEST(Batcher, ShapesFlattenAndNoShuffle) {
  const Dataset ds = indexed_dataset(7, 2, 3, 5);
  Batcher b(ds, 4, false, 1);
  Tensor x;
  std::vector<int32_t> labels;
  ASSERT_TRUE(b.next(x, labels, false));
  EXPECT_EQ(x.shape(), Shape({4, 2, 3, 5}));
  ASSERT_TRUE(b.next(x, labels, false));
  EXPECT_EQ(x.shape(), Shape({3, 2, 3, 5}));
  EXPECT_FALSE(b.next(x, labels, false));
  b.start_epoch();
  std::vector<int64_t> sizes;
  EXPECT_EQ(epoch_order(b, 30, true, &sizes), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6}));
  Batcher flat(ds, 7, false, 1);
  ASSERT_TRUE(flat.next(x, labels, true));
  EXPECT_EQ(x.shape(), Shape({7, 30}));
  Batcher big(ds, 100, true, 1);
  EXPECT_EQ(big.batches_per_epoch(), 1);
  ASSERT_TRUE(big.next(x, labels, false));
  EXPECT_EQ(x.shape(), Shape({7, 2, 3, 5}));
  expect_error([&] { Batcher bad(ds, 0, true, 1); }, {"indexed", "batch size", "got 0"});
  // A split that holds nothing out gives an empty part: no batches, no error.
  const auto [all, none] = split_dataset(ds, 0, 3);
  Batcher empty(none, 4, true, 1);
  EXPECT_EQ(empty.batches_per_epoch(), 0);
  EXPECT_FALSE(empty.next(x, labels, false));
  Dataset mismatched = ds;
  mismatched.labels.pop_back();
  expect_error([&] { Batcher bad(mismatched, 2, true, 1); }, {"indexed", "do not match 6 labels"});
}

}  // namespace
}  // namespace nnperf
